from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import GOLDS, MAJORITY_GOLD, AnalysisError, dataset_correlations
from corpus.selectors import dataset_by_name
from stats.correlation import LEVELS, METHODS


class Command(BaseCommand):
    help = (
        "Correlation of metric scores (imported or computed) with a human score: Pearson, Spearman, Kendall "
        "with p-values and seeded bootstrap 95% confidence intervals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument(
            "--human",
            required=True,
            help="human score name, e.g. Faithful or Factuality, or study:<id>:<task> for a study's judgements",
        )
        parser.add_argument(
            "--gold",
            choices=GOLDS,
            default=MAJORITY_GOLD,
            help="a study's judgements: each unit's majority label or its final label (adjudicated gold)",
        )
        parser.add_argument(
            "--metric", action="append", help="metric name (repeatable; default: every metric of the dataset)"
        )
        parser.add_argument("--method", action="append", choices=METHODS, help="repeatable (default: all three)")
        parser.add_argument(
            "--level",
            choices=LEVELS,
            default="summary",
            help="summary: all summaries pooled; system: the mean scores of each system; document: per document, "
            'across its summaries, averaged over documents (SummEval\'s "summary-level")',
        )
        parser.add_argument("--partial-by", choices=["system"], help="partial correlation controlling for the system")
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no interval)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print a JSON list")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise CommandError("--bootstrap must be 0 or more.")
        try:
            rows = dataset_correlations(
                dataset=dataset_by_name(name=options["dataset"]),
                human=options["human"],
                metrics=options["metric"],
                methods=options["method"] or list(METHODS),
                level=options["level"],
                partial_by=options["partial_by"],
                bootstrap=options["bootstrap"],
                seed=options["seed"],
                gold=options["gold"],
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            if row["r"] is None:
                self.stdout.write(f"{row['metric']:<24} {row['method']:<9} undefined: {row['reason']}")
                continue
            p = "n/a" if row["p"] is None else f"{row['p']:.3g}"
            excluded = row.get("excluded")
            skipped = (
                f" documents; left out: {', '.join(f'{k} {v}' for k, v in excluded.items())}"
                if isinstance(excluded, dict) and excluded
                else ""
            )
            self.stdout.write(
                f"{row['metric']:<24} {row['method']:<9} r={row['r']:+.3f} p={p} n={row['n']}{skipped} "
                f"(missing {row['n_missing']}) 95% CI "
                + ("n/a" if row["ci_low"] is None else f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]")
                + (
                    f"; gold {row['gold']}, {row['n_left_out']} of {row['n_units']} units left out"
                    if row["gold"]
                    else ""
                )
            )
