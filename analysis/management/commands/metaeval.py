from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import GOLDS, MAJORITY_GOLD, AnalysisError, dataset_meta_evaluation
from analysis.selectors.analysis_groups import DEFAULT_SPLIT_KEY, PAIR_BY, binary_evaluation
from common.validation import InputError, finite_number
from corpus.selectors import dataset_by_name
from stats.metaeval import BALANCED_ACCURACY, PROTOCOLS


class Command(BaseCommand):
    help = (
        "Meta-evaluation. On faithful/unfaithful pairs: consistency and ROC AUC (BUMP), ranking accuracy with "
        "ties counted wrong (thesis 6.3.1); overall or per error type. On a binary label per summary (--label-key, "
        "or --human with --human-threshold): ROC AUC, and balanced accuracy with the metric threshold tuned on the "
        "validation split and applied to the test split (AggreFact, SummaC), or by seeded cross-validation "
        "when no summary has the split key; overall and per group (--by system or meta.KEY)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--protocol", choices=PROTOCOLS, required=True)
        parser.add_argument("--metric", action="append", help="metric name (repeatable; default: every metric)")
        parser.add_argument(
            "--by", help="pairs: error_type; binary labels: system or meta.KEY (summary meta, else document meta)"
        )
        parser.add_argument("--label-key", help="meta key holding each summary's binary label (1/0, faithful/...)")
        parser.add_argument(
            "--human",
            help="human score giving the binary label with --human-threshold (study:<id>:<task>: a study's judgements)",
        )
        parser.add_argument(
            "--gold",
            choices=GOLDS,
            default=MAJORITY_GOLD,
            help="a study's judgements: each unit's majority label or its final label (adjudicated gold)",
        )
        parser.add_argument("--human-threshold", help="a summary is faithful when its human score is at least this")
        parser.add_argument(
            "--split-key", default=DEFAULT_SPLIT_KEY, help=f"meta key of the split (default {DEFAULT_SPLIT_KEY!r})"
        )
        parser.add_argument("--validation-split", default="val", help="split the threshold is tuned on (default val)")
        parser.add_argument("--test-split", default="test", help="split the threshold is applied to (default test)")
        parser.add_argument("--folds", type=int, default=5, help="cross-validation folds without a split (default 5)")
        parser.add_argument("--seed", type=int, default=0, help="folds and bootstrap seed (default 0)")
        parser.add_argument("--bootstrap", type=int, default=1000, help="resamples for the interval (0: none)")
        parser.add_argument("--json", action="store_true", help="print a JSON list")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise CommandError("--bootstrap must be 0 or more.")
        threshold = None
        if options["human_threshold"] is not None:
            try:
                threshold = finite_number(options["human_threshold"], field="--human-threshold")
            except InputError as exc:
                raise CommandError(exc.message) from exc
        if (options["human"] is None) != (threshold is None):
            raise CommandError("--human and --human-threshold go together.")
        binary = options["protocol"] == BALANCED_ACCURACY or options["label_key"] or options["human"]
        by = options["by"]
        try:
            dataset = dataset_by_name(name=options["dataset"])
            if binary:
                if options["label_key"] is None and options["human"] is None:
                    raise CommandError(
                        f"--protocol {options['protocol']} needs a binary label: --label-key KEY, or --human NAME "
                        "--human-threshold T."
                    )
                if by == PAIR_BY:
                    raise CommandError("--by error_type applies to pairs; with binary labels use system or meta.KEY.")
                rows = binary_evaluation(
                    dataset=dataset,
                    protocol=options["protocol"],
                    metrics=options["metric"],
                    label_key=options["label_key"],
                    human=options["human"],
                    human_threshold=threshold,
                    split_key=options["split_key"],
                    validation=options["validation_split"],
                    test=options["test_split"],
                    folds=options["folds"],
                    seed=options["seed"],
                    bootstrap=options["bootstrap"],
                    by=by,
                    gold=options["gold"],
                )
            else:
                if by not in (None, PAIR_BY):
                    raise CommandError("on pairs, --by takes error_type.")
                rows = dataset_meta_evaluation(
                    dataset=dataset,
                    protocol=options["protocol"],
                    metrics=options["metric"],
                    by_error_type=by == PAIR_BY,
                )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(rows))
            return
        for row in rows:
            value = "undefined" if row["value"] is None else f"{row['value']:.1f}%"
            line = f"{row['metric']:<16} {row['group']:<28} {value:>9} n={row.get('n', row.get('n_test'))}"
            if row["protocol"] == BALANCED_ACCURACY and row["value"] is not None:
                line += f" threshold={row['threshold']:.4g} ({row['tuning']})"
                if row["ci_low"] is not None:
                    line += f" 95% CI [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
            if row["value"] is None and row.get("reason"):
                line += f" ({row['reason']})"
            self.stdout.write(line)
