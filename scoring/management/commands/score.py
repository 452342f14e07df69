from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Dataset
from faithanno.progress import progress_bar
from scoring.errors import ModelLoadError
from scoring.explainers.bertscore import SPECIAL_TOKEN_MODES, STRATEGIES
from scoring.services import METRICS, bertscore_config, explanations_compute


class Command(BaseCommand):
    help = (
        "Compute metric explanations for a dataset. Skips summaries already computed with the same "
        "configuration, so an interrupted run resumes and a finished run does nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--metric", required=True, choices=[*METRICS, "all"])
        parser.add_argument("--model", help="encoder: Hugging Face id, local directory or packaged:minilm")
        parser.add_argument("--layer", type=int, help="encoder layer whose hidden states are compared")
        parser.add_argument("--strategy", choices=STRATEGIES, help="how source documents are embedded")
        parser.add_argument(
            "--special-tokens",
            choices=SPECIAL_TOKEN_MODES,
            help="'package' = bert-score package behaviour, 'strip' = thesis behaviour",
        )
        parser.add_argument("--idf", action="store_true", help="weight tokens by idf over the dataset's documents")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            dataset = Dataset.objects.get(name=options["dataset"])
        except Dataset.DoesNotExist:
            raise CommandError(f"No dataset named {options['dataset']!r}.") from None
        try:
            config = bertscore_config(
                model=options["model"],
                layer=options["layer"],
                strategy=options["strategy"],
                special_tokens=options["special_tokens"],
                idf=options["idf"] or None,
            )
            report = explanations_compute(dataset=dataset, config=config, progress=progress_bar)
        except (ModelLoadError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(line)
