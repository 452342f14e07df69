"""Reads for annotators: their queue, their items, their labels."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractUser
from django.db.models import QuerySet

from annotations.models import Assignment, Study, StudyItem
from annotations.tasks import Unit, get_task


def assignment_for_user(*, assignment_id: int, user: AbstractUser) -> Assignment:
    """Only the annotator's own assignment; anyone else's looks as if it did not exist."""
    return Assignment.objects.select_related(
        "item__study_task__study", "item__summary__document", "item__explanation"
    ).get(pk=assignment_id, annotator=user)


def assignments_for_annotator(*, user: AbstractUser) -> QuerySet[Assignment]:
    """The annotator's queue across the studies they belong to, in the order work was handed out."""
    return (
        Assignment.objects.filter(annotator=user, item__study_task__study__kind=Study.Kind.STUDY)
        .select_related("item__study_task__study", "item__summary__document")
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


def assignment_next_open(*, user: AbstractUser) -> Assignment | None:
    return assignments_for_annotator(user=user).filter(status=Assignment.Status.ASSIGNED).first()


def judgements_by_unit(*, assignment: Assignment) -> dict[int, str]:
    return dict(assignment.judgements.values_list("unit_index", "label"))


def item_units(item: StudyItem) -> list[Unit]:
    """The units an annotator judges in this item, from its frozen explanation or its summary."""
    return get_task(item.study_task.task).units(
        summary_text=item.summary.text,
        summary_sentences=item.summary.sentences,
        payload=item.explanation.payload if item.explanation_id else None,
    )
