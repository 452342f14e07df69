"""The annotation frame saves through the API under the session (one submission path): the annotator's
drafts and submission, and the researcher's example item, each posted to the endpoint the page names."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from studies.models import Assignment, Judgement, Study
from studies.services.examples import study_example_create
from tests.browser.conftest import open_as
from tests.conftest import study_with_spare_summaries, units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def posts(page: Any) -> list[str]:
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "POST" else None)
    return sent


def test_it_saves_an_annotators_draft_and_submission_through_the_api(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    first, second = Assignment.objects.filter(annotator=alice).order_by("position")[:2]
    sent = posts(page)
    open_as(page, live_server.url, alice, reverse("annotate", args=[first.pk]))
    page.wait_for_selector("button.unit")
    page.keyboard.press("ArrowRight")
    for _ in units_of(first):
        page.keyboard.press("1")
    page.wait_for_function("document.getElementById('save-status').textContent === 'Draft saved.'")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(live_server.url + reverse("annotate", args=[second.pk]))
    assert live_server.url + reverse("api_assignment_draft", args=[first.pk]) in sent
    assert sent[-1] == live_server.url + reverse("api_assignment_submit", args=[first.pk])
    first.refresh_from_db()
    assert first.status == Assignment.Status.SUBMITTED and first.draft == {}
    assert Judgement.objects.filter(assignment=first).count() == len(units_of(first))


def test_it_stores_a_researchers_example_item_through_the_api_and_goes_back_to_the_examples(
    live_server: Any, page: Any, scored_dataset: Dataset, alice: AbstractUser, rita: AbstractUser
) -> None:
    study, study_task, spare = study_with_spare_summaries(scored_dataset, alice, rita)
    example = study_example_create(study_task=study_task, summary=spare[0], user=rita)
    sent = posts(page)
    open_as(page, live_server.url, rita, reverse("study_example_annotate", args=[study.pk, example.pk]))
    page.wait_for_selector(".choice")
    refused = page.locator("#submit")
    page.keyboard.press("Control+Enter")  # nothing chosen yet: the frame says what is missing, nothing is sent
    assert "1 missing" in refused.text_content() and sent == []
    page.keyboard.press("2")
    page.keyboard.press("m")
    page.keyboard.type("The date is wrong.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(live_server.url + reverse("study_task_examples", args=[study.pk, study_task.pk]))
    assert sent == [live_server.url + reverse("api_study_example_submit", args=[study.pk, example.pk])]
    example.refresh_from_db()
    assert example.annotated_at is not None and example.explanation_text == "The date is wrong."
    assert [(j["unit_index"], j["label"]) for j in example.judgements] == [(0, "no")]
