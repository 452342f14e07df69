"""Reads for researchers: the studies they may see, progress and agreement."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import AbstractUser
from django.db.models import Count, Q, QuerySet

from annotations import roles
from annotations.analysis.agreement import FleissKappa
from annotations.models import Assignment, Study, StudyTask
from annotations.selectors.analysis import agreement_compute


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


def study_agreement(*, study_task: StudyTask, dont_know_as_incorrect: bool = False) -> FleissKappa:
    """Fleiss' kappa over the units of a study task (thesis Table 5.1; footnote 4 maps don't know)."""
    return agreement_compute(
        study_task=study_task, coefficient="fleiss", dont_know_as_incorrect=dont_know_as_incorrect
    ).result
