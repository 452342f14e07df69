from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.progress import progress_iter
from corpus.importers import FORMATS, ImportFormatError, parse
from studies.services.imports import dataset_import


class Command(BaseCommand):
    help = "Import documents, summaries, scores and crowd labels into a dataset (all or nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="file or folder to import")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS), dest="format_name")
        parser.add_argument("--name", required=True, help="dataset name (created, or updated when it exists)")

    def handle(self, *args: Any, path: Path, format_name: str, name: str, **options: Any) -> None:
        try:
            batch = parse(format_name, path)
            report = dataset_import(name=name, batch=batch, progress=progress_iter)
        except ImportFormatError as exc:
            raise CommandError(f"Import failed, nothing was written. {exc}") from exc
        for line in report.lines():
            self.stdout.write(line)
