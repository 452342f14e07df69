"""Importers turn a file or folder into an ImportBatch; ingest.services.imports.dataset_import writes it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from corpus.importers import bump, frank, frank_xsum, jsonl, maynez, qags
from corpus.importers.records import DocumentRecord, ImportBatch, ImportFormatError, SummaryRecord

FORMATS: dict[str, Callable[[Path], ImportBatch]] = {
    "jsonl": jsonl.parse,
    "frank-xsum": frank_xsum.parse,
    "maynez": maynez.parse,
    "frank": frank.parse,
    "bump": bump.parse,
    "qags": qags.parse,
}


def parse(format_name: str, path: Path) -> ImportBatch:
    _check_source(format_name, path)
    with _read_errors(format_name, path):
        return FORMATS[format_name](path)


def records(format_name: str, path: Path) -> Iterator[DocumentRecord | SummaryRecord]:
    """The file's documents and loose summaries in file order. JSON lines are read one line at a time;
    the published formats are small and fixed, and are parsed whole first."""
    _check_source(format_name, path)
    with _read_errors(format_name, path):
        if format_name == "jsonl":
            yield from jsonl.records(path)
            return
        batch = FORMATS[format_name](path)
        yield from batch.documents
        yield from batch.loose_summaries


def _check_source(format_name: str, path: Path) -> None:
    if format_name not in FORMATS:
        raise ImportFormatError(
            file=str(path),
            line=None,
            field=None,
            message=f"unknown format {format_name!r} (known: {', '.join(sorted(FORMATS))})",
        )
    if not path.exists():
        raise ImportFormatError(file=str(path), line=None, field=None, message="no such file or folder")


@contextmanager
def _read_errors(format_name: str, path: Path) -> Iterator[None]:
    """A file that is not what its format reads is an import error naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            file=str(path), line=None, field=None, message=f"not a UTF-8 text file ({exc.reason}): wrong format?"
        ) from exc
    except IsADirectoryError:
        raise ImportFormatError(
            file=str(path), line=None, field=None, message=f"format {format_name!r} reads a file, not a folder"
        ) from None
