"""The common annotation frame: what every task view gets (state for the script, examples for the modal).

Used by the annotator's item page and by the researcher's page for annotating an example item, so both
show exactly the same task component. The frame saves nothing itself: the page names the endpoints its
script posts JSON to (the API's, under the session), so another page can reuse the frame with its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocols.tasks import TaskDefinition, Unit, get_task
from studies.models import StudyCondition, StudyExample, StudyTask
from studies.selectors.task_state import units_seen


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


def example_cards(examples: Sequence[StudyExample], *, condition: StudyCondition | None = None) -> list[dict[str, Any]]:
    """Examples as the modal shows them: the summary, every label with its note, the researcher's reason;
    with the metric's alignments as the annotator's condition shows them (none when hidden, moved when
    shuffled: the examples must not show the real evidence a placebo condition replaces)."""
    cards = []
    for example in examples:
        task = get_task(example.study_task.task)
        units = {unit.index: unit for unit in units_seen(item=example, condition=condition, seed_name="example")}
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
    endpoints: Mapping[str, str | None],
    condition: StudyCondition | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The template context of annotations/annotate.html. `endpoints` become the page's data attributes the
    scripts post to: "submit" (the complete work), "draft" (unsubmitted work; None: no server drafts), "skip"
    ("cannot judge"; None: not offered) and "done" (where the page goes after a submission or a skip).
    `extra` may name the `guidelines` shown (a condition's own; default: the task's)."""
    return {
        "task": task,
        "study_task": study_task,
        "state": state,
        "endpoints": endpoints,
        "guidelines": study_task.guidelines,
        "guidelines_version": study_task.guidelines_version,
        "examples": example_cards(examples, condition=condition),
        "task_template": f"annotations/tasks/{task.view}.html",
        "task_script": f"js/tasks/{task.view}.js",
        **extra,
    }
