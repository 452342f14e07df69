"""The task state the server sends with every item: what the annotation frame's scripts and API clients get.

The rules the scripts apply before the server does (note length, which follow-up questions apply via each
unit's `requires`, span overlap, BUMP's labels) come from protocols.tasks here, so the page, the API and
the server's checks share one definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocols.conditions import EVIDENCE_TASKS, HIDDEN, SHOWN, units_under_evidence
from protocols.tasks import (
    BUMP_ERROR_TYPES,
    BUMP_TYPE_HELP,
    BUMP_TYPE_NAMES,
    FREESTYLE,
    MAX_EDIT_CHARS,
    MAX_NOTE_CHARS,
    NOT_POSSIBLE,
    SPANS_MAY_OVERLAP,
    TaskDefinition,
    Unit,
    get_task,
    word_spans,
)
from studies.models import StudyCondition, StudyExample, StudyItem, StudyTask
from studies.selectors.assignments import item_units


def units_seen(
    *, item: StudyItem | StudyExample, condition: StudyCondition | None, seed_name: str = "item"
) -> list[Unit]:
    """The units of an item (or a researcher's example) as an annotator in `condition` sees them: the metric's
    evidence shown, hidden or shuffled (protocols.conditions), the shuffle seeded by the item and condition."""
    units = item_units(item, with_document=True)
    if condition is None or condition.evidence == SHOWN:
        return units
    document = item.summary.document
    return units_under_evidence(
        task_key=item.study_task.task,
        units=units,
        evidence=condition.evidence,
        seed=f"{seed_name} {item.pk} condition {condition.pk}",
        summary_text=item.summary.text,
        document_text=document.text,
        document_sentences=document.sentences,
    )


def item_state(*, item: StudyItem, condition: StudyCondition | None) -> dict[str, Any]:
    """The task state of an item as an annotator in `condition` (None: a study without conditions) sees it
    (units_seen), so a hidden condition's page and API payload carry none of the evidence. `metricEvidence`
    says whether the view has evidence to light; it is true for shuffled evidence too, which must look like
    the real thing."""
    task = get_task(item.study_task.task)
    state = task_state(task=task, item=item, units=units_seen(item=item, condition=condition))
    if task.key in EVIDENCE_TASKS:
        state["metricEvidence"] = condition is None or condition.evidence != HIDDEN
    return state


def shown_guidelines(*, study_task: StudyTask, condition: StudyCondition | None) -> str:
    """The guidelines an annotator in `condition` reads for this task: the condition's own for it, else the
    task's current ones. (Assignment.guidelines_version stays the task's version; the condition's text,
    which never changes, is found through Assignment.condition.)"""
    if condition is not None and condition.guidelines.get(study_task.task):
        return str(condition.guidelines[study_task.task])
    return study_task.guidelines


def task_state(*, task: TaskDefinition, item: Any, units: Sequence[Unit]) -> dict[str, Any]:
    """The task part of the page state: texts, units with their choices, task settings.

    The rules the scripts apply before the server does (note length, which follow-up questions apply via
    each unit's `requires`, span overlap, BUMP's labels) come from here, so they are the ones
    protocols.tasks enforces.
    """
    summary = item.summary
    document = summary.document
    state: dict[str, Any] = {
        "task": task.key,
        "view": task.view,
        "taskName": task.name,
        "unitName": task.unit_name,
        "noteRequired": task.note_required,
        "maxNoteChars": MAX_NOTE_CHARS,
        "summary": summary.text,
        "summarySentences": summary.sentences,
        "document": document.text,
        "documentSentences": document.sentences,
        "units": [task.unit_state(unit) for unit in units],
        "choices": [{"value": c.value, "label": c.label, "key": c.key} for c in task.choices],
        "params": dict(item.params),
    }
    if task.spans:
        state["words"] = word_spans(summary.text)
        state["spansMayOverlap"] = SPANS_MAY_OVERLAP
    if task.edit:
        state["maxEditChars"] = MAX_EDIT_CHARS
        state["notPossible"] = NOT_POSSIBLE
        state["freestyle"] = FREESTYLE
        state["errorTypes"] = [
            {"value": value, "label": BUMP_TYPE_NAMES[value].capitalize()} for value in BUMP_ERROR_TYPES
        ]
        requested = item.params.get("error_type")
        state["requestedHelp"] = (
            [BUMP_TYPE_HELP[part] for part in requested.split("_")] if requested in BUMP_TYPE_NAMES else []
        )
    return state
