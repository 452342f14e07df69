from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import BrokerUnavailable, ModelLoadError
from common.progress import progress_bar
from corpus.selectors import dataset_by_name
from scoring.metrics import METRICS, SPECIAL_TOKEN_MODES, STRATEGIES
from scoring.services import (
    DOCUMENTS_PER_BATCH,
    explanations_compute_many,
    explanations_enqueue,
)


class Command(BaseCommand):
    help = (
        "Compute metric explanations for a dataset. Skips summaries already computed with the same "
        "configuration, so an interrupted run resumes and a finished run does nothing. With --enqueue the "
        "work goes to Celery workers instead (celery -A faithanno.celery worker)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument(
            "--metric", required=True, choices=[*METRICS, "all"], help="'all' runs every metric, cheap ones first"
        )
        parser.add_argument("--model", help="BERTScore encoder: Hugging Face id, local directory or packaged:minilm")
        parser.add_argument("--layer", type=int, help="BERTScore: encoder layer whose hidden states are compared")
        parser.add_argument("--strategy", choices=STRATEGIES, help="BERTScore: how source documents are embedded")
        parser.add_argument(
            "--special-tokens",
            choices=SPECIAL_TOKEN_MODES,
            help="BERTScore: 'package' = bert-score package behaviour, 'strip' = thesis behaviour",
        )
        parser.add_argument("--idf", action="store_true", help="BERTScore: weight tokens by idf over the documents")
        parser.add_argument("--k", type=int, help="top-k entailment: source sentences per summary sentence")
        parser.add_argument(
            "--documents-per-batch",
            type=int,
            default=DOCUMENTS_PER_BATCH,
            help="documents explained and committed together",
        )
        parser.add_argument(
            "--retry-failed", action="store_true", help="recompute summaries whose explanation raised an error"
        )
        parser.add_argument("--enqueue", action="store_true", help="put the work on the Celery queue and return")
        parser.add_argument("--documents-per-task", type=int, default=64, help="with --enqueue: documents per task")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = dataset_by_name(name=options["dataset"])
        metrics = list(METRICS) if options["metric"] == "all" else [options["metric"]]
        overrides = {
            "bertscore_model": options["model"],
            "layer": options["layer"],
            "strategy": options["strategy"],
            "special_tokens": options["special_tokens"],
            "idf": options["idf"] or None,
            "k": options["k"],
        }
        try:
            if options["enqueue"]:
                for enqueued in explanations_enqueue(
                    dataset=dataset,
                    metrics=metrics,
                    options=overrides,
                    documents_per_task=options["documents_per_task"],
                ):
                    for line in enqueued.lines():
                        self.stdout.write(line)
                return
            reports = explanations_compute_many(
                dataset=dataset,
                metrics=metrics,
                options=overrides,
                progress=progress_bar,
                documents_per_batch=options["documents_per_batch"],
                retry_failed=options["retry_failed"],
            )
        except (ModelLoadError, BrokerUnavailable, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        for report in reports:
            for line in report.lines():
                self.stdout.write(line)
        unavailable = [report for report in reports if report.unavailable]
        if unavailable:
            # The other metrics ran and are stored; the exit status still tells scripts something is missing.
            raise CommandError(" ".join(f"{report.name}: {report.unavailable}" for report in unavailable))
