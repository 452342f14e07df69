"""Partial correlation outside the summary level is refused with a reason, not silently unticked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from analysis.views.analysis import PARTIAL_UNAVAILABLE
from corpus.models import Dataset
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_it_says_why_partial_correlation_is_unavailable_at_system_level(
    small_dataset: Dataset, rita: AbstractUser
) -> None:
    url = reverse("dataset_analysis", args=[small_dataset.pk])
    system = client_for(rita).get(url, {"level": "system", "partial": "system"})
    assert system.context["partial"] is False
    assert system.context["partial_unavailable"] == PARTIAL_UNAVAILABLE["system"]
    html = system.content.decode()
    assert "not available at the system level" in html
    assert 'name="partial" value="system" checked' in html  # the researcher's choice stays visible

    summary = client_for(rita).get(url, {"level": "summary", "partial": "system"})
    assert summary.context["partial"] is True and summary.context["partial_unavailable"] == ""
    assert "not available" not in summary.content.decode()
