"""The FaithAnno JSON-lines format (documented in docs/IMPORT_FORMATS.md).

Each line is one JSON object, either a document with its summaries:

    {"id": "38765314", "text": "...", "title": "...", "meta": {...},
     "summaries": [{"system": "BERTS2S", "text": "...", "is_reference": false,
                    "human_scores": {"Faithful": 0.33}, "metric_scores": {"R1": 0.2},
                    "labels": [{"annotator": "wid_0", "task": "factuality", "label": "no"},
                               {"annotator": "wid_0", "task": "hallucination_spans",
                                "spans": [{"start": 0, "end": 12, "label": "extrinsic"}]}]}]}

or one summary added to a document defined on another line or already in the dataset:

    {"document_id": "38765314", "system": "MyModel", "text": "..."}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from corpus.importers.records import (
    DocumentRecord,
    ImportBatch,
    LabelRecord,
    Origin,
    SpanRecord,
    SummaryRecord,
    finite_score,
    json_lines,
)
from protocols.tasks import TASKS

DOCUMENT_KEYS = {"id", "text", "title", "meta", "summaries"}
SUMMARY_KEYS = {"id", "system", "text", "is_reference", "human_scores", "metric_scores", "labels", "meta"}
LABEL_KEYS = {"annotator", "task", "label", "units", "spans", "comment"}


def parse(path: Path) -> ImportBatch:
    batch = ImportBatch(source_format="jsonl")
    for record in records(path):
        if isinstance(record, SummaryRecord):
            batch.loose_summaries.append(record)
        else:
            batch.documents.append(record)
    return batch


def records(path: Path) -> Iterator[DocumentRecord | SummaryRecord]:
    """The file's documents and loose summaries one line at a time (a large file is never held whole)."""
    seen_documents: dict[str, int] = {}
    for origin, data in json_lines(path):
        if not isinstance(data, dict):
            raise origin.error(f"expected a JSON object, got {type(data).__name__}", "(line)")
        if "document_id" in data:
            yield _summary(data, origin, "", loose=True)
            continue
        document = _document(data, origin)
        if document.external_id in seen_documents:
            raise origin.error(
                f"document id {document.external_id!r} already appears on line {seen_documents[document.external_id]}",
                "id",
            )
        seen_documents[document.external_id] = origin.line or 0
        yield document


