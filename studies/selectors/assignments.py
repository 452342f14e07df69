"""Reads for annotators: their queue, their items, their own labels and the examples of a task."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractUser
from django.db.models import QuerySet

from protocols.tasks import Unit, get_task
from studies.models import Assignment, Study, StudyExample, StudyItem, StudyTask


def annotator_assignments(*, user: AbstractUser) -> QuerySet[Assignment]:
    """Every assignment the annotator may read: their own, in the studies they still belong to (reclaimed
    ones too). Anyone else's, and the work of a study they were removed from (it stays in the study's
    data), look as if they did not exist."""
    return Assignment.objects.filter(
        annotator=user,
        item__study_task__study__kind=Study.Kind.STUDY,
        item__study_task__study__annotators=user,
    )


def assignment_for_user(*, assignment_id: int, user: AbstractUser) -> Assignment:
    """Only the annotator's own, live assignment (see annotator_assignments)."""
    return (
        annotator_assignments(user=user)
        .select_related("item__study_task__study", "item__summary__document", "item__explanation")
        .exclude(status=Assignment.Status.RECLAIMED)
        .get(pk=assignment_id)
    )


def assignments_for_annotator(*, user: AbstractUser) -> QuerySet[Assignment]:
    """The annotator's queue across the studies they still belong to, in the order work was handed out."""
    return (
        annotator_assignments(user=user)
        .exclude(status=Assignment.Status.RECLAIMED)
        # Document.__str__ falls back to the dataset's name when a document has no title.
        .select_related("item__study_task__study", "item__summary__document__dataset")
        # Lists show names, not texts: leave the long columns in the database.
        .defer(
            "draft",
            "comment",
            "item__summary__text",
            "item__summary__sentences",
            "item__summary__meta",
            "item__summary__document__text",
            "item__summary__document__sentences",
            "item__summary__document__meta",
            "item__study_task__study__selection",
            "item__study_task__study__description",
        )
        .order_by("item__study_task__study__created_at", "item__study_task__study_id", "position", "pk")
    )


@dataclass(frozen=True)
class QueuePosition:
    number: int  # 1-based position of the assignment in the annotator's queue
    total: int
    done: int
    previous_id: int | None
    next_id: int | None
    next_open_id: int | None  # the next item still to do, wrapping around


def assignment_queue_position(*, assignment: Assignment) -> QueuePosition:
    rows = list(assignments_for_annotator(user=assignment.annotator).values_list("pk", "status"))
    ids = [pk for pk, _ in rows]
    index = ids.index(assignment.pk)
    open_ids = [pk for pk, status in rows[index + 1 :] + rows[:index] if status == Assignment.Status.ASSIGNED]
    return QueuePosition(
        number=index + 1,
        total=len(ids),
        done=sum(1 for _, status in rows if status == Assignment.Status.SUBMITTED),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        next_open_id=open_ids[0] if open_ids else None,
    )


def assignment_next_open_id(*, user: AbstractUser) -> int | None:
    """The first item still to do in the annotator's queue (only its id: the joins stay small)."""
    return (
        assignments_for_annotator(user=user)
        .filter(status=Assignment.Status.ASSIGNED)
        .values_list("pk", flat=True)
        .first()
    )


def saved_work(*, task_key: str, judgements: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Stored judgements in the shape the task views and drafts use: labels, notes, spans or an edit."""
    task = get_task(task_key)
    work: dict[str, Any] = {"labels": {}, "notes": {}, "spans": [], "edit": None}
    for j in sorted(judgements, key=lambda j: j["unit_index"]):
        if task.spans:
            work["spans"].append({"start": j["start"], "end": j["end"], "label": j["label"]})
        elif task.edit:
            work["edit"] = {"text": j["data"].get("edited", ""), "label": j["label"], "note": j["note"]}
        else:
            work["labels"][str(j["unit_index"])] = j["label"]
            if j["note"]:
                work["notes"][str(j["unit_index"])] = j["note"]
    return work


def assignment_saved_work(*, assignment: Assignment) -> dict[str, Any]:
    """The annotator's submitted work on an item (one query)."""
    rows = assignment.judgements.values("unit_index", "label", "start", "end", "note", "data")
    return saved_work(task_key=assignment.item.study_task.task, judgements=rows)


def item_units(item: StudyItem | StudyExample) -> list[Unit]:
    """The units an annotator judges in this item (or example), from its frozen explanation or its summary."""
    return get_task(item.study_task.task).units(
        summary_text=item.summary.text,
        summary_sentences=item.summary.sentences,
        payload=item.explanation.payload if item.explanation_id else None,
        params=item.params,
    )


def task_examples(*, study_task: StudyTask) -> list[StudyExample]:
    """The annotated examples of a task, in the order the researcher gave them."""
    return list(
        StudyExample.objects.filter(study_task=study_task)
        .exclude(annotated_at=None)
        .select_related("study_task", "summary__document", "explanation")
        .order_by("position", "pk")
    )
