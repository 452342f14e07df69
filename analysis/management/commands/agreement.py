from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import SPAN_UNITS, AnalysisError, study_task_get
from analysis.selectors.analysis_groups import (
    AGREEMENT_COEFFICIENTS,
    REFERENCES,
    WEIGHTS,
    agreement_analysis,
    metric_rater_analysis,
    threshold_list,
)
from common.validation import InputError
from corpus.selectors import dataset_by_name
from stats.agreement import LEVELS
from stats.crowd_quality import MAJORITY
from studies.models import Study, StudyTask
from studies.selectors.participation import ACCEPTED, ALL, JUDGEMENT_SET_NAMES

NAMES = {
    "fleiss": "Fleiss' kappa",
    "krippendorff": "Krippendorff's alpha",
    "percent": "Percent agreement",
    "gwet": "Gwet's AC",
    "brennan_prediger": "Brennan-Prediger",
    "alpha_u": "Krippendorff's alpha_U",
}


def _value(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = (
        "Inter-annotator agreement of a study task or of a dataset's imported judgements: Fleiss' kappa, "
        "Krippendorff's alpha (every level), FEQA's percent agreement, Gwet's AC1/AC2, Brennan-Prediger, or "
        "alpha_U over the character spans of span tasks; overall with a bootstrap interval, or per group "
        "(--by system, --by meta.KEY); with metrics as raters (--metric-rater NAME --thresholds T1,T2)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--study", type=int, help="study id")
        source.add_argument("--dataset", help="dataset name: its imported judgements (needs --task)")
        parser.add_argument("--task", help="task key (default: the study's only task)")
        parser.add_argument("--coefficient", choices=AGREEMENT_COEFFICIENTS, default="fleiss")
        parser.add_argument(
            "--level", choices=LEVELS, default="nominal", help="Krippendorff's level of measurement (default nominal)"
        )
        parser.add_argument(
            "--weights", choices=WEIGHTS, default="identity", help="Gwet's AC2 / weighted Brennan-Prediger weights"
        )
        parser.add_argument(
            "--by", help="agreement within each group: 'system' or 'meta.KEY' (summary meta, else document meta)"
        )
        parser.add_argument("--typed", action="store_true", help="alpha_u: the span type (intrinsic/extrinsic) counts")
        parser.add_argument(
            "--bootstrap", type=int, default=0, help="resamples of items for a 95%% interval (default 0: none)"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--metric-rater",
            action="append",
            metavar="NAME",
            help="a metric as one more rater (repeatable); its scores binned into the task's labels by --thresholds",
        )
        parser.add_argument(
            "--thresholds",
            action="append",
            metavar="T1,T2",
            help="increasing cut points, one fewer than the task's labels (span tasks: BERTScore's similarity "
            "threshold), or 'tuned': the balanced-accuracy threshold against the human majority (two-label tasks; "
            "tuned on meta split 'val', else by seeded cross-validation); once for every metric or once per "
            "--metric-rater",
        )
        parser.add_argument(
            "--aggregation",
            choices=REFERENCES,
            default=MAJORITY,
            help="metric raters: the human reference label the metric is compared with and tuned against: the "
            "majority vote (default), a crowd model's label (docs/CROWD_CHECKS.md) or the study's final labels "
            "('final', adjudication)",
        )
        parser.add_argument(
            "--span-unit",
            choices=SPAN_UNITS,
            default="word",
            help="span tasks: agree on each summary word (hallucinated or not) or on each summary (any span)",
        )
        parser.add_argument(
            "--dont-know-as-incorrect",
            action="store_true",
            help="count 'Don't know' as 'Incorrect' (thesis footnote 4)",
        )
        parser.add_argument(
            "--all-judgements",
            action="store_true",
            help="include the work of excluded annotators (default: accepted work only); the output says which",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _study_task(self, options: dict[str, Any]) -> StudyTask:
        try:
            if options["dataset"] is not None:
                if not options["task"]:
                    raise CommandError("--dataset needs --task (e.g. --task factuality).")
                dataset = dataset_by_name(name=options["dataset"])
                return study_task_get(task=options["task"], dataset=dataset)
            study = Study.objects.filter(pk=options["study"]).first()
            if study is None:
                raise CommandError(f"No study with id {options['study']}.")
            if options["task"]:
                return study_task_get(task=options["task"], study=study)
            tasks = list(StudyTask.objects.filter(study=study).select_related("study__dataset").order_by("task"))
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if len(tasks) != 1:
            choices = ", ".join(task.task for task in tasks)
            raise CommandError(f"Choose one task with --task (this study has: {choices or 'none'}).")
        return tasks[0]

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise CommandError("--bootstrap must be 0 or more.")
        metrics = options["metric_rater"] or []
        if bool(metrics) != bool(options["thresholds"]):
            raise CommandError("--metric-rater and --thresholds go together.")
        try:
            thresholds = [threshold_list(text, field="--thresholds") for text in options["thresholds"] or []]
        except InputError as exc:
            raise CommandError(exc.message) from exc
        study_task = self._study_task(options)
        judgements = ALL if options["all_judgements"] else ACCEPTED
        try:
            data = agreement_analysis(
                study_task=study_task,
                coefficient=options["coefficient"],
                level=options["level"],
                weights=options["weights"],
                by=options["by"],
                typed=options["typed"],
                dont_know_as_incorrect=options["dont_know_as_incorrect"],
                span_unit=options["span_unit"],
                bootstrap=options["bootstrap"],
                seed=options["seed"],
                judgements=judgements,
            )
            if metrics:
                data["metric_raters"] = metric_rater_analysis(
                    study_task=study_task,
                    metrics=metrics,
                    thresholds=thresholds,
                    coefficient=options["coefficient"],
                    level=options["level"],
                    weights=options["weights"],
                    dont_know_as_incorrect=options["dont_know_as_incorrect"],
                    seed=options["seed"],
                    aggregation=options["aggregation"],
                    judgements=judgements,
                )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        self._print(study_task, data, options)
        self.stdout.write(f"Judgements: {JUDGEMENT_SET_NAMES[judgements]}.")

    def _print(self, study_task: StudyTask, data: dict[str, Any], options: dict[str, Any]) -> None:
        name = NAMES[options["coefficient"]]
        if options["coefficient"] == "krippendorff":
            name += f" ({options['level']})"
        if "groups" in data:
            self.stdout.write(f"{name} ({study_task.task}) by {data['by']}:")
            for group in data["groups"]:
                reason = f" ({group['reason']})" if group["value"] is None and group["reason"] else ""
                self.stdout.write(
                    f"  {group['group']:<24} {_value(group['value'])}{reason} over {group['n_items']} units "
                    f"({group['n_dropped']} dropped)"
                )
            self.stdout.write(
                f"Mean over {data['n_groups'] - data['n_undefined']} of {data['n_groups']} groups: "
                f"{_value(data['mean'])}"
            )
        else:
            self.stdout.write(
                f"{name} ({study_task.task}): {_value(data['value'])} over {data['n_items']} units "
                f"({data['n_dropped']} dropped)"
            )
            interval = data.get("interval")
            if interval and interval["ci_low"] is not None:
                self.stdout.write(f"95% CI [{interval['ci_low']:.3f}, {interval['ci_high']:.3f}]")
            if data["reason"]:
                self.stdout.write(data["reason"])
        for row in data.get("metric_raters", []):
            self.stdout.write(
                f"{row['metric']}: humans{_with_models(row)} {_value(row['humans']['value'])}, with the metric "
                f"{_value(row['with_metric']['value'])}, metric vs {row['aggregation']} "
                f"{_value(row['majority']['coefficient']['value'])} ({row['n_items']} items, "
                f"{row['n_missing']} without a score)"
            )


def _with_models(row: dict[str, Any]) -> str:
    """The model raters (LLM judges) that rate beside the humans, named."""
    return f" and model raters {', '.join(row['model_raters'])}" if row.get("model_raters") else ""
