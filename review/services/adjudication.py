"""Final labels: computed from the submitted judgements, or set by an adjudicator (issue 16, point 1).

Each unit of a label task's item gets one FinalLabel: unanimous (every rater chose it; one rater counts as
unanimous, `n_raters` says so), majority (the most votes, no tie), aggregated (the raters tie and a crowd
model of stats.crowd_quality breaks the tie: the row names the model) or unresolved. An adjudicator's
decision (adjudicated, or unresolved by their word) is never replaced by a recomputation.

Span and edit tasks are decided per item (one FinalLabel, unit 0, whose `data` holds the decision):
- spans: unanimous when every annotator marked the same spans of the same types (a faithful summary: none);
  otherwise the character-level majority (stats.unitizing.typed_majority_spans: the characters more than
  half of the annotators marked, in runs, each typed by most votes), unless some character splits the
  annotators exactly in half: then unresolved. The label is "hallucinated" (any final span) or "faithful".
- edits: unanimous or majority when more than half of the annotators wrote the same text with the same
  error type (that edit, `from` its first annotator); otherwise unresolved. The label is the error type.
The adjudicator accepts the majority, takes one annotator's spans or edit, or sets their own (checked as a
submission is: protocols.tasks.TaskDefinition.clean).

Every write raises the row's `version`; an adjudication names the version it was made on, so a replayed or
stale post changes nothing (AdjudicationConflict), and posts for an item of a study the user may not
adjudicate find no item (StudyItem.DoesNotExist: the callers answer 404).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.validation import INT32_MAX, InputError, bounded_int, printable, storable_text
from protocols.tasks import MAX_NOTE_CHARS, Submission, SubmissionError, TaskDefinition, get_task
from review.decisions import (
    Automatic,
    automatic_label,
    automatic_marking,
    edit_decision,
    spans_decision,
)
from review.selectors.adjudication import item_markings
from stats.agreement import majority_label
from stats.crowd_quality import MAJORITY, METHODS, CrowdJudgement, labels_aggregate
from stats.unitizing import typed_majority_spans
from studies.models import Assignment, FinalLabel, Judgement, Study, StudyItem, StudyTask
from studies.selectors.access import studies_adjudicable
from studies.selectors.adjudication import adjudicable_tasks
from studies.selectors.assignments import item_units

Status = FinalLabel.Status
# What one key accepts on the adjudication page: the raters' majority, the crowd model's label, or "cannot
# decide" (unresolved, by the adjudicator's word).
ACCEPTS = ("majority", "aggregated", "unresolved")
UPDATED_FIELDS = [
    "unit_text",
    "label",
    "status",
    "method",
    "aggregated_label",
    "aggregated_method",
    "data",
    "n_raters",
    "agreement",
    "version",
    "updated_at",
]


class AdjudicationConflict(Exception):
    """The unit's final label changed since the post's version (another adjudicator, a recomputation, a
    replayed post): nothing was written; the message says what to do."""


def _submitted_labels(study_task: StudyTask) -> tuple[dict[Hashable, dict[str, str]], dict[Hashable, str]]:
    """(item id, unit index) -> annotator -> label, and the unit's text, from submitted assignments."""
    labelled: dict[Hashable, dict[str, str]] = {}
    texts: dict[Hashable, str] = {}
    rows = Judgement.objects.filter(
        assignment__item__study_task=study_task, assignment__status=Assignment.Status.SUBMITTED
    ).values_list("assignment__item_id", "unit_index", "unit_text", "assignment__annotator__username", "label")
    for item_id, unit_index, unit_text, annotator, label in rows.iterator(chunk_size=10000):
        labelled.setdefault((item_id, unit_index), {})[annotator] = label
        texts.setdefault((item_id, unit_index), unit_text)
    return labelled, texts


def _decided(row: FinalLabel) -> bool:
    """An adjudicator's decision, which a recomputation keeps."""
    return row.adjudicated_by_id is not None or row.status == Status.ADJUDICATED


