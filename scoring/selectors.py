"""Reads of computed explanations."""

from __future__ import annotations

from django.db.models import QuerySet

from corpus.models import Summary
from scoring.models import Explanation


def summary_explanations(*, summary: Summary) -> QuerySet[Explanation]:
    """Every explanation of the summary, newest configuration of each metric last."""
    return Explanation.objects.filter(summary=summary).order_by("metric", "created_at", "pk")
