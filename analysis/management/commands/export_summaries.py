from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.selectors.exports import export_column_types, summary_table_fields, summary_table_rows
from common.exports import BINARY_FORMATS, EXPORT_FORMATS, chunks_write, export_chunks
from corpus.selectors import dataset_by_name
from studies.models import Study
from studies.selectors.participation import ACCEPTED, ALL


class Command(BaseCommand):
    help = (
        "Write one row per summary with every metric score (imported and computed), every human score and "
        "every human-enhanced score, as CSV, JSON lines or Parquet (streamed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--dataset", help="every summary of the dataset")
        source.add_argument("--study", type=int, help="the summaries of one study, with its enhanced scores")
        parser.add_argument("--format", choices=sorted(EXPORT_FORMATS), default="csv", dest="format_name")
        parser.add_argument("--output", type=Path, help="file to write (default: standard output)")
        parser.add_argument(
            "--all-judgements",
            action="store_true",
            help="include the work of excluded annotators (default: accepted work only; Parquet metadata says which)",
        )

    def handle(self, *args: Any, format_name: str, output: Path | None, **options: Any) -> None:
        if format_name in BINARY_FORMATS and output is None:
            raise CommandError(f"A {format_name} export is binary: give --output.")
        study = None
        if options["study"] is not None:
            study = Study.objects.select_related("dataset").filter(pk=options["study"]).first()
            if study is None:
                raise CommandError(f"No study with id {options['study']}.")
            dataset = study.dataset
        else:
            dataset = dataset_by_name(name=options["dataset"])
        # The command line reads every study, like an admin.
        judgements = ALL if options["all_judgements"] else ACCEPTED
        rows = summary_table_rows(dataset=dataset, study=study, user=None, judgements=judgements)
        fields = summary_table_fields(dataset=dataset, study=study, user=None)
        chunks = export_chunks(
            rows, fields, format_name, export_column_types(fields), metadata={"judgements": judgements}
        )
        chunks_write(chunks, output=output, stdout=self.stdout)
