from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from studies.models import Assignment, Judgement, Study
from studies.selectors.assignments import item_units
from tests.conftest import PASSWORD, units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def tab_to(page: Any, text: str, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if text in (page.evaluate("document.activeElement.textContent") or ""):
            return
    raise AssertionError(f"Tab never reached an element reading {text!r}")


def log_in_with_keyboard(page: Any, base_url: str, username: str) -> None:
    page.goto(base_url + "/accounts/login/")
    page.wait_for_function("document.activeElement && document.activeElement.id === 'id_username'")
    page.keyboard.type(username)  # the username field has the focus on load
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(base_url + "/annotate/")


def test_it_lets_an_annotator_judge_an_item_with_the_keyboard_only(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    log_in_with_keyboard(page, live_server.url, "alice")
    tab_to(page, "Continue annotation")
    page.keyboard.press("Enter")
    page.wait_for_selector("button.unit")

    assignment = Assignment.objects.filter(annotator=alice).order_by("position").first()
    assert page.url.endswith(f"/annotate/{assignment.pk}/")
    units = sorted(units_of(assignment), key=lambda u: u.index)
    submit = page.locator("#submit")

    page.keyboard.press("ArrowRight")  # focuses the first word
    first = page.locator("button.unit").first
    assert first.evaluate("el => el === document.activeElement")
    lit = page.locator(".src-token.lit")
    assert lit.count() >= 1
    shown = item_units(assignment.item, with_document=True)[0].extra["alignment"]["sources"]
    assert lit.all_text_contents() == [text for _, _, text in sorted(shown)]  # whole source words

    for number, _ in enumerate(units):
        assert submit.is_disabled()
        assert (
            f"{len(units) - number} of {len(units)} words still to judge" in page.locator("#remaining").text_content()
        )
        page.keyboard.press("1" if number % 2 == 0 else "2")
    assert submit.is_enabled()
    assert submit.evaluate("el => el === document.activeElement")  # the last label moves focus to submit
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: f"/annotate/{assignment.pk}/" not in url)

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.time_spent >= 0
    stored = dict(Judgement.objects.filter(assignment=assignment).values_list("unit_index", "label"))
    assert stored == {u.index: ("correct" if n % 2 == 0 else "incorrect") for n, u in enumerate(units)}

    page.goto(live_server.url + "/annotate/")
    row = page.locator(f'tr[data-assignment="{assignment.pk}"]')
    assert "Done" in row.locator(".status").text_content()
    assert row.locator("a").text_content().strip() == "Edit"


def test_it_keeps_unsubmitted_labels_across_a_reload(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    log_in_with_keyboard(page, live_server.url, "alice")
    assignment = Assignment.objects.filter(annotator=alice).order_by("position").first()
    page.goto(f"{live_server.url}/annotate/{assignment.pk}/")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("3")
    page.keyboard.press("2")
    page.locator("#comment").fill("half done")
    page.reload()
    page.wait_for_selector("button.unit")
    units = page.locator("button.unit")
    assert "label-dont_know" in units.nth(0).get_attribute("class")
    assert "label-incorrect" in units.nth(1).get_attribute("class")
    assert page.locator("#comment").input_value() == "half done"
    assert page.locator("#submit").is_disabled()
    assert not Judgement.objects.filter(assignment=assignment).exists()
