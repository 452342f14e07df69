from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bundles.format import BundleInvalid
from bundles.services.bundle_import import study_bundle_import


class Command(BaseCommand):
    help = (
        "Recreate a study from a bundle (docs/BUNDLES.md) with new ids, all or nothing. Annotators become new "
        "inactive accounts; a taken user name or dataset name gets a suffix (the mapping is printed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the bundle (.zip)")
        parser.add_argument("--researcher", help="user name of the researcher who runs the imported study")

    def handle(self, *args: Any, path: Path, researcher: str | None, **options: Any) -> None:
        user = None
        if researcher:
            user = get_user_model().objects.filter(username=researcher).first()
            if user is None:
                raise CommandError(f"No user named {researcher!r}.")

        def progress(member: str, rows: int) -> None:
            sys.stderr.write(f"{member}: {rows:,} rows imported\n")

        try:
            with path.open("rb") as handle:
                result = study_bundle_import(source=handle, user=user, progress=progress)
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc
        except BundleInvalid as exc:
            lines = "\n".join(f"  {problem}" for problem in exc.problems)
            raise CommandError(f"Import failed, nothing was written.\n{lines}") from exc
        self.stdout.write(
            f"Imported study {result.study.pk} ({result.study.name}) into dataset {result.dataset.pk} "
            f"({result.dataset.name})."
        )
        for old, new in result.usernames.items():
            self.stdout.write(f"  annotator {old} -> {new}" + ("" if old == new else " (the name was taken)"))
        for member in result.ignored_members:
            self.stdout.write(f"  left out {member}: an optional member this version does not read")
