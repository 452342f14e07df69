"""Reads of annotators' standing in studies (see studies.services.participation), and the one filter every
analysis and export applies to leave excluded annotators' work out."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q, QuerySet

from studies.models import Assignment, Participation, Study

# Which judgements an analysis reads: accepted work only (excluded annotators left out, the default) or all.
ACCEPTED = "accepted"
ALL = "all"
JUDGEMENT_SETS = (ACCEPTED, ALL)
JUDGEMENT_SET_NAMES = {
    ACCEPTED: "accepted work only (excluded annotators left out)",
    ALL: "all judgements (excluded annotators included)",
}


def excluded_annotator_ids(*, study: Study) -> QuerySet[Participation, int]:
    """The ids of the study's excluded annotators, for use as a subquery (`annotator__in=...`)."""
    return Participation.objects.filter(study=study, excluded=True).values_list("annotator_id", flat=True)


def judgement_set_from(raw: str | None) -> str:
    """A page's `?judgements=`: ALL when it says "all", accepted work otherwise (like the pages' other
    choices, an unknown value falls back to the default; the API refuses it instead)."""
    return ALL if raw == ALL else ACCEPTED


def judgement_set_check(judgements: str) -> str:
    """`judgements` if it names a set (JUDGEMENT_SETS); a ValueError naming them otherwise."""
    if judgements not in JUDGEMENT_SETS:
        raise ValueError(f"judgements must be one of {', '.join(JUDGEMENT_SETS)} (got {judgements!r})")
    return judgements


def counted(queryset: QuerySet[Any], *, judgements: str = ACCEPTED, assignment: str = "") -> QuerySet[Any]:
    """`queryset` (of assignments, or of rows reaching one through `assignment`, e.g. "assignment__" for
    judgements) without the work of annotators excluded from the assignment's study, unless `judgements`
    is ALL. The one place the analyses and exports leave excluded work out: a correlated NOT EXISTS on the
    participation's unique (study, annotator) key, so it adds no join and no row."""
    if judgement_set_check(judgements) == ALL:
        return queryset
    excluded = Participation.objects.filter(
        study=OuterRef(f"{assignment}item__study_task__study"),
        annotator=OuterRef(f"{assignment}annotator"),
        excluded=True,
    )
    return queryset.filter(~Exists(excluded))


def study_annotator(*, study: Study, annotator_id: int) -> User | None:
    """The account with that id if it annotates the study (a member, someone with work in it, or a worker
    with a participation); None for anyone else, so a forged id of another study's annotator finds nobody."""
    in_study = (
        Q(annotated_studies=study)
        | Q(pk__in=Assignment.objects.filter(item__study_task__study=study).values("annotator_id"))
        | Q(pk__in=Participation.objects.filter(study=study).values("annotator_id"))
    )
    return get_user_model().objects.filter(in_study, pk=annotator_id).distinct().first()
