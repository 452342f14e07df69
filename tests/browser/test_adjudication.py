"""The adjudication page driven by the keyboard only, in real Chromium, axe-core clean (issue 16, point 1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from review.services.adjudication import study_final_labels_compute
from studies.models import Assignment, FinalLabel, Study
from studies.services.studies import assignment_submit
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def disagree(study: Study, alice: AbstractUser, bob: AbstractUser) -> Any:
    """alice: every unit correct; bob: the first item's units incorrect (ties), the rest correct."""
    first = None
    for assignment in Assignment.objects.filter(item__study_task__study=study).order_by("item_id", "annotator_id"):
        units = units_of(assignment)
        if first is None:
            first = assignment.item
        label = "incorrect" if assignment.annotator == bob and assignment.item_id == first.pk else "correct"
        assignment_submit(assignment=assignment, user=assignment.annotator, labels={u.index: label for u in units})
    return first


def test_it_lets_a_researcher_adjudicate_an_item_with_the_keyboard_only(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    item = disagree(bertscore_study, alice, bob)
    study_final_labels_compute(study=bertscore_study, method="wawa")
    units = [unit.index for unit in units_of(Assignment.objects.filter(item=item).first())]
    assert len(units) >= 3
    open_as(page, live_server.url, rita, reverse("adjudication_queue", args=[bertscore_study.pk]))
    assert serious_violations(page) == []
    page.click(f"tr[data-item='{item.pk}'] a")
    page.wait_for_function("document.querySelector('tr.adjudication-unit[aria-current=true]') !== null")
    assert serious_violations(page) == []
    current = "document.querySelector('tr.adjudication-unit[aria-current=true]').dataset.unit"
    assert page.evaluate(current) == str(units[0])

    # 2 picks "Incorrect" for the first unit, Enter saves it and moves on.
    page.keyboard.press("2")
    assert page.get_attribute(f"tr[data-unit='{units[0]}'] button[data-value='incorrect']", "aria-pressed") == "true"
    page.keyboard.press("Enter")
    page.wait_for_function(f"{current} === '{units[1]}'")
    # g accepts the aggregated label (Wawa's) of the second unit and moves on; m writes a note first.
    page.keyboard.press("m")
    # Every shortcut key typed into the note is text: nothing is picked, accepted or moved.
    page.keyboard.type("both readings fit: jkaugmnp 123 ?")
    assert page.evaluate(current) == str(units[1])
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    page.wait_for_function(f"{current} === '{units[2]}'")
    # k goes back; j forward again; u leaves the third unit unresolved.
    page.keyboard.press("k")
    page.wait_for_function(f"{current} === '{units[1]}'")
    page.keyboard.press("j")
    page.keyboard.press("u")
    page.wait_for_function("document.getElementById('adjudication-status').textContent.includes('unresolved')")

    rows = {row.unit_index: row for row in FinalLabel.objects.filter(item=item)}
    first, second, third = rows[units[0]], rows[units[1]], rows[units[2]]
    assert (first.label, first.status, first.adjudicated_by) == ("incorrect", "adjudicated", rita)
    assert (second.status, second.method, second.note) == (
        "adjudicated",
        "aggregated:wawa",
        "both readings fit: jkaugmnp 123 ?",
    )
    assert second.label == second.aggregated_label != ""
    assert (third.label, third.status, third.adjudicated_by) == ("", "unresolved", rita)
    cell = page.text_content(f"tr[data-unit='{units[0]}'] td.final") or ""
    assert "incorrect" in cell and "adjudicated by rita" in cell
    # a on a tie has no majority: the page says why and nothing changes.
    for _ in units:
        page.keyboard.press("k")  # back to the first unit (k stops there)
    page.wait_for_function(f"{current} === '{units[0]}'")
    page.keyboard.press("a")
    page.wait_for_function("document.getElementById('adjudication-status').textContent.includes('Not saved')")
    assert "no majority" in (page.text_content("#adjudication-status") or "")
    assert FinalLabel.objects.get(pk=first.pk).version == first.version
    page.keyboard.press("?")
    assert page.is_visible("#help") and serious_violations(page) == []
    assert "accept the majority" in (page.text_content("#help-rows") or "")
