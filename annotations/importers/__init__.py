"""Importers turn a file or folder into an ImportBatch; annotations.services.corpus.dataset_import writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotations.importers import frank_xsum, jsonl
from annotations.importers.records import ImportBatch, ImportFormatError

FORMATS: dict[str, Callable[[Path], ImportBatch]] = {
    "jsonl": jsonl.parse,
    "frank-xsum": frank_xsum.parse,
}


def parse(format_name: str, path: Path) -> ImportBatch:
    if format_name not in FORMATS:
        raise ImportFormatError(
            file=str(path),
            line=None,
            field=None,
            message=f"unknown format {format_name!r} (known: {', '.join(sorted(FORMATS))})",
        )
    if not path.exists():
        raise ImportFormatError(file=str(path), line=None, field=None, message="no such file or folder")
    return FORMATS[format_name](path)