def _unknown_keys(data: Mapping[str, Any], allowed: set[str], origin: Origin, prefix: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise origin.error(f"unknown field (allowed: {', '.join(sorted(allowed))})", prefix + unknown[0])


def _string(data: Mapping[str, Any], key: str, origin: Origin, prefix: str, *, required: bool = True) -> str:
    if key not in data:
        if required:
            raise origin.error("this field is required", prefix + key)
        return ""
    value = data[key]
    if isinstance(value, int) and not isinstance(value, bool) and key in {"id", "document_id"}:
        return str(value)
    if not isinstance(value, str):
        raise origin.error(f"expected a string, got {type(value).__name__}", prefix + key)
    return value


def _object(data: Mapping[str, Any], key: str, origin: Origin, prefix: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise origin.error(f"expected an object, got {type(value).__name__}", prefix + key)
    return value


def _document(data: dict[str, Any], origin: Origin) -> DocumentRecord:
    _unknown_keys(data, DOCUMENT_KEYS, origin, "")
    external_id = _string(data, "id", origin, "")
    if not external_id.strip():
        raise origin.error("must not be empty", "id")
    document = DocumentRecord(
        external_id=external_id,
        text=_string(data, "text", origin, ""),
        title=_string(data, "title", origin, "", required=False),
        meta=_object(data, "meta", origin, ""),
        origin=origin,
    )
    summaries = data.get("summaries", [])
    if not isinstance(summaries, list):
        raise origin.error(f"expected a list, got {type(summaries).__name__}", "summaries")
    seen: set[str] = set()
    for index, item in enumerate(summaries):
        prefix = f"summaries[{index}]."
        if not isinstance(item, dict):
            raise origin.error(f"expected an object, got {type(item).__name__}", prefix.rstrip("."))
        summary = _summary(item, origin, prefix, loose=False)
        if summary.external_id in seen:
            raise origin.error(f"summary id {summary.external_id!r} appears twice in this document", prefix + "id")
        seen.add(summary.external_id)
        document.summaries.append(summary)
    return document


def _summary(data: dict[str, Any], origin: Origin, prefix: str, *, loose: bool) -> SummaryRecord:
    _unknown_keys(data, SUMMARY_KEYS | ({"document_id"} if loose else set()), origin, prefix)
    system = _string(data, "system", origin, prefix)
    if not system.strip():
        raise origin.error("must not be empty", prefix + "system")
    text = _string(data, "text", origin, prefix)
    is_reference = data.get("is_reference", False)
    if not isinstance(is_reference, bool):
        raise origin.error("expected true or false", prefix + "is_reference")
    scores = {
        kind: {
            name: finite_score(value, origin, f"{prefix}{kind}.{name}")
            for name, value in _object(data, kind, origin, prefix).items()
        }
        for kind in ("human_scores", "metric_scores")
    }
    summary = SummaryRecord(
        external_id=_string(data, "id", origin, prefix, required=False) or system,
        system=system,
        text=text,
        is_reference=is_reference,
        meta=_object(data, "meta", origin, prefix),
        origin=Origin(origin.file, origin.line, prefix.rstrip(".")),
        document_id=_string(data, "document_id", origin, prefix) if loose else None,
        human_scores=scores["human_scores"],
        metric_scores=scores["metric_scores"],
    )
    labels = data.get("labels", [])
    if not isinstance(labels, list):
        raise origin.error(f"expected a list, got {type(labels).__name__}", prefix + "labels")
    for index, label in enumerate(labels):
        summary.labels.append(_label(label, origin, f"{prefix}labels[{index}].", text))
    return summary


def _label(data: Any, origin: Origin, prefix: str, summary_text: str) -> LabelRecord:
    if not isinstance(data, dict):
        raise origin.error(f"expected an object, got {type(data).__name__}", prefix.rstrip("."))
    _unknown_keys(data, LABEL_KEYS, origin, prefix)
    annotator = _string(data, "annotator", origin, prefix)
    if not annotator.strip():
        raise origin.error("must not be empty", prefix + "annotator")
    task_key = _string(data, "task", origin, prefix)
    task = TASKS.get(task_key)
    if task is None:
        raise origin.error(f"unknown task {task_key!r} (known: {', '.join(sorted(TASKS))})", prefix + "task")
    forms = [key for key in ("label", "units", "spans") if key in data]
    if len(forms) != 1:
        raise origin.error("give exactly one of 'label', 'units' or 'spans'", prefix.rstrip("."))
    record = LabelRecord(
        annotator=annotator,
        task=task_key,
        origin=Origin(origin.file, origin.line, prefix.rstrip(".")),
        comment=_string(data, "comment", origin, prefix, required=False),
    )

    def checked_label(value: Any, field_name: str) -> str:
        if value not in task.values:
            raise origin.error(
                f"{value!r} is not a label of task {task_key!r} (allowed: {', '.join(task.values)})",
                field_name,
            )
        return value

    if "label" in data:
        if task.spans:
            raise origin.error(f"task {task_key!r} takes 'spans'", prefix + "label")
        record.label = checked_label(data["label"], prefix + "label")
    elif "units" in data:
        if task.spans or not isinstance(data["units"], list):
            raise origin.error("expected a list of {index, label}", prefix + "units")
        seen: set[int] = set()
        for position, unit in enumerate(data["units"]):
            field_prefix = f"{prefix}units[{position}]."
            if not isinstance(unit, dict) or set(unit) != {"index", "label"}:
                raise origin.error("expected an object with 'index' and 'label'", field_prefix.rstrip("."))
            index = unit["index"]
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise origin.error("expected a non-negative integer", field_prefix + "index")
            if index in seen:
                raise origin.error(f"unit {index} is labelled twice", field_prefix + "index")
            seen.add(index)
            record.units.append((index, checked_label(unit["label"], field_prefix + "label")))
    else:
        if not task.spans or not isinstance(data["spans"], list):
            raise origin.error(f"task {task_key!r} does not take spans", prefix + "spans")
        record.spans = []
        for position, span in enumerate(data["spans"]):
            field_prefix = f"{prefix}spans[{position}]."
            if not isinstance(span, dict) or set(span) != {"start", "end", "label"}:
                raise origin.error("expected an object with 'start', 'end' and 'label'", field_prefix.rstrip("."))
            start, end = span["start"], span["end"]
            for key, value in (("start", start), ("end", end)):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise origin.error("expected an integer", field_prefix + key)
            if not 0 <= start < end <= len(summary_text):
                raise origin.error(
                    f"span [{start}, {end}) is not inside the summary (length {len(summary_text)}) or is empty",
                    field_prefix + "start",
                )
            record.spans.append(SpanRecord(start, end, checked_label(span["label"], field_prefix + "label")))
    return record
