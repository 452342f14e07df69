from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Study, StudyTask
from annotations.selectors.studies import study_agreement


class Command(BaseCommand):
    help = "Fleiss' kappa of a study task over the units of its complete items."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True)
        parser.add_argument("--task", help="task key (default: the study's only task)")
        parser.add_argument(
            "--dont-know-as-incorrect",
            action="store_true",
            help="count 'Don't know' as 'Incorrect' (thesis footnote 4)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        tasks = StudyTask.objects.filter(study_id=options["study"]).order_by("task")
        if not Study.objects.filter(pk=options["study"]).exists():
            raise CommandError(f"No study with id {options['study']}.")
        if options["task"]:
            tasks = tasks.filter(task=options["task"])
        tasks = list(tasks)
        if len(tasks) != 1:
            choices = ", ".join(StudyTask.objects.filter(study_id=options["study"]).values_list("task", flat=True))
            raise CommandError(f"Choose one task with --task (this study has: {choices or 'none'}).")
        result = study_agreement(study_task=tasks[0], dont_know_as_incorrect=options["dont_know_as_incorrect"])
        data = {
            "study": options["study"],
            "task": tasks[0].task,
            "dont_know_as_incorrect": options["dont_know_as_incorrect"],
            **result.as_dict(),
        }
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        value = "undefined" if result.value is None else f"{result.value:.3f}"
        self.stdout.write(
            f"Fleiss' kappa ({tasks[0].task}): {value} over {result.n_items} complete units "
            f"({result.n_dropped} dropped, {result.raters_per_item} raters each)"
        )
        if result.reason:
            self.stdout.write(result.reason)
