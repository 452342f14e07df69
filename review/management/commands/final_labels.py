from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from review.services.adjudication import study_final_labels_compute
from stats.crowd_quality import MAJORITY, METHODS
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Compute a study's automatic final labels: unanimous, majority, a crowd model's label on a tie "
        "(--method), or unresolved; units an adjudicator decided keep their decision. Prints the units per "
        "task and status as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id")
        parser.add_argument(
            "--method", choices=METHODS, default=MAJORITY, help="the crowd model that breaks ties (majority: none)"
        )
        parser.add_argument("--seed", type=int, default=0, help="the crowd model's seed (MACE)")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        try:
            counts = study_final_labels_compute(study=study, method=options["method"], seed=options["seed"])
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(json.dumps(counts, indent=2))
