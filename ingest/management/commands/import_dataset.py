from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from corpus.importers import FORMATS, ImportFormatError
from ingest.services.import_jobs import count_lines, dataset_import_file


class Command(BaseCommand):
    help = (
        "Import documents, summaries, scores and crowd labels into a dataset (all or nothing). JSON lines are "
        "streamed: a file of any size is imported in bounded memory."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="file or folder to import")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS), dest="format_name")
        parser.add_argument("--name", required=True, help="dataset name (created, or updated when it exists)")
        parser.add_argument(
            "--processes",
            type=int,
            default=None,
            help="processes splitting sentences (default FAITHANNO_IMPORT_PROCESSES, 1)",
        )

    def handle(
        self, *args: Any, path: Path, format_name: str, name: str, processes: int | None, **options: Any
    ) -> None:
        if processes is not None and processes < 1:
            raise CommandError("--processes must be at least 1.")
        total = count_lines(path) if format_name == "jsonl" and path.exists() else None
        with tqdm(total=total, desc="reading", unit="line", file=sys.stderr, dynamic_ncols=True) as bar:

            def on_lines(line: int) -> None:
                bar.update(line - bar.n)

            try:
                report = dataset_import_file(
                    name=name, format_name=format_name, path=path, on_lines=on_lines, n_process=processes
                )
            except ImportFormatError as exc:
                raise CommandError(f"Import failed, nothing was written. {exc}") from exc
        for line in report.lines():
            self.stdout.write(line)
