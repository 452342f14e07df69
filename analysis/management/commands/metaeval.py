from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands.correlate import dataset_named
from analysis.selectors.analysis import AnalysisError, dataset_meta_evaluation
from stats.metaeval import PROTOCOLS


class Command(BaseCommand):
    help = (
        "Meta-evaluation on faithful/unfaithful pairs: consistency and ROC AUC (BUMP), ranking accuracy with "
        "ties counted wrong (thesis 6.3.1); overall or per error type."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--protocol", choices=PROTOCOLS, required=True)
        parser.add_argument("--metric", action="append", help="metric name (repeatable; default: every metric)")
        parser.add_argument("--by", choices=["error_type"], help="add one row per error type")
        parser.add_argument("--json", action="store_true", help="print a JSON list")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            rows = dataset_meta_evaluation(
                dataset=dataset_named(options["dataset"]),
                protocol=options["protocol"],
                metrics=options["metric"],
                by_error_type=options["by"] == "error_type",
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            value = "undefined" if row["value"] is None else f"{row['value']:.1f}%"
            self.stdout.write(f"{row['metric']:<16} {row['group']:<28} {value:>9} n={row['n']}")
