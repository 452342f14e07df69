from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from crowd.models import CrowdWorker
from crowd.prolific import SOURCE, prolific_statuses_fetch
from crowd.selectors.crowd import crowd_study_of
from crowd.services.platform import crowd_platform_status_apply
from protocols.platform_status import PROLIFIC, PlatformFileError

TOKEN_VARIABLE = "PROLIFIC_API_TOKEN"


class Command(BaseCommand):
    help = (
        "Ask Prolific's API for the submissions of a public study's Prolific study and apply their statuses, as "
        "crowd_platform_status does with an export: workers who returned the study, timed out or were rejected "
        f"give their open items back. The token is read from the environment variable {TOKEN_VARIABLE}; the "
        "API's address is the setting PROLIFIC_API_URL. Run it every few minutes (cron) with --skip-unknown."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id (in FaithAnno)")
        parser.add_argument(
            "--prolific-study",
            default="",
            help="Prolific's study id (default: the STUDY_ID the study's workers arrived with, when it is one)",
        )
        parser.add_argument(
            "--skip-unknown",
            action="store_true",
            help="skip participants who never opened the study's link instead of refusing the whole answer",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        crowd = crowd_study_of(study_id=options["study"])
        if crowd is None or crowd.platform != PROLIFIC:
            raise CommandError(f"No public Prolific study has the id {options['study']}.")
        prolific_study = options["prolific_study"]
        if not prolific_study:
            arrived = set(
                CrowdWorker.objects.filter(crowd_study=crowd)
                .exclude(platform_study_id="")
                .values_list("platform_study_id", flat=True)
                .distinct()[:2]
            )
            if len(arrived) != 1:
                raise CommandError("Give --prolific-study: the study's workers arrived with no or several STUDY_IDs.")
            prolific_study = arrived.pop()
        try:
            statuses = prolific_statuses_fetch(
                base_url=settings.PROLIFIC_API_URL,
                token=os.environ.get(TOKEN_VARIABLE, "").strip(),
                prolific_study_id=prolific_study,
            )
            report = crowd_platform_status_apply(
                crowd=crowd,
                platform=PROLIFIC,
                statuses=statuses,
                source=SOURCE,
                skip_unknown=options["skip_unknown"],
                id_field="participant_id",
            )
        except PlatformFileError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{len(statuses)} submission(s) of Prolific study {prolific_study}. {report.summary}")
