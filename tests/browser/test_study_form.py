from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from corpus.models import Dataset
from studies.models import Study
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


def test_it_shows_the_services_refusal_next_to_the_field_it_names(
    live_server: Any, page: Any, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser, scored_dataset: Dataset
) -> None:
    """The form only parses: k larger than the annotators chosen is refused by study_create, and the page
    shows its message at the annotators, keeping what was typed."""
    log_in(page, live_server.url, "rita")
    page.goto(f"{live_server.url}/studies/new/?dataset={scored_dataset.pk}")
    page.fill("input[name=name]", "Too few")
    page.check("input[name=tasks][value=factuality]")
    page.check(f"input[name=annotators][value='{alice.pk}']")
    page.check(f"input[name=annotators][value='{bob.pk}']")
    page.fill("input[name=annotators_per_item]", "3")
    page.click('button:has-text("Create study and assign items")')
    error = page.locator(".field-annotators .error")
    assert error.inner_text().strip() == "3 annotators per item need at least that many annotators; 2 chosen."
    assert page.input_value("input[name=name]") == "Too few"
    assert not Study.objects.filter(name="Too few").exists()
