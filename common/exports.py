"""Streaming writers for exports: rows in, text chunks out, so memory stays flat for any size."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

# A spreadsheet runs a cell that begins with one of these as a formula (OWASP, "CSV Injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# Text that is a plain decimal number ("-0.5", "+1e-3"): a spreadsheet reads it as that number, not a formula.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell that a spreadsheet shows and never runs, as OWASP's CSV-injection guidance
    says: text beginning with =, +, -, @, a tab or a carriage return gets a leading single quote. Finite
    numbers, and text that is a plain number, are written unchanged; dicts and lists are written as JSON.

    Every CSV FaithAnno writes goes through here (csv_chunks), so comments, notes, names, usernames,
    imported texts and meta are all covered, whatever column they land in."""
    if value is None or isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    # Anything else is written as text, infinities too: "-inf" is no spreadsheet number but a formula.
    text = json.dumps(value) if isinstance(value, dict | list) else str(value)
    if text.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_chunks(rows: Iterable[dict[str, Any]], fields: Sequence[str], rows_per_chunk: int = 500) -> Iterator[str]:
    """The rows as CSV under a header of `fields`, every cell (the header's too) through csv_cell."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields), extrasaction="raise")
    writer.writerow({field: csv_cell(field) for field in fields})
    pending = 0
    for row in rows:
        writer.writerow({key: csv_cell(value) for key, value in row.items()})
        pending += 1
        if pending >= rows_per_chunk:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
            pending = 0
    yield buffer.getvalue()


def jsonl_chunks(rows: Iterable[dict[str, Any]], rows_per_chunk: int = 500) -> Iterator[str]:
    lines: list[str] = []
    for row in rows:
        # Strict JSON: a NaN would be written as the bare word NaN, which JSON readers refuse.
        lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
        if len(lines) >= rows_per_chunk:
            yield "\n".join(lines) + "\n"
            lines = []
    if lines:
        yield "\n".join(lines) + "\n"


EXPORT_FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


def export_chunks(rows: Iterable[dict[str, Any]], fields: Sequence[str], format_name: str) -> Iterator[str]:
    """The rows as CSV (with `fields` as header) or as JSON lines."""
    if format_name not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format_name!r} (known: {', '.join(EXPORT_FORMATS)})")
    return csv_chunks(rows, fields) if format_name == "csv" else jsonl_chunks(rows)


def chunks_write(chunks: Iterable[str], *, output: Path | None, stdout: TextIO) -> None:
    """Write streamed chunks to a file, or to the command's standard output when no file is given."""
    if output is None:
        for chunk in chunks:
            stdout.write(chunk, ending="")  # type: ignore[call-arg]  # Django's OutputWrapper
        return
    with output.open("w", encoding="utf-8", newline="") as handle:
        for chunk in chunks:
            handle.write(chunk)
