"""Reads for researchers: the studies they may see, progress and agreement."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import AbstractUser
from django.db.models import Count, Q, QuerySet

from annotations import roles
from annotations.analysis.agreement import FleissKappa, fleiss_kappa
from annotations.models import Assignment, Judgement, Study, StudyTask


def studies_for_user(*, user: AbstractUser) -> QuerySet[Study]:
    """Admins see every study; researchers only those they run."""
    studies = Study.objects.select_related("dataset").annotate(n_items=Count("tasks__items", distinct=True))
    if roles.user_has_role(user, roles.ADMIN):
        return studies
    if roles.user_has_role(user, roles.RESEARCHER):
        return studies.filter(researchers=user)
    return studies.none()


@dataclass(frozen=True)
class AnnotatorProgress:
    username: str
    assigned: int
    done: int
    seconds: float


def study_progress(*, study: Study) -> list[AnnotatorProgress]:
    rows = (
        Assignment.objects.filter(item__study_task__study=study)
        .values("annotator__username")
        .annotate(
            assigned=Count("id"),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        )
        .order_by("annotator__username")
    )
    seconds: dict[str, float] = defaultdict(float)
    for username, spent in Assignment.objects.filter(item__study_task__study=study).values_list(
        "annotator__username", "time_spent"
    ):
        seconds[username] += spent
    return [
        AnnotatorProgress(row["annotator__username"], row["assigned"], row["done"], seconds[row["annotator__username"]])
        for row in rows
    ]


def study_unit_ratings(
    *, study_task: StudyTask, label_map: dict[str, str] | None = None
) -> dict[tuple[int, int], list[str]]:
    """Labels per (item, unit) from submitted assignments, optionally mapped (e.g. don't know -> incorrect)."""
    ratings: dict[tuple[int, int], list[str]] = defaultdict(list)
    rows = Judgement.objects.filter(
        assignment__item__study_task=study_task, assignment__status=Assignment.Status.SUBMITTED
    ).values_list("assignment__item_id", "unit_index", "label")
    for item_id, unit_index, label in rows.iterator(chunk_size=5000):
        ratings[(item_id, unit_index)].append((label_map or {}).get(label, label))
    return ratings


DONT_KNOW_AS_INCORRECT = {"dont_know": "incorrect"}


def study_agreement(*, study_task: StudyTask, dont_know_as_incorrect: bool = False) -> FleissKappa:
    """Fleiss' kappa over the units of a study task (thesis Table 5.1; footnote 4 maps don't know)."""
    ratings = study_unit_ratings(
        study_task=study_task, label_map=DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
    )
    return fleiss_kappa(ratings)
