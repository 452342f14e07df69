"""The study page's adjudicators form in real Chromium: a researcher names and removes an adjudicator."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from studies.models import Study
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_names_and_removes_an_adjudicator_on_the_study_page(
    live_server: Any, page: Any, crowd_study: Study, carol: AbstractUser, rita: AbstractUser
) -> None:
    open_as(page, live_server.url, rita, reverse("study_detail", args=[crowd_study.pk]))
    assert "None: only the study's researchers adjudicate." in (page.text_content("#adjudicators") or "")
    page.get_by_label("Add an adjudicator").select_option("carol")
    page.get_by_role("button", name="Add adjudicator").click()
    page.wait_for_selector("#adjudicators li[data-adjudicator='carol']")
    assert list(crowd_study.adjudicators.values_list("username", flat=True)) == ["carol"]
    assert serious_violations(page) == []
    page.get_by_role("button", name="Remove carol as adjudicator").click()
    page.wait_for_function("document.querySelector(\"#adjudicators li[data-adjudicator='carol']\") === null")
    assert not crowd_study.adjudicators.exists()
