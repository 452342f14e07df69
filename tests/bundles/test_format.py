"""The bundle format without a database: what the writer writes, the reader reads back, checked."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from bundles.format import FORMAT_VERSION, MEMBERS, BundleInvalid, BundleWriter, app_code_version, bundle_read

WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CHOICES = {
    "study_kind": ["study"],
    "task": ["factuality"],
    "assignment_status": ["submitted"],
    "skip_reason": ["other"],
    "platform": ["internal"],
    "review": ["pending"],
}


def minimal(**changes: list[dict[str, Any]]) -> bytes:
    """A one-summary, one-judgement bundle of format version 1 (so older bundles stay readable); `changes`
    replace whole JSONL members."""
    jsonl: dict[str, list[dict[str, Any]]] = {
        "documents.jsonl": [{"id": 1, "external_id": "d", "title": "", "text": "A cat.", "sentences": [], "meta": {}}],
        "summaries.jsonl": [
            {
                "id": 5,
                "document": 1,
                "external_id": "s",
                "system": "m",
                "text": "A cat.",
                "sentences": [[0, 6]],
                "is_reference": False,
                "meta": {},
            }
        ],
        "human_scores.jsonl": [{"summary": 5, "name": "Faithful", "value": 0.5, "source": ""}],
        "metric_scores.jsonl": [],
        "explanations.jsonl": [],
        "people.jsonl": [{"username": "ann"}],
        "tasks.jsonl": [
            {
                "id": 3,
                "task": "factuality",
                "guidelines": "Judge.",
                "guidelines_version": 1,
                "explanation_config_hash": "",
                "options": {},
            }
        ],
        "guidelines.jsonl": [{"task": 3, "version": 1, "text": "Judge.", "created_by": None, "created_at": WHEN}],
        "examples.jsonl": [],
        "items.jsonl": [{"id": 8, "task": 3, "summary": 5, "explanation": None, "position": 0, "params": {}}],
        "assignments.jsonl": [
            {
                "id": 9,
                "item": 8,
                "annotator": "ann",
                "status": "submitted",
                "position": 0,
                "comment": "",
                "time_spent": 4.5,
                "guidelines_version": 1,
                "draft": {},
                "draft_saved_at": None,
                "touched_at": WHEN,
                "skip_reason": "",
                "skip_note": "",
                "skipped_at": None,
                "submitted_at": WHEN,
                "created_at": WHEN,
                "updated_at": WHEN,
            }
        ],
        "judgements.jsonl": [
            {
                "assignment": 9,
                "unit_index": 0,
                "unit_text": "A cat.",
                "label": "yes",
                "start": None,
                "end": None,
                "note": "",
                "data": {},
                "created_at": WHEN,
                "updated_at": WHEN,
            }
        ],
        "participations.jsonl": [],
    }
    jsonl.update(changes)
    out = io.BytesIO()
    writer = BundleWriter(out, bundle_id="b-1", created_at=WHEN, format_version=1)
    writer.json_member(
        "dataset.json",
        {"name": "d", "description": "", "source_format": "jsonl", "primary_human_score": "", "created_at": WHEN},
    )
    writer.json_member(
        "study.json",
        {
            "name": "S",
            "kind": "study",
            "description": "",
            "annotators_per_item": 1,
            "one_task_per_summary": False,
            "reclaim_after_hours": None,
            "skipped_items_reassigned": True,
            "selection": {},
            "created_by": None,
            "researchers": [],
            "annotators": ["ann"],
            "created_at": WHEN,
        },
    )
    for name, rows in jsonl.items():
        writer.jsonl_member(name, rows)
    manifest = writer.close()
    assert manifest["format_version"] == 1 < FORMAT_VERSION
    assert set(manifest["members"]) == {name for name, member in MEMBERS.items() if member.since == 1}
    return out.getvalue()


def read(data: bytes) -> Any:
    return bundle_read(io.BytesIO(data), max_uncompressed=10**7, choices=CHOICES)


def test_it_reads_back_what_it_wrote_with_times_parsed() -> None:
    contents = read(minimal())
    (assignment,) = contents.table("assignments.jsonl")
    assert assignment["submitted_at"] == WHEN and assignment["time_spent"] == 4.5
    assert contents.objects["study.json"]["annotators"] == ["ann"]
    assert contents.ignored == []
    # What version 2 added reads as "not there": no condition, no conditions, no crowd settings, no runs.
    assert assignment["condition"] is None and contents.objects["study.json"]["condition_design"] == "between"
    assert contents.table("conditions.jsonl") == contents.table("judge_runs.jsonl") == []


def test_it_names_every_broken_reference_with_its_line() -> None:
    judgements = [
        {**read(minimal()).rows["judgements.jsonl"][0][1], "assignment": 404, "unit_index": index} for index in range(3)
    ]
    with pytest.raises(BundleInvalid) as raised:
        read(minimal(**{"judgements.jsonl": judgements}))
    assert [(p.member, p.line, p.field) for p in raised.value.problems] == [
        ("judgements.jsonl", line, "assignment") for line in (1, 2, 3)
    ]


def test_it_refuses_a_choice_the_caller_does_not_allow() -> None:
    with pytest.raises(BundleInvalid) as raised:
        bundle_read(io.BytesIO(minimal()), max_uncompressed=10**7, choices={**CHOICES, "task": ["bertscore"]})
    assert str(raised.value) == "tasks.jsonl, line 1, task: task must be one of bertscore, got factuality"


def test_it_writes_no_nan_and_names_the_code_version() -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        minimal(**{"human_scores.jsonl": [{"summary": 5, "name": "F", "value": float("nan"), "source": ""}]})
    assert re.fullmatch(r"\d+\.\d+\.\d+(\+git\.[\w.-]+)?", app_code_version())
