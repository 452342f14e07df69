"""BUMP edit adjudication driven by the keyboard only, in real Chromium (issue 16, point 1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from studies.models import Assignment, FinalLabel, StudyItem
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_lets_a_researcher_take_an_edit_or_write_one_with_the_keyboard_only(
    live_server: Any, page: Any, small_dataset: Any, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="edits",
            dataset=small_dataset,
            tasks=["bump"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study
    item = StudyItem.objects.filter(study_task__study=study).order_by("pk").first()
    assert item is not None
    reference, wanted = item.summary.text, item.params["error_type"]
    for user, text in ((alice, reference + " Alice."), (bob, reference + " Bob.")):
        assignment = Assignment.objects.get(item=item, annotator=user)
        assignment_submit(assignment=assignment, user=user, edit={"text": text, "label": wanted})
    open_as(page, live_server.url, rita, reverse("adjudication_item", args=[study.pk, item.pk]))
    page.wait_for_function("document.querySelector('tr.marking[aria-current=true]') !== null")
    assert serious_violations(page) == []
    # j chooses bob's edit, t takes it.
    page.keyboard.press("j")
    assert page.get_attribute("tr.marking[aria-current=true]", "data-source") == "bob"
    page.keyboard.press("t")
    page.wait_for_function("document.getElementById('final-decision').textContent.includes('from bob')")
    row = FinalLabel.objects.get(item=item)
    assert (row.data["edited"], row.method, row.label) == (reference + " Bob.", "annotator:bob", wanted)
    # e starts an own edit from bob's; typed shortcut keys are text; Ctrl+Enter saves it.
    page.keyboard.press("e")
    page.keyboard.press("End")
    page.keyboard.type(" jktau")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("document.getElementById('final-decision').textContent.includes('own edit')")
    row.refresh_from_db()
    assert (row.data["edited"], row.data["from"], row.method, row.adjudicated_by) == (
        reference + " Bob. jktau",
        "",
        "",
        rita,
    )
    # a: the two edits differ, so there is no majority; the page says so and nothing changes.
    page.keyboard.press("Escape")
    page.keyboard.press("a")
    page.wait_for_function("document.getElementById('adjudication-status').textContent.includes('no majority')")
    row.refresh_from_db()
    assert row.data["edited"] == reference + " Bob. jktau"