@transaction.atomic
def final_labels_compute(
    *, study_task: StudyTask, method: str = MAJORITY, seed: int = 0, max_modelled_judgements: int | None = None
) -> dict[str, int]:
    """Compute the automatic final labels of every judged unit of the task (ties broken by the crowd model
    `method` unless it is the majority, over at most `max_modelled_judgements`); adjudicated units keep
    their label. Returns the count per status."""
    if method not in METHODS:
        raise ValidationError({"method": [f"method must be one of {', '.join(METHODS)}, got {method!r}"]})
    task = get_task(study_task.task)
    if task.whole_item:
        return _final_decisions_store(study_task, _whole_item_automatics(task, study_task), "")
    labelled, texts = _submitted_labels(study_task)
    aggregated: dict[Hashable, str | None] = {}
    if method != MAJORITY and labelled:
        n_judgements = sum(len(by_annotator) for by_annotator in labelled.values())
        if max_modelled_judgements is not None and n_judgements > max_modelled_judgements:
            raise ValidationError(
                {
                    "method": [
                        f"the {method} model over {n_judgements} judgements takes too long for a request (at most "
                        f"{max_modelled_judgements}): run `manage.py final_labels --study "
                        f"{study_task.study_id} --method {method}`"
                    ]
                }
            )
        judgements = [CrowdJudgement(a, unit, label) for unit, by in labelled.items() for a, label in by.items()]
        aggregated = labels_aggregate(judgements=judgements, method=method, seed=seed).labels
    kept_method = "" if method == MAJORITY else method
    automatics = {
        unit: (texts[unit], automatic_label(list(by.values()), aggregated.get(unit), kept_method), aggregated.get(unit))
        for unit, by in labelled.items()
    }
    return _final_decisions_store(study_task, automatics, kept_method)


def _whole_item_automatics(
    task: TaskDefinition, study_task: StudyTask
) -> dict[tuple[int, int], tuple[str, Automatic, str | None]]:
    """(item id, 0) -> (the summary, its automatic decision, no crowd label) for a span or edit task."""
    markings = item_markings(study_task=study_task)
    texts = dict(StudyItem.objects.filter(pk__in=list(markings)).values_list("pk", "summary__text"))
    return {
        (item_id, 0): (texts[item_id], automatic_marking(task, texts[item_id], by), None)
        for item_id, by in markings.items()
    }


def _final_decisions_store(
    study_task: StudyTask, automatics: Mapping[Any, tuple[str, Automatic, str | None]], kept_method: str
) -> dict[str, int]:
    """Write the automatic decisions (unit -> (unit text, decision, the crowd model's label)) over the
    task's final labels, keeping every adjudicator's decision; the count per status."""
    # Lock the task's rows: an adjudication of one of them waits, then sees the new version.
    existing = {
        (row.item_id, row.unit_index): row
        for row in FinalLabel.objects.select_for_update().filter(item__study_task=study_task)
    }
    created, changed = [], []
    for unit, (text, auto, aggregated) in automatics.items():
        row = existing.pop(unit, None)
        if row is None:
            row = FinalLabel(item_id=unit[0], unit_index=unit[1])
            created.append(row)
        else:
            changed.append(row)
            now = (auto.label, auto.status, auto.method, auto.data)
            if not _decided(row) and (row.label, row.status, row.method, row.data) != now:
                row.version += 1
        row.unit_text = text
        row.n_raters, row.agreement = auto.n_raters, auto.agreement
        row.aggregated_label, row.aggregated_method = aggregated or "", kept_method
        if not _decided(row):
            row.label, row.status, row.method, row.data = auto.label, auto.status, auto.method, auto.data
    FinalLabel.objects.bulk_create(created, batch_size=2000)
    FinalLabel.objects.bulk_update(changed, UPDATED_FIELDS, batch_size=2000)
    # Units nobody judges any more (none today: a submission is final) lose their automatic label.
    FinalLabel.objects.filter(pk__in=[row.pk for row in existing.values() if not _decided(row)]).delete()
    counts = Counter(row.status for row in [*created, *changed])
    return {status: counts.get(status, 0) for status in Status.values}


def study_final_labels_compute(
    *, study: Study, method: str = MAJORITY, seed: int = 0, max_modelled_judgements: int | None = None
) -> dict[str, dict[str, int]]:
    """final_labels_compute for every adjudicable task of the study, all or nothing: task -> status -> units."""
    with transaction.atomic():
        return {
            study_task.task: final_labels_compute(
                study_task=study_task, method=method, seed=seed, max_modelled_judgements=max_modelled_judgements
            )
            for study_task in adjudicable_tasks(study=study)
        }


def _field(name: str, exc: InputError) -> ValidationError:
    return ValidationError({name: [exc.message]})


def _item_to_adjudicate(user: User, item_id: Any) -> StudyItem:
    """The item, if its study is one the user may adjudicate; StudyItem.DoesNotExist otherwise (404)."""
    try:
        pk = bounded_int(item_id, field="item", minimum=1, maximum=2**63 - 1)
    except InputError:
        raise StudyItem.DoesNotExist from None
    return (
        StudyItem.objects.select_related("study_task__study", "summary__document", "explanation")
        .filter(study_task__study__in=studies_adjudicable(user=user))
        .get(pk=pk)
    )


