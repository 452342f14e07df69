from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from corpus.models import Dataset
from tests.browser.test_analysis_pages import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_preselects_no_task_and_shows_the_controversial_fields_only_for_that_selection(
    live_server: Any, page: Any, rita: AbstractUser, scored_dataset: Dataset
) -> None:
    log_in(page, live_server.url, "rita")
    page.goto(f"{live_server.url}/studies/new/?dataset={scored_dataset.pk}")
    assert page.locator("input[name=tasks]:checked").count() == 0
    human_score = page.locator("select[name=human_score]")
    assert not human_score.is_visible()
    page.check("input[name=selection_mode][value=controversial]")
    assert human_score.is_visible()
    page.check("input[name=selection_mode][value=random]")
    assert not human_score.is_visible()
