"""Reads for annotators: their queue, their items, their own labels and the examples of a task."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Case, Count, F, IntegerField, Max, Q, QuerySet, Value, When, Window
from django.db.models.functions import RowNumber

from protocols.tasks import Unit, get_task
from studies.models import Assignment, Study, StudyExample, StudyItem, StudyTask

# Done from the annotator's side: submitted, or marked "cannot judge".
FINISHED = (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED)


def annotator_assignments(*, user: User) -> QuerySet[Assignment]:
    """Every assignment the annotator may read: their own, in the studies they still belong to (reclaimed
    ones too). Anyone else's, and the work of a study they were removed from (it stays in the study's
    data), look as if they did not exist."""
    return Assignment.objects.filter(
        annotator=user,
        item__study_task__study__kind=Study.Kind.STUDY,
        item__study_task__study__annotators=user,
    )


def assignment_for_user(*, assignment_id: int, user: User) -> Assignment:
    """Only the annotator's own, live assignment (see annotator_assignments)."""
    return (
        annotator_assignments(user=user)
        .select_related("item__study_task__study", "item__summary__document", "item__explanation", "condition")
        .exclude(status=Assignment.Status.RECLAIMED)
        .get(pk=assignment_id)
    )


def assignment_to_save(*, assignment_id: int, user: User) -> Assignment:
    """The annotator's own assignment that work is sent for, a reclaimed or skipped one too (saving it answers
    why not); raises Assignment.DoesNotExist for anyone else's and for a study they were removed from."""
    return annotator_assignments(user=user).only("pk", "annotator_id", "status").get(pk=assignment_id)


def assignments_for_annotator(*, user: User) -> QuerySet[Assignment]:
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
        done=sum(1 for _, status in rows if status in FINISHED),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        next_open_id=open_ids[0] if open_ids else None,
    )


def assignment_next_open_id(*, user: User) -> int | None:
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


def item_units(item: StudyItem | StudyExample, *, with_document: bool = False) -> list[Unit]:
    """The units an annotator judges in this item (or example), from its frozen explanation or its summary.

    with_document: also read the source document, so units that point into it name whole source words
    (BERTScore's alignments, protocols.alignment); the views pass it, checking a submission needs only the
    unit indexes and does not load the document.
    """
    return get_task(item.study_task.task).units(
        summary_text=item.summary.text,
        summary_sentences=item.summary.sentences,
        payload=item.explanation.payload if item.explanation is not None else None,
        params=item.params,
        document_text=item.summary.document.text if with_document else "",
    )


def task_examples(*, study_task: StudyTask) -> list[StudyExample]:
    """The annotated examples of a task, in the order the researcher gave them."""
    return list(
        StudyExample.objects.filter(study_task=study_task)
        .exclude(annotated_at=None)
        .select_related("study_task", "summary__document", "explanation")
        .order_by("position", "pk")
    )


# --- the dashboard: the queue grouped by study and task --------------------------------------------------

# The dashboard lists at most this many items; a filter finds the others. A queue of thousands then costs
# two grouped reads, not thousands of rows built and drawn.
MAX_QUEUE_ROWS = 300
QUEUE_ORDER = ("item__study_task__study__created_at", "item__study_task__study_id", "position", "pk")


@dataclass
class QueueTask:
    key: str
    name: str
    rows: list[Assignment] = field(default_factory=list)  # the shown ones (after the filter)
    total: int = 0
    done: int = 0  # submitted or marked "cannot judge"


@dataclass
class QueueStudy:
    study_id: int
    name: str
    tasks: dict[str, QueueTask] = field(default_factory=dict)
    total: int = 0
    done: int = 0
    skipped: int = 0

    @property
    def shown(self) -> list[QueueTask]:
        return [task for task in self.tasks.values() if task.rows]


@dataclass(frozen=True)
class Queue:
    studies: list[QueueStudy]  # grouped; progress over the whole queue, rows only where the filter matches
    tasks: dict[str, str]  # key -> name of every task in the queue (the filter's choices)
    rows: list[Assignment]  # the shown ones, each with `number` (its place in the whole queue) and `task_name`
    more: bool  # more items match than are shown
    total: int
    remaining: int


def annotator_queue(*, user: User, study_id: int | None = None, task: str = "", text: str = "") -> Queue:
    """The annotator's queue grouped by study, then task, with progress per study and task over the whole
    queue, and the first MAX_QUEUE_ROWS items of the study, task and text (document, system, study or task
    name) asked for. Two queries: the counts grouped by study, task and status, and the rows shown."""
    queue = assignments_for_annotator(user=user)
    groups: dict[int, QueueStudy] = {}
    names: dict[str, str] = {}
    total = remaining = 0
    counts = (
        queue.order_by()
        .values_list("item__study_task__study_id", "item__study_task__study__name", "item__study_task__task", "status")
        .annotate(n=Count("id"))
        .order_by("item__study_task__study__created_at", "item__study_task__study_id", "item__study_task__task")
    )
    for group_id, study_name, key, status, n in counts:
        if key not in names:
            names[key] = get_task(key).name
        group = groups.setdefault(group_id, QueueStudy(study_id=group_id, name=study_name))
        bucket = group.tasks.setdefault(key, QueueTask(key=key, name=names[key]))
        finished = n if status in FINISHED else 0
        group.total, bucket.total, total = group.total + n, bucket.total + n, total + n
        group.done, bucket.done = group.done + finished, bucket.done + finished
        group.skipped += n if status == Assignment.Status.SKIPPED else 0
        remaining += n if status == Assignment.Status.ASSIGNED else 0
    # Each row keeps its number in the whole queue: the filter is a window over the row itself, so it is
    # applied (by Django, as an outer query) after the numbering, not before it.
    shown = queue.annotate(number=Window(RowNumber(), order_by=[F(name).asc() for name in QUEUE_ORDER]))
    wanted = Q()
    if study_id is not None:
        wanted &= Q(item__study_task__study_id=study_id)
    if task:
        wanted &= Q(item__study_task__task=task)
    text = text.strip()
    if text:
        tasks_named = [key for key, name in names.items() if text.casefold() in name.casefold()]
        wanted &= (
            Q(item__summary__document__title__icontains=text)
            | Q(item__summary__document__external_id__icontains=text)
            | Q(item__summary__document__dataset__name__icontains=text)
            | Q(item__summary__system__icontains=text)
            | Q(item__study_task__study__name__icontains=text)
            | Q(item__study_task__task__in=tasks_named)
        )
    if wanted:
        matches = Case(When(wanted, then=Value(1)), default=Value(0), output_field=IntegerField())
        shown = shown.annotate(matches=Window(Max(matches), partition_by=[F("pk")])).filter(matches=1)
    rows: list[Assignment] = list(shown[: MAX_QUEUE_ROWS + 1])
    for assignment in rows[:MAX_QUEUE_ROWS]:
        key = assignment.item.study_task.task
        # The task's display name, for the queue's template: an attribute the model does not declare.
        assignment.task_name = names.get(key) or get_task(key).name  # type: ignore[attr-defined]
        groups[assignment.item.study_task.study_id].tasks[key].rows.append(assignment)
    return Queue(
        studies=list(groups.values()),
        tasks=dict(sorted(names.items(), key=lambda entry: entry[1])),
        rows=rows[:MAX_QUEUE_ROWS],
        more=len(rows) > MAX_QUEUE_ROWS,
        total=total,
        remaining=remaining,
    )