@transaction.atomic
def final_label_adjudicate(
    *,
    user: User,
    item_id: Any,
    version: Any,
    unit_index: Any = None,
    label: Any = None,
    accept: Any = None,
    note: Any = "",
) -> FinalLabel:
    """Set the final label of one unit: a `label` of the unit's choices, or `accept` the raters' majority,
    the crowd model's label of the last computation ("aggregated") or "unresolved". `version` is the row's
    version the adjudicator saw (0: no final label yet). Bad input raises ValidationError keyed by field and
    changes nothing; a stale version raises AdjudicationConflict; an item of a study the user may not
    adjudicate raises StudyItem.DoesNotExist."""
    item = _item_to_adjudicate(user, item_id)
    task = get_task(item.study_task.task)
    if task.whole_item:
        raise ValidationError(
            {"item": [f"items of task {task.key!r} are decided whole: post spans or an edit, not a unit's label"]}
        )
    index = _checked(bounded_int, unit_index, field="unit_index", minimum=0, maximum=INT32_MAX)
    units = {unit.index: unit for unit in item_units(item)}
    if index not in units:
        shown = ", ".join(map(str, sorted(units))) or "none"
        raise ValidationError({"unit_index": [f"unit {index} does not exist in item {item.pk} (units: {shown})"]})
    unit = units[index]
    if (label is None) == (accept is None):
        raise ValidationError({"label": ["give either a label or what to accept (majority, aggregated, unresolved)"]})
    row, text = _row_to_decide(item, index, version, note)
    votes = list(
        Judgement.objects.filter(
            assignment__item=item, assignment__status=Assignment.Status.SUBMITTED, unit_index=index
        ).values_list("label", flat=True)
    )
    status, method = Status.ADJUDICATED, ""
    if accept is not None:
        _accept_check(accept, ACCEPTS)
        if accept == "majority":
            label = majority_label(votes)
            if label is None:
                problem = "the annotators tie" if votes else "nobody has judged this unit yet"
                raise ValidationError({"accept": [f"unit {index} has no majority: {problem}"]})
            method = "majority"
        elif accept == "aggregated":
            if row is None or not row.aggregated_label:
                raise ValidationError(
                    {"accept": [f"unit {index} has no aggregated label: compute the final labels with a crowd model"]}
                )
            label, method = row.aggregated_label, f"aggregated:{row.aggregated_method}"
        else:
            label, status = "", Status.UNRESOLVED
    else:
        values = [choice.value for choice in task.choices_for(unit)]
        if not isinstance(label, str) or label not in values:
            shown = repr(label[:40]) if isinstance(label, str) else type(label).__name__
            message = f"{shown} is not a choice of task {task.key!r} for unit {index} ({', '.join(values)})"
            raise ValidationError({"label": [message]})
    if row is None:
        counts = Counter(votes)
        agreement = max(counts.values()) / len(votes) if votes else None
        row = FinalLabel(item=item, unit_index=index, n_raters=len(votes), agreement=agreement, version=0)
    row.unit_text = row.unit_text or unit.text
    return _decision_save(row, user, label, status, method, text, {})


def _checked(parse: Any, raw: Any, **kwargs: Any) -> Any:
    """`parse(raw, **kwargs)` (common.validation), its InputError as a ValidationError naming the field."""
    try:
        return parse(raw, **kwargs)
    except InputError as exc:
        raise _field(exc.field, exc) from None


def _accept_check(accept: Any, allowed: Sequence[str]) -> None:
    if accept not in allowed:
        shown = printable(accept[:40]) if isinstance(accept, str) else type(accept).__name__
        raise ValidationError({"accept": [f"accept must be one of {', '.join(allowed)}, got {shown!r}"]})


def _row_to_decide(item: StudyItem, index: int, version: Any, note: Any) -> tuple[FinalLabel | None, str]:
    """The unit's final label, locked, if the post's `version` is still its version (0: none yet), and the
    checked note; AdjudicationConflict when the unit changed since."""
    seen = _checked(bounded_int, version, field="version", minimum=0, maximum=INT32_MAX)
    text = _checked(storable_text, note if note is not None else "", field="note", max_chars=MAX_NOTE_CHARS).strip()
    row = FinalLabel.objects.select_for_update().filter(item=item, unit_index=index).first()
    current = row.version if row is not None else 0
    if seen != current:
        raise AdjudicationConflict(
            f"unit {index} of item {item.pk} changed since this page loaded it (version {current}, the post "
            f"was made on version {seen}): reload the item and decide again"
        )
    return row, text


def _decision_save(
    row: FinalLabel, user: User, label: str, status: str, method: str, note: str, data: dict[str, Any]
) -> FinalLabel:
    """Store an adjudicator's decision as the row's next version."""
    row.label, row.status, row.method, row.note, row.data = label, status, method, note, data
    row.adjudicated_by, row.adjudicated_at = user, timezone.now()
    row.version += 1
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        # A first final label of this unit written meanwhile (another adjudicator, a computation).
        raise AdjudicationConflict(
            f"unit {row.unit_index} of item {row.item_id} got a final label while this page was open: reload the item"
        ) from None
    return row


