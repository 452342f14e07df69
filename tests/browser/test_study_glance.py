"""A researcher reads a small study at a glance in Chromium (issue 13 point 7): the studies list's progress,
activity and time per item, then the study page's progress bar per task and the per-annotator table; both
pages clean under axe-core."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from studies.models import Assignment, StudyItem
from studies.services.studies import StudySpec, assignment_skip, assignment_submit, study_create
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_shows_a_studys_progress_time_and_agreement_at_a_glance(
    live_server: Any,
    page: Any,
    small_dataset: Dataset,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
) -> None:
    study = study_create(
        spec=StudySpec(
            name="Glance",
            dataset=small_dataset,
            tasks=["factuality", "feqa"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        ),
    ).study
    factuality = study.tasks.get(task="factuality")
    items = list(StudyItem.objects.filter(study_task=factuality).order_by("pk"))
    # Two factuality items done by all three (carol says no once), at 10, 20 and 30 s each.
    for item in items[:2]:
        for assignment in Assignment.objects.filter(item=item).select_related("annotator"):
            label = "no" if assignment.annotator == carol and item == items[0] else "yes"
            seconds = {"alice": 10, "bob": 20, "carol": 30}[assignment.annotator.username]
            assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": label}, seconds=seconds)
    # alice cannot judge one FEQA item.
    feqa_item = Assignment.objects.filter(annotator=alice, item__study_task__task="feqa").order_by("pk").first()
    assignment_skip(assignment_id=feqa_item.pk, user=alice, reason="not_english", note="")

    open_as(page, live_server.url, rita, reverse("studies"))
    bar = page.get_by_role("progressbar", name="Items done: Glance")
    assert bar.get_attribute("aria-valuenow") == "2"
    assert bar.get_attribute("aria-valuemax") == str(StudyItem.objects.filter(study_task__study=study).count())
    row = page.locator(f"tr[data-study='{study.pk}']")
    assert row.locator("td.active").inner_text() == "3"
    assert row.locator("td.median-time").inner_text() == "20 s"
    assert serious_violations(page) == []

    page.get_by_role("link", name="Glance").click()
    page.wait_for_selector("#annotator-glance")
    factuality_bar = page.get_by_role("progressbar", name="Items done: Factuality")
    assert factuality_bar.get_attribute("aria-valuenow") == "2"
    assert factuality_bar.get_attribute("aria-valuemax") == str(len(items))
    assert page.get_by_role("progressbar", name="Items done: FEQA").get_attribute("aria-valuenow") == "0"
    table = page.locator("#annotator-glance")
    carol_row = table.locator("tr[data-annotator='carol']")
    assert carol_row.locator("td.median-time").inner_text() == "30 s"
    # carol against alice and bob: no on item 0 (they said yes), yes on item 1 (so did they).
    assert carol_row.locator("td.agreement").inner_text() == "50% of 2 units"
    # alice: on item 0 the others tie (bob yes, carol no), on item 1 they say yes as she did.
    assert table.locator("tr[data-annotator='alice'] td.agreement").inner_text() == "100% of 1 unit"
    # The items each annotator could not judge, in both per-annotator tables.
    assert [table.locator(f"tr[data-annotator='{name}'] td.skipped").inner_text() for name in ("alice", "bob")] == [
        "1",
        "0",
    ]
    assert page.locator("#annotator-progress tr[data-annotator='alice'] td.skipped").inner_text() == "1"
    assert serious_violations(page) == []
