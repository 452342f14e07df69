from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from bundles.services.bundle_export import study_bundle_export
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study as one bundle (docs/BUNDLES.md): its dataset slice, explanations, guidelines with every "
        "version, examples, items, assignments, judgements with timing, each annotator's standing, conditions, "
        "payment rules, final labels, crowd settings with workers and LLM judge runs (never an API key)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id")
        parser.add_argument("--output", type=Path, required=True, help="the archive to write (.zip)")

    def handle(self, *args: Any, study: int, output: Path, **options: Any) -> None:
        found = Study.objects.filter(pk=study).select_related("dataset", "created_by").first()
        if found is None:
            raise CommandError(f"No study with id {study}.")

        def progress(member: str, rows: int) -> None:
            sys.stderr.write(f"{member}: {rows:,} rows\n")

        partial = output.with_name(output.name + ".partial")
        try:
            with partial.open("wb") as handle:
                manifest = study_bundle_export(study=found, output=handle, progress=progress)
            partial.replace(output)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"Cannot write {output}: {exc}") from exc
        counts = manifest["counts"]
        self.stdout.write(
            f"Wrote study {found.pk} ({found.name}) to {output}: {counts['judgements.jsonl']:,} judgements, "
            f"{counts['assignments.jsonl']:,} assignments, {counts['summaries.jsonl']:,} summaries; "
            f"format version {manifest['format_version']}, bundle {manifest['bundle_id']}."
        )
