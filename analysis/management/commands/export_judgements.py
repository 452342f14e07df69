from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.exports import (
    CHECKS_EXCLUDE,
    CHECKS_INCLUDE,
    EXPORT_FIELDS,
    export_column_types,
    study_judgement_rows,
)
from common.exports import BINARY_FORMATS, EXPORT_FORMATS, chunks_write, export_chunks
from corpus.selectors import dataset_by_name
from studies.models import Study
from studies.selectors.participation import ACCEPTED, ALL


class Command(BaseCommand):
    help = "Write every judgement of a study as CSV, JSON lines or Parquet (streamed)."

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--study", type=int)
        source.add_argument("--dataset", help="the dataset's imported judgements (crowd labels)")
        parser.add_argument("--format", choices=sorted(EXPORT_FORMATS), default="csv", dest="format_name")
        parser.add_argument("--output", type=Path, help="file to write (default: standard output)")
        parser.add_argument(
            "--all-judgements",
            action="store_true",
            help="include the work of excluded annotators (default: accepted work only; Parquet metadata says which)",
        )
        parser.add_argument(
            "--include-checks",
            action="store_true",
            help="include a public study's attention checks, marked by the phase column (default: left out)",
        )

    def handle(
        self, *args: Any, study: int | None, dataset: str | None, format_name: str, output: Path | None, **options: Any
    ) -> None:
        if format_name in BINARY_FORMATS and output is None:
            raise CommandError(f"A {format_name} export is binary: give --output.")
        studies = Study.objects.select_related("dataset")
        if dataset is not None:
            imported = studies.filter(dataset=dataset_by_name(name=dataset), kind=Study.Kind.IMPORTED).first()
            if imported is None:
                raise CommandError(f"No imported judgements in a dataset named {dataset!r}.")
            study_obj = imported
        elif study is not None:
            try:
                study_obj = studies.get(pk=study)
            except Study.DoesNotExist:
                raise CommandError(f"No study with id {study}.") from None
        judgements = ALL if options["all_judgements"] else ACCEPTED
        checks = CHECKS_INCLUDE if options["include_checks"] else CHECKS_EXCLUDE
        rows = study_judgement_rows(study=study_obj, judgements=judgements, checks=checks)
        metadata = {"judgements": judgements, "checks": checks}
        chunks = export_chunks(rows, EXPORT_FIELDS, format_name, export_column_types(EXPORT_FIELDS), metadata=metadata)
        chunks_write(chunks, output=output, stdout=self.stdout)
