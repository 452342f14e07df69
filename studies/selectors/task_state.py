"""The task state the server sends with every item: what the annotation frame's scripts and API clients get.

The rules the scripts apply before the server does (note length, which follow-up questions apply via each
unit's `requires`, span overlap, BUMP's labels) come from protocols.tasks here, so the page, the API and
the server's checks share one definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    word_spans,
)


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
