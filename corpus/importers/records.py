"""What every importer produces: plain records checked field by field, each knowing where it came from."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.validation import InputError, json_check, printable


class ImportFormatError(ValueError):
    """Bad input. The message names the file, the line (or row) and the field."""

    def __init__(self, *, file: str, line: int | None, field: str | None, message: str) -> None:
        # Field names and messages quote the file's content: NUL or a lone surrogate there would break the
        # very answer that reports it.
        file, message = printable(file), printable(message)
        field = printable(field) if field is not None else None
        self.file = file
        self.line = line
        self.field = field
        where = file if line is None else f"{file}, line {line}"
        if field:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Origin:
    file: str
    line: int | None
    field: str = ""

    def error(self, message: str, field: str | None = None) -> ImportFormatError:
        """An error at this origin; `field` is relative to the origin's own field, if it has one."""
        full = ".".join(part for part in (self.field, field) if part)
        return ImportFormatError(file=self.file, line=self.line, field=full or None, message=message)

    def check(self, values: dict[str, Any]) -> None:
        """Every text in `values` (field -> value, nested JSON included) must be storable and every number
        finite: NUL and lone surrogates are refused here, whatever the format, before anything is written."""
        try:
            json_check(values)
        except InputError as exc:
            # The error names the field already; the message says what is wrong with it.
            raise self.error(exc.message.removeprefix(f"{exc.field} "), exc.field) from None


@dataclass(slots=True)
class SpanRecord:
    start: int
    end: int
    label: str


@dataclass(slots=True)
class LabelRecord:
    """One external annotator's complete judgement of one summary in one task.

    `label` judges the whole summary, `units` judges numbered units, `spans` marks character spans
    (an empty list means the annotator marked nothing).
    """

    annotator: str
    task: str
    origin: Origin
    label: str | None = None
    units: list[tuple[int, str]] = field(default_factory=list)
    spans: list[SpanRecord] | None = None
    comment: str = ""

    def __post_init__(self) -> None:
        self.origin.check(
            {"annotator": self.annotator, "task": self.task, "label": self.label, "comment": self.comment}
        )


@dataclass(slots=True)
class SummaryRecord:
    external_id: str
    system: str
    text: str
    origin: Origin
    is_reference: bool = False
    human_scores: dict[str, float] = field(default_factory=dict)
    metric_scores: dict[str, float] = field(default_factory=dict)
    labels: list[LabelRecord] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # Set when the summary is added to a document defined elsewhere (another line or the database).
    document_id: str | None = None
    # Sentence offsets given by the source (e.g. FRANK's lines); None: the configured spaCy pipeline splits.
    sentences: list[list[int]] | None = None
    # Offsets the configured spaCy pipeline gave ahead of the write (a streamed import splits before it
    # opens its transaction); used only where the source gave none.
    split_sentences: list[list[int]] | None = None

    def __post_init__(self) -> None:
        self.origin.check(
            {
                "system": self.system,
                "id": self.external_id,
                "text": self.text,
                "human_scores": self.human_scores,
                "metric_scores": self.metric_scores,
                "meta": self.meta,
                "document_id": self.document_id,
            }
        )


@dataclass(slots=True)
class DocumentRecord:
    external_id: str
    text: str
    origin: Origin
    title: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    summaries: list[SummaryRecord] = field(default_factory=list)
    # Sentence offsets given by the source (e.g. FRANK's article lines); None: spaCy splits the text.
    sentences: list[list[int]] | None = None
    # As SummaryRecord.split_sentences.
    split_sentences: list[list[int]] | None = None

    def __post_init__(self) -> None:
        self.origin.check({"id": self.external_id, "text": self.text, "title": self.title, "meta": self.meta})


@dataclass(slots=True)
class ImportBatch:
    """Everything one import run will write: documents with their summaries, plus summaries for existing documents."""

    source_format: str
    documents: list[DocumentRecord] = field(default_factory=list)
    loose_summaries: list[SummaryRecord] = field(default_factory=list)


def finite_score(value: Any, origin: Origin, field_name: str) -> float:
    """A score must be a finite number (bool is rejected: JSON true is not a score)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise origin.error(f"expected a number, got {type(value).__name__} {value!r}", field_name)
    number = float(value)
    if not math.isfinite(number):
        raise origin.error(f"expected a finite number, got {value!r}", field_name)
    return number


def json_lines(path: Path, expected: str = "") -> Iterator[tuple[Origin, Any]]:
    """The JSON value of every non-blank line with its origin; bad JSON names the line (and what was expected)."""
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            origin = Origin(str(path), number)
            try:
                yield origin, json.loads(raw)
            except json.JSONDecodeError as exc:
                hint = f"; expected {expected}" if expected else ""
                raise origin.error(f"not valid JSON ({exc.msg} at column {exc.colno}){hint}", "(line)") from exc


def joined_with_offsets(sentences: list[str]) -> tuple[str, list[list[int]]]:
    """Sentences joined by single spaces, with each sentence's offsets in the result (blank ones skipped)."""
    text, offsets = "", []
    for sentence in (sentence.strip() for sentence in sentences):
        if not sentence:
            continue
        if text:
            text += " "
        offsets.append([len(text), len(text) + len(sentence)])
        text += sentence
    return text, offsets
