from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.analysis import study_tallies_refresh
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Bring the stored agreement tallies of studies up to date (the study page's Fleiss' kappa and agreement "
        "with the others: every submission keeps them so, but the first view after a deployment, an import or an "
        "exclusion reads every label of a task). Every study unless --study is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, action="append", help="a study id (repeat for several)")

    def handle(self, *args: Any, **options: Any) -> None:
        studies = Study.objects.order_by("pk")
        if options["study"]:
            studies = studies.filter(pk__in=options["study"])
            missing = set(options["study"]) - set(studies.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"no study with id {', '.join(map(str, sorted(missing)))}")
        for study in studies:
            tasks = study_tallies_refresh(study=study)
            self.stdout.write(f"study {study.pk} ({study.name}): {tasks} label task(s) up to date")
