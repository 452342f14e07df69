"""How a unit's or an item's final decision follows from the annotators' work: pure rules, no queries (the
adjudication services store them, the selectors show them). review.services.adjudication's docstring says
what each status means."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocols.tasks import TaskDefinition
from stats.agreement import majority_label
from stats.spans import FAITHFUL, HALLUCINATED
from stats.unitizing import TypedSpan, typed_majority_spans
from studies.models import FinalLabel

Status = FinalLabel.Status


@dataclass(frozen=True)
class Marking:
    """One annotator's submitted work on a whole item of a span or edit task: their spans (start, end,
    type; none for a faithful summary) or their edit ({"text", "label", "note", "data"} as stored)."""

    spans: tuple[TypedSpan, ...] = ()
    edit: dict[str, Any] | None = None

    def key(self) -> Hashable:
        """What two annotators must share to agree: the same spans of the same types, or the same edited text
        with the same error type."""
        if self.edit is not None:
            return (self.edit["text"], self.edit["label"])
        return self.spans

    def as_state(self) -> dict[str, Any]:
        if self.edit is not None:
            return {"edit": self.edit}
        return {"spans": [{"start": start, "end": end, "label": label} for start, end, label in self.spans]}


@dataclass(frozen=True)
class Automatic:
    """The automatic final label of one unit."""

    label: str
    status: str
    method: str
    n_raters: int
    agreement: float
    data: dict[str, Any] = field(default_factory=dict)


def automatic_label(labels: list[str], aggregated: str | None, method: str) -> Automatic:
    """Unanimous, majority, the crowd model's label on a tie (`aggregated`, `method`), or unresolved."""
    counts = Counter(labels)
    n_raters = len(labels)
    agreement = max(counts.values()) / n_raters if n_raters else 0.0
    if len(counts) == 1:
        return Automatic(labels[0], Status.UNANIMOUS, "", n_raters, agreement)
    majority = majority_label(labels)
    if majority is not None:
        return Automatic(str(majority), Status.MAJORITY, "", n_raters, agreement)
    if aggregated:
        return Automatic(aggregated, Status.AGGREGATED, method, n_raters, agreement)
    return Automatic("", Status.UNRESOLVED, "", n_raters, agreement)


def spans_decision(text: str, spans: Sequence[TypedSpan]) -> tuple[str, dict[str, Any]]:
    """The final label and data of a span task's item with these final spans."""
    shown = [{"start": start, "end": end, "label": label, "text": text[start:end]} for start, end, label in spans]
    return (HALLUCINATED if spans else FAITHFUL), {"spans": shown}


def edit_decision(edit: Mapping[str, Any], annotator: str) -> tuple[str, dict[str, Any]]:
    """The final label and data of an edit task's item with this edit ({"label", "data", "note"} as stored)."""
    return str(edit["label"]), {**edit["data"], "note": edit.get("note", ""), "from": annotator}


def automatic_marking(task: TaskDefinition, text: str, markings: Mapping[str, Marking]) -> Automatic:
    """The automatic final decision of a span or edit task's item (the module's docstring says how)."""
    counts = Counter(marking.key() for marking in markings.values())
    n_raters = len(markings)
    agreement = max(counts.values()) / n_raters if n_raters else 0.0
    if task.spans:
        spans: Sequence[TypedSpan] = next(iter(markings.values())).spans if n_raters else ()
        status = Status.UNANIMOUS
        if len(counts) > 1:
            majority = typed_majority_spans(text, [m.spans for m in markings.values()], task.values)
            if majority.tied:
                return Automatic("", Status.UNRESOLVED, "", n_raters, agreement)
            spans, status = majority.spans, Status.MAJORITY
        label, data = spans_decision(text, spans)
        return Automatic(label, status, "", n_raters, agreement, data)
    key, top = counts.most_common(1)[0] if counts else (None, 0)
    if top * 2 <= n_raters:
        return Automatic("", Status.UNRESOLVED, "", n_raters, agreement)
    name, marking = next((name, m) for name, m in markings.items() if m.key() == key)
    label, data = edit_decision(marking.edit or {}, name)
    return Automatic(label, Status.UNANIMOUS if len(counts) == 1 else Status.MAJORITY, "", n_raters, agreement, data)
