"""Reads for researchers: a study's progress, agreement, items, assignments and judgements (which studies
a user may see: studies.selectors.access)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum

from studies.models import Assignment, Judgement, Study, StudyItem


@dataclass(frozen=True)
class AnnotatorProgress:
    username: str
    assigned: int
    done: int
    seconds: float
    user_id: int = 0
    open: int = 0
    reclaimed: int = 0  # items given to someone else after this annotator left them untouched
    member: bool = True  # still an annotator of the study (removed annotators keep their submitted work)


def study_progress(*, study: Study) -> list[AnnotatorProgress]:
    """Per annotator: items assigned (without those given away), done, open, given away, active time."""
    live = ~Q(status=Assignment.Status.RECLAIMED)
    rows = {
        row["annotator"]: row
        for row in Assignment.objects.filter(item__study_task__study=study)
        .values("annotator", "annotator__username")
        .annotate(
            assigned=Count("id", filter=live),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            reclaimed=Count("id", filter=Q(status=Assignment.Status.RECLAIMED)),
            seconds=Sum("time_spent"),
        )
    }
    members = dict(study.annotators.values_list("pk", "username"))
    result = []
    for user_id in set(rows) | set(members):
        row = rows.get(user_id, {})
        assigned, done = row.get("assigned", 0), row.get("done", 0)
        result.append(
            AnnotatorProgress(
                username=row.get("annotator__username") or members[user_id],
                assigned=assigned,
                done=done,
                seconds=row.get("seconds") or 0.0,
                user_id=user_id,
                open=assigned - done,
                reclaimed=row.get("reclaimed", 0),
                member=user_id in members,
            )
        )
    return sorted(result, key=lambda progress: progress.username)


@dataclass(frozen=True)
class TaskProgress:
    study_task_id: int
    items: int
    complete_items: int  # items with all k judgements submitted
    assignments: int
    done: int
    seconds: float


def study_task_progress(*, study: Study) -> dict[int, TaskProgress]:
    """Per study task: items, items with k submitted judgements, assignments done; three grouped queries."""
    items = dict(
        StudyItem.objects.filter(study_task__study=study)
        .values("study_task")
        .annotate(n=Count("id"))
        .values_list("study_task", "n")
    )
    complete: dict[int, int] = defaultdict(int)
    for task_id, submitted in (
        Assignment.objects.filter(item__study_task__study=study, status=Assignment.Status.SUBMITTED)
        .values("item__study_task", "item")
        .annotate(n=Count("id"))
        .values_list("item__study_task", "n")
    ):
        complete[task_id] += submitted >= study.annotators_per_item
    work = {
        row["item__study_task"]: row
        for row in Assignment.objects.filter(item__study_task__study=study)
        .exclude(status=Assignment.Status.RECLAIMED)
        .values("item__study_task")
        .annotate(
            n=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)), seconds=Sum("time_spent")
        )
    }
    return {
        task_id: TaskProgress(
            study_task_id=task_id,
            items=n,
            complete_items=complete[task_id],
            assignments=work.get(task_id, {}).get("n", 0),
            done=work.get(task_id, {}).get("done", 0),
            seconds=work.get(task_id, {}).get("seconds") or 0.0,
        )
        for task_id, n in items.items()
    }


def study_items(*, study: Study) -> QuerySet[StudyItem]:
    """The study's items by task and position, with their summary's names (not its text)."""
    return (
        StudyItem.objects.filter(study_task__study=study)
        .select_related("study_task", "summary__document")
        .only(
            "pk",
            "position",
            "params",
            "explanation_id",
            "study_task__task",
            "summary__external_id",
            "summary__system",
            "summary__document__external_id",
        )
        .order_by("study_task__task", "position", "pk")
    )


def study_assignments(*, study: Study) -> QuerySet[Assignment]:
    """Every assignment of the study (reclaimed ones too: they show where work moved)."""
    return (
        Assignment.objects.filter(item__study_task__study=study)
        .select_related("annotator", "item__study_task")
        .defer("draft", "item__params")
        .order_by("item__study_task__task", "item__position", "annotator__username", "pk")
    )


def study_judgements_in_order(*, study: Study) -> QuerySet[Judgement]:
    """Every judgement of the study by task, item, annotator and unit: the order of the judgement export."""
    return Judgement.objects.filter(assignment__item__study_task__study=study).order_by(
        "assignment__item__study_task__task",
        "assignment__item__position",
        "assignment__annotator__username",
        "unit_index",
    )


def study_judgements(*, study: Study) -> QuerySet[Judgement]:
    """Every judgement of the study, in the order of the judgement export, with what a list shows of it."""
    return (
        study_judgements_in_order(study=study)
        .select_related("assignment__annotator", "assignment__item__study_task")
        .only(
            *(f.name for f in Judgement._meta.concrete_fields),
            "assignment__guidelines_version",
            "assignment__item_id",
            "assignment__annotator__username",
            "assignment__item__summary_id",
            "assignment__item__study_task__task",
        )
    )
