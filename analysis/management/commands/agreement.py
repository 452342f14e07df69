from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import COEFFICIENTS, SPAN_UNITS, AnalysisError, agreement_compute, study_task_get
from corpus.models import Dataset
from stats.agreement import LEVELS
from studies.models import Study, StudyTask


class Command(BaseCommand):
    help = (
        "Inter-annotator agreement of a study task or of a dataset's imported judgements: Fleiss' kappa, "
        "Krippendorff's alpha or FEQA's percent agreement."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--study", type=int, help="study id")
        source.add_argument("--dataset", help="dataset name: its imported judgements (needs --task)")
        parser.add_argument("--task", help="task key (default: the study's only task)")
        parser.add_argument("--coefficient", choices=COEFFICIENTS, default="fleiss")
        parser.add_argument(
            "--level", choices=LEVELS, default="nominal", help="Krippendorff's level of measurement (default nominal)"
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
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _study_task(self, options: dict[str, Any]) -> StudyTask:
        try:
            if options["dataset"] is not None:
                if not options["task"]:
                    raise CommandError("--dataset needs --task (e.g. --task factuality).")
                dataset = Dataset.objects.filter(name=options["dataset"]).first()
                if dataset is None:
                    raise CommandError(f"No dataset named {options['dataset']!r}.")
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
        study_task = self._study_task(options)
        try:
            report = agreement_compute(
                study_task=study_task,
                coefficient=options["coefficient"],
                level=options["level"],
                dont_know_as_incorrect=options["dont_know_as_incorrect"],
                span_unit=options["span_unit"],
            )
        except AnalysisError as exc:
            raise CommandError(str(exc)) from exc
        data = report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        result = report.result
        name = {"fleiss": "Fleiss' kappa", "krippendorff": f"Krippendorff's alpha ({options['level']})"}.get(
            report.coefficient, "Percent agreement"
        )
        value = "undefined" if result.value is None else f"{result.value:.3f}"
        self.stdout.write(
            f"{name} ({study_task.task}): {value} over {result.n_items} units ({result.n_dropped} dropped)"
        )
        if result.reason:
            self.stdout.write(result.reason)
