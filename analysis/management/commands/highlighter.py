from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import AnalysisError, dataset_highlighter
from corpus.selectors import dataset_by_name


class Command(BaseCommand):
    help = (
        "BERTScore as a highlighter (thesis 6.1): tokens below each threshold 0.80-0.99 flagged unfaithful, "
        "character-level precision, recall, F1 and accuracy against the majority of the human spans."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--json", action="store_true", help="print a JSON list")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            # The command line reads every study, like an admin.
            rows = dataset_highlighter(dataset=dataset_by_name(name=options["dataset"]), user=None)
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return

        def show(value: object) -> str:
            return "  n/a" if value is None else f"{value:.3f}"

        self.stdout.write("threshold precision recall  f1    accuracy")
        for row in rows:
            self.stdout.write(
                f"{row['threshold']:.2f}      {show(row['precision'])}     {show(row['recall'])}  "
                f"{show(row['f1'])} {show(row['accuracy'])}"
            )
