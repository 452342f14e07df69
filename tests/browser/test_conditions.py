"""Conditions in real headless Chromium: in a BERTScore study with a condition that shows the metric's
highlights and one that hides them, the annotator in the shown condition sees source words light up for a
focused summary word, the one in the hidden condition sees none (and no alignment named anywhere)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from studies.models import Assignment, Participation
from studies.services.conditions import ConditionSpec
from studies.services.studies import StudySpec, study_create
from tests.browser.test_accessibility import check_pages
from tests.browser.test_task_views import open_task_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_lights_the_metrics_highlights_only_in_the_shown_condition(
    live_server: Any, page: Any, scored_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="Anchoring",
            dataset=scored_dataset,
            tasks=["bertscore"],
            annotators=[alice, bob],
            annotators_per_item=1,
            created_by=rita,
            conditions=[ConditionSpec("with metric highlights"), ConditionSpec("without", evidence="hidden")],
        )
    ).study
    lit_counts = {}
    for user in (alice, bob):
        evidence = Participation.objects.get(study=study, annotator=user).condition.evidence
        assignment = Assignment.objects.filter(annotator=user, item__study_task__study=study).order_by("position")[0]
        open_task_view(page, live_server, user, f"/annotate/{assignment.pk}/")
        page.locator("#summary button.unit").first.focus()
        lit_counts[evidence] = page.locator("#source .src-token.lit").count()
        info = page.locator("#focus-info").text_content()
        if evidence == "hidden":
            assert page.locator("#source .src-token").count() == 0  # nothing that could light up
            assert "judge it against the source document" in info and "→" not in info
            assert page.locator("#pieces").is_hidden()
            label = page.locator("#summary button.unit").first.get_attribute("aria-label") or ""
            assert "aligned to" not in label
        else:
            assert "→" in info
    assert lit_counts["shown"] > 0 and lit_counts["hidden"] == 0


def test_the_conditions_form_and_list_have_no_serious_accessibility_violation(
    live_server: Any, page: Any, small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="Guidelines compared",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob],
            annotators_per_item=1,
            created_by=rita,
            conditions=[ConditionSpec("as usual"), ConditionSpec("strict", guidelines={"factuality": "Be strict."})],
        )
    ).study
    paths = [f"{reverse('study_new')}?dataset={small_dataset.pk}", reverse("study_detail", args=[study.pk])]
    assert check_pages(page, live_server.url, rita, paths) == []
    page.goto(live_server.url + paths[1])
    rows = page.locator("#condition-list tbody tr")
    assert rows.count() == 2 and "strict" in rows.nth(1).text_content()
