"""Final labels: computed from the submitted judgements, or set by an adjudicator (issue 16, point 1).

Each unit of a label task's item gets one FinalLabel: unanimous (every rater chose it; one rater counts as
unanimous, `n_raters` says so), majority (the most votes, no tie), aggregated (the raters tie and a crowd
model of stats.crowd_quality breaks the tie: the row names the model) or unresolved. An adjudicator's
decision (adjudicated, or unresolved by their word) is never replaced by a recomputation. Span and edit
tasks have no shared units to decide on: their items are not adjudicated.

Every write raises the row's `version`; an adjudication names the version it was made on, so a replayed or
stale post changes nothing (AdjudicationConflict), and posts for an item of a study the user may not
adjudicate find no item (StudyItem.DoesNotExist: the callers answer 404).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.validation import INT32_MAX, InputError, bounded_int, storable_text
from protocols.tasks import MAX_NOTE_CHARS, get_task
from stats.agreement import majority_label
from stats.crowd_quality import MAJORITY, METHODS, CrowdJudgement, labels_aggregate
from studies.models import Assignment, FinalLabel, Judgement, Study, StudyItem, StudyTask
from studies.selectors.access import studies_adjudicable
from studies.selectors.adjudication import adjudicable_tasks, adjudication_problem
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
    "n_raters",
    "agreement",
    "version",
    "updated_at",
]


class AdjudicationConflict(Exception):
    """The unit's final label changed since the post's version (another adjudicator, a recomputation, a
    replayed post): nothing was written; the message says what to do."""


@dataclass(frozen=True)
class Automatic:
    """The automatic final label of one unit."""

    label: str
    status: str
    method: str
    n_raters: int
    agreement: float


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
    problem = adjudication_problem(get_task(study_task.task))
    if problem:
        raise ValidationError({"task": [f"task {study_task.task!r} cannot be adjudicated: {problem}"]})
    if method not in METHODS:
        raise ValidationError({"method": [f"method must be one of {', '.join(METHODS)}, got {method!r}"]})
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
    # Lock the task's rows: an adjudication of one of them waits, then sees the new version.
    existing = {
        (row.item_id, row.unit_index): row
        for row in FinalLabel.objects.select_for_update().filter(item__study_task=study_task)
    }
    kept_method = "" if method == MAJORITY else method
    created, changed = [], []
    for unit, by_annotator in labelled.items():
        auto = automatic_label(list(by_annotator.values()), aggregated.get(unit), kept_method)
        row = existing.pop(unit, None)  # type: ignore[call-overload]  # units are (item id, unit index) pairs
        if row is None:
            row = FinalLabel(item_id=unit[0], unit_index=unit[1])  # type: ignore[index]
            created.append(row)
        else:
            changed.append(row)
            if not _decided(row) and (row.label, row.status, row.method) != (auto.label, auto.status, auto.method):
                row.version += 1
        row.unit_text = texts[unit]
        row.n_raters, row.agreement = auto.n_raters, auto.agreement
        row.aggregated_label, row.aggregated_method = aggregated.get(unit) or "", kept_method
        if not _decided(row):
            row.label, row.status, row.method = auto.label, auto.status, auto.method
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
            for study_task in adjudicable_tasks(study=study)[0]
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
    unit_index: Any,
    version: Any,
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
    problem = adjudication_problem(task)
    if problem:
        raise ValidationError({"item": [f"items of task {task.key!r} cannot be adjudicated: {problem}"]})
    try:
        index = bounded_int(unit_index, field="unit_index", minimum=0, maximum=INT32_MAX)
        seen = bounded_int(version, field="version", minimum=0, maximum=INT32_MAX)
        text = storable_text(note if note is not None else "", field="note", max_chars=MAX_NOTE_CHARS).strip()
    except InputError as exc:
        raise _field(exc.field, exc) from None
    units = {unit.index: unit for unit in item_units(item)}
    if index not in units:
        shown = ", ".join(map(str, sorted(units))) or "none"
        raise ValidationError({"unit_index": [f"unit {index} does not exist in item {item.pk} (units: {shown})"]})
    unit = units[index]
    if (label is None) == (accept is None):
        raise ValidationError({"label": ["give either a label or what to accept (majority, aggregated, unresolved)"]})
    row = FinalLabel.objects.select_for_update().filter(item=item, unit_index=index).first()
    current = row.version if row is not None else 0
    if seen != current:
        raise AdjudicationConflict(
            f"unit {index} of item {item.pk} changed since this page loaded it (version {current}, the post "
            f"was made on version {seen}): reload the item and decide again"
        )
    votes = list(
        Judgement.objects.filter(
            assignment__item=item, assignment__status=Assignment.Status.SUBMITTED, unit_index=index
        ).values_list("label", flat=True)
    )
    status, method = Status.ADJUDICATED, ""
    if accept is not None:
        if accept not in ACCEPTS:
            raise ValidationError({"accept": [f"accept must be one of {', '.join(ACCEPTS)}, got {accept!r}"]})
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
        row = FinalLabel(
            item=item,
            unit_index=index,
            n_raters=len(votes),
            agreement=max(counts.values()) / len(votes) if votes else None,
            version=0,
        )
    row.unit_text = row.unit_text or unit.text
    row.label, row.status, row.method, row.note = label, status, method, text
    row.adjudicated_by, row.adjudicated_at = user, timezone.now()
    row.version += 1
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        # A first final label of this unit written meanwhile (another adjudicator, a computation).
        raise AdjudicationConflict(
            f"unit {index} of item {item.pk} got a final label while this page was open: reload the item"
        ) from None
    return row