# What a span or edit task's item accepts in one key: the majority of the annotators, or "cannot decide".
WHOLE_ITEM_ACCEPTS = ("majority", "unresolved")
# More final spans than this is no marking of a summary but a flood.
MAX_FINAL_SPANS = 1000


@transaction.atomic
def final_decision_adjudicate(
    *,
    user: User,
    item_id: Any,
    version: Any,
    spans: Any = None,
    edit: Any = None,
    accept: Any = None,
    annotator: Any = None,
    note: Any = "",
) -> FinalLabel:
    """Decide a span or edit task's item (its one final label, unit 0): the adjudicator's own `spans` (a list
    of {start, end, label}) or `edit` ({text, label, note}), checked as an annotator's submission is
    (offsets inside the summary, no overlap, a label of the task; a minimal edit of an allowed error type);
    `accept` the annotators' "majority" (the module's docstring defines it) or "unresolved"; or take one
    `annotator`'s submitted spans or edit. Exactly one of them. Version, 409 and 404 as final_label_adjudicate."""
    item = _item_to_adjudicate(user, item_id)
    task = get_task(item.study_task.task)
    if not task.whole_item:
        raise ValidationError({"item": [f"items of task {task.key!r} are decided per unit: post a unit's label"]})
    if sum(value is not None for value in (spans, edit, accept, annotator)) != 1:
        own = "spans" if task.spans else "edit"
        raise ValidationError({own: [f"give exactly one of {own}, accept (majority, unresolved) or annotator"]})
    if task.spans and edit is not None:
        raise ValidationError({"edit": [f"task {task.key!r} takes spans, not an edit"]})
    if task.edit and spans is not None:
        raise ValidationError({"spans": [f"task {task.key!r} takes an edit, not spans"]})
    row, text = _row_to_decide(item, 0, version, note)
    summary = item.summary.text
    markings = item_markings(item=item).get(item.pk, {})
    status, method = Status.ADJUDICATED, ""
    if accept is not None:
        _accept_check(accept, WHOLE_ITEM_ACCEPTS)
        if accept == "unresolved":
            label, data, status = "", dict[str, Any](), Status.UNRESOLVED
        elif not markings:
            raise ValidationError({"accept": ["nobody has submitted this item yet: there is no majority"]})
        elif task.spans:
            majority = typed_majority_spans(summary, [m.spans for m in markings.values()], task.values)
            label, data = spans_decision(summary, majority.spans)
            method = "majority"
        else:
            auto = automatic_marking(task, summary, markings)
            if not auto.label:
                raise ValidationError({"accept": ["the annotators' edits have no majority: pick one or write one"]})
            label, data, method = auto.label, auto.data, "majority"
    elif annotator is not None:
        if not isinstance(annotator, str) or annotator not in markings:
            shown = printable(annotator[:40]) if isinstance(annotator, str) else type(annotator).__name__
            known = ", ".join(markings) or "nobody yet"
            raise ValidationError({"annotator": [f"{shown!r} has not submitted this item (submitted: {known})"]})
        chosen = markings[annotator]
        if task.spans:
            label, data = spans_decision(summary, chosen.spans)
        else:
            label, data = edit_decision(chosen.edit or {}, annotator)
        method = f"annotator:{annotator}"
    elif spans is not None:
        if isinstance(spans, list) and len(spans) > MAX_FINAL_SPANS:
            raise ValidationError({"spans": [f"at most {MAX_FINAL_SPANS} spans"]})
        cleaned = _clean(task, Submission(spans=spans), summary, item, "spans")
        label, data = spans_decision(summary, [(j.start or 0, j.end or 0, j.label) for j in cleaned])
    else:
        if not isinstance(edit, Mapping):
            raise ValidationError({"edit": ["give an object with the edited summary as 'text' and its 'label'"]})
        cleaned = _clean(task, Submission(edit=edit), summary, item, "edit")
        stored = {"label": cleaned[0].label, "note": cleaned[0].note, "data": cleaned[0].data}
        label, data = edit_decision(stored, "")
    if row is None:
        counts = Counter(marking.key() for marking in markings.values())
        agreement = max(counts.values()) / len(markings) if markings else None
        row = FinalLabel(item=item, unit_index=0, n_raters=len(markings), agreement=agreement, version=0)
    row.unit_text = summary
    return _decision_save(row, user, label, status, method, text, data)


def _clean(task: TaskDefinition, submission: Submission, summary: str, item: StudyItem, field: str) -> list[Any]:
    """The adjudicator's spans or edit checked as an annotator's submission is; ValidationError keyed by `field`
    lists every problem."""
    try:
        return task.clean(submission, units=item_units(item), summary_text=summary, params=item.params)
    except SubmissionError as exc:
        raise ValidationError({field: list(exc.messages)}) from None
