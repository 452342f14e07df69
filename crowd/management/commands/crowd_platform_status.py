from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from crowd.selectors.crowd import crowd_study_of
from crowd.services.platform import PLATFORM_FILE_MAX_BYTES, crowd_platform_file_apply
from protocols.platform_status import PlatformFileError


class Command(BaseCommand):
    help = (
        "Apply a crowd platform's export to a public study: Prolific's submissions CSV or MTurk's batch results "
        "CSV. Workers the platform says returned the study, timed out or were rejected give their open items back "
        "and their session ends; every worker's platform status is recorded (docs/CROWD_CHECKS.md). A bad file "
        "changes nothing; applying the same file again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id")
        parser.add_argument("--file", required=True, help="the platform's export (CSV)")
        parser.add_argument(
            "--skip-unknown",
            action="store_true",
            help="skip ids of no worker of this study (participants who never opened the link) instead of refusing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        crowd = crowd_study_of(study_id=options["study"])
        if crowd is None:
            raise CommandError(f"No public study has the id {options['study']}.")
        path = Path(options["file"])
        try:
            with path.open("rb") as handle:
                data = handle.read(PLATFORM_FILE_MAX_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from None
        try:
            report = crowd_platform_file_apply(
                crowd=crowd, data=data, source=path.name, skip_unknown=options["skip_unknown"]
            )
        except PlatformFileError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.summary)
