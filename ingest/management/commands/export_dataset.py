from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from common.exports import chunks_write, jsonl_chunks
from corpus.selectors import dataset_by_name
from ingest.selectors.dataset_records import dataset_jsonl_records


class Command(BaseCommand):
    help = "Write a dataset (documents, summaries, scores, imported labels) in the FaithAnno JSON-lines format."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--output", type=Path, help="file to write (default: standard output)")
        parser.add_argument("--documents", type=int, help="only the first N documents (by id)")
        parser.add_argument("--max-sentences", type=int, help="only documents with at most this many sentences")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = dataset_by_name(name=options["dataset"])
        records = dataset_jsonl_records(
            dataset=dataset, limit=options["documents"], max_sentences=options["max_sentences"]
        )
        chunks = jsonl_chunks(records)
        chunks_write(chunks, output=options["output"], stdout=self.stdout)
