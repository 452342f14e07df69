"""Reads of annotators' standing in studies (see studies.services.participation)."""

from __future__ import annotations

from django.db.models import QuerySet

from studies.models import Participation, Study


def excluded_annotator_ids(*, study: Study) -> QuerySet[Participation, int]:
    """The ids of the study's excluded annotators, for use as a subquery (`annotator__in=...`)."""
    return Participation.objects.filter(study=study, excluded=True).values_list("annotator_id", flat=True)
