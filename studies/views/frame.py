"""The common annotation frame: what every task view gets (state for the script, examples for the modal).

Used by the annotator's item page and by the researcher's page for annotating an example item, so both
show exactly the same task component.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from common.validation import InputError, finite_number, json_check, json_parse, storable_text
from common.views import input_error_answer
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
from studies.models import StudyExample, StudyTask
from studies.selectors.assignments import item_units
from studies.services.studies import MAX_COMMENT_CHARS, MAX_REPORTED_SECONDS

MAX_BODY_BYTES = 512 * 1024


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


def _choice_label(task: TaskDefinition, unit: Unit | None, value: str) -> str:
    choices = task.choices_for(unit) if unit is not None else task.choices
    return next((c.label for c in choices if c.value == value), value)


def _marked_segments(text: str, spans: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    segments, position = [], 0
    for span in sorted(spans, key=lambda s: s["start"]):
        if span["start"] > position:
            segments.append({"text": text[position : span["start"]], "label": ""})
        segments.append({"text": text[span["start"] : span["end"]], "label": span["label"]})
        position = span["end"]
    segments.append({"text": text[position:], "label": ""})
    return segments


def example_cards(examples: Sequence[StudyExample]) -> list[dict[str, Any]]:
    """Examples as the modal shows them: the summary, every label with its note, the researcher's reason."""
    cards = []
    for example in examples:
        task = get_task(example.study_task.task)
        units = {unit.index: unit for unit in item_units(example, with_document=True)}
        card: dict[str, Any] = {
            "summary": example.summary.text,
            "title": str(example.summary.document),
            "explanation": example.explanation_text,
            "rows": [],
            "segments": [],
            "edit": None,
        }
        if task.spans:
            card["segments"] = _marked_segments(example.summary.text, example.judgements)
            card["rows"] = [
                {"what": f"“{j['unit_text']}”", "label": _choice_label(task, None, j["label"]), "note": j["note"]}
                for j in example.judgements
            ]
        elif task.edit:
            judgement = example.judgements[0]
            card["edit"] = {
                "label": _choice_label(task, None, judgement["label"]),
                "edited": judgement["data"].get("edited", ""),
                "changes": judgement["data"].get("diff", {}).get("changes", []),
                "note": judgement["note"],
            }
        else:
            for j in example.judgements:
                unit = units.get(j["unit_index"])
                prompt = unit.prompt if unit is not None else ""
                text = unit.text if unit is not None else j["unit_text"]
                aligned = unit.extra.get("aligned_text") if unit is not None else None
                what = f"“{text}” ↔ “{aligned}”" if aligned else f"“{text}”"
                card["rows"].append(
                    {"what": what, "prompt": prompt, "label": _choice_label(task, unit, j["label"]), "note": j["note"]}
                )
        cards.append(card)
    return cards


def frame_context(
    *,
    study_task: StudyTask,
    task: TaskDefinition,
    state: dict[str, Any],
    examples: Sequence[StudyExample],
    **extra: Any,
) -> dict[str, Any]:
    return {
        "task": task,
        "study_task": study_task,
        "state": state,
        "guidelines": study_task.guidelines,
        "guidelines_version": study_task.guidelines_version,
        "examples": example_cards(examples),
        "task_template": f"annotations/tasks/{task.view}.html",
        "task_script": f"js/tasks/{task.view}.js",
        **extra,
    }


def json_body(request: HttpRequest) -> dict[str, Any] | HttpResponse:
    """The request's JSON object, or the 400 answer that says what is wrong with it (naming the field that
    holds a non-finite number, NUL or a lone surrogate)."""
    if len(request.body) > MAX_BODY_BYTES:
        return JsonResponse({"errors": [f"request too large: at most {MAX_BODY_BYTES} bytes"]}, status=400)
    try:
        body = json_parse(request.body or b"{}")
    except InputError as exc:
        return input_error_answer(request, exc)
    if not isinstance(body, dict):
        return JsonResponse({"errors": ["malformed request: send a JSON object"]}, status=400)
    return body


def submission_parts(body: Mapping[str, Any]) -> dict[str, Any]:
    """The task parts of a submission body, type-checked; raises InputError naming the bad field."""
    parts: dict[str, Any] = {}
    for name, kind in (("labels", dict), ("notes", dict), ("spans", list), ("edit", dict)):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise InputError(name, f"{name} must be a JSON {'object' if kind is dict else 'list'}")
        parts[name] = value
    json_check(parts)
    return parts


def submission_arguments(body: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of services.studies.assignment_submit from a submission body (all but the
    assignment and user); raises InputError naming the bad field."""
    return {
        **submission_parts(body),
        "comment": storable_text(body.get("comment", ""), field="comment", max_chars=MAX_COMMENT_CHARS),
        "seconds": finite_number(body.get("seconds", 0), field="seconds", minimum=0, maximum=MAX_REPORTED_SECONDS),
        "guidelines_version": body.get("guidelines_version"),
    }
