"""Streaming writers for exports: rows in, text chunks out, so memory stays flat for any size."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type of a command's stdout; web processes need not import the management code
    from django.core.management.base import OutputWrapper

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


def csv_lines(rows: Iterable[Sequence[Any]]) -> str:
    """Rows without a header as CSV lines ending in a bare newline (the layout of the platforms' bulk files:
    one id per line, or `id,amount`), every cell through csv_cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    return buffer.getvalue()


def csv_plain(value: str) -> bool:
    """Whether `value` is written into a CSV cell exactly as it is: csv_cell leaves it alone and the CSV
    writer needs no quotes for it (no comma, quote or line break). An id that is not cannot be written into a
    file whose reader expects the id itself (a payment file): neutralised, it would be another id."""
    return csv_cell(value) == value and not any(char in value for char in ',"\r\n')


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


# The column types of the exports (docs/EXPORTS.md). "json" columns hold JSON text in CSV and Parquet and
# the value itself in JSON lines.
COLUMN_TYPES = ("text", "integer", "number", "boolean", "json")
PARQUET_ROWS_PER_GROUP = 10_000


class _ByteChunks(io.RawIOBase):
    """A write-only file that keeps what is written until it is taken, so Parquet can be streamed."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        part = bytes(data)
        self._parts.append(part)
        self._written += len(part)
        return len(part)

    def tell(self) -> int:
        return self._written

    def take(self) -> bytes:
        taken, self._parts = b"".join(self._parts), []
        return taken


def parquet_chunks(
    rows: Iterable[dict[str, Any]],
    fields: Sequence[str],
    types: Mapping[str, str],
    rows_per_group: int = PARQUET_ROWS_PER_GROUP,
    metadata: Mapping[str, str] | None = None,
) -> Iterator[bytes]:
    """The rows as a Parquet file with a column of its type (`types`, see COLUMN_TYPES) per field, written
    one row group of `rows_per_group` rows at a time: memory holds one group, whatever the export's size.
    `metadata` goes into the file's key-value metadata (e.g. which judgements an export holds)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow_types = {
        "text": pa.string(),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
        "json": pa.string(),
    }
    schema = pa.schema(
        [(field, arrow_types[types[field]]) for field in fields], metadata=dict(metadata) if metadata else None
    )
    as_json = {field for field in fields if types[field] == "json"}

    def group(batch: list[dict[str, Any]]) -> Any:
        columns: dict[str, list[Any]] = {field: [] for field in fields}
        for row in batch:
            for field in fields:
                value = row.get(field)
                if field in as_json and value is not None:
                    value = json.dumps(value, ensure_ascii=False, allow_nan=False)
                columns[field].append(value)
        return pa.table(columns, schema=schema)

    sink = _ByteChunks()
    with pq.ParquetWriter(sink, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= rows_per_group:
                writer.write_table(group(batch))
                batch = []
                yield sink.take()
        if batch:
            writer.write_table(group(batch))
    yield sink.take()


EXPORT_FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson", "parquet": "application/vnd.apache.parquet"}
BINARY_FORMATS = frozenset({"parquet"})


def export_chunks(
    rows: Iterable[dict[str, Any]],
    fields: Sequence[str],
    format_name: str,
    types: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> Iterator[str] | Iterator[bytes]:
    """The rows as CSV (with `fields` as header), as JSON lines, or as Parquet (text chunks, or bytes for
    Parquet, whose columns take their types from `types` and whose key-value metadata is `metadata`)."""
    if format_name not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format_name!r} (known: {', '.join(EXPORT_FORMATS)})")
    if format_name == "parquet":
        if types is None:
            raise ValueError("a Parquet export needs the type of every column")
        return parquet_chunks(rows, fields, types, metadata=metadata)
    return csv_chunks(rows, fields) if format_name == "csv" else jsonl_chunks(rows)


def chunks_write(chunks: Iterable[str] | Iterable[bytes], *, output: Path | None, stdout: OutputWrapper) -> None:
    """Write streamed chunks to a file, or (text only) to the command's standard output when no file is given."""
    if output is None:
        for chunk in chunks:
            if isinstance(chunk, bytes):
                raise ValueError("a binary export (Parquet) needs a file: give --output")
            stdout.write(chunk, ending="")
        return
    with output.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk if isinstance(chunk, bytes) else chunk.encode("utf-8"))
