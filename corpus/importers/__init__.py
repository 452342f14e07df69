"""Importers turn a file or folder into an ImportBatch; studies.services.imports.dataset_import writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corpus.importers import bump, frank, frank_xsum, jsonl, maynez, qags
from corpus.importers.records import ImportBatch, ImportFormatError

FORMATS: dict[str, Callable[[Path], ImportBatch]] = {
    "jsonl": jsonl.parse,
    "frank-xsum": frank_xsum.parse,
    "maynez": maynez.parse,
    "frank": frank.parse,
    "bump": bump.parse,
    "qags": qags.parse,
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
    try:
        return FORMATS[format_name](path)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            file=str(path), line=None, field=None, message=f"not a UTF-8 text file ({exc.reason}): wrong format?"
        ) from exc
    except IsADirectoryError:
        raise ImportFormatError(
            file=str(path), line=None, field=None, message=f"format {format_name!r} reads a file, not a folder"
        ) from None
