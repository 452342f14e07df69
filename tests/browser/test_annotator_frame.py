"""The annotator frame's feedback (issue 13, point 6): a chosen answer looks chosen (filled, with a check
mark) and unlike the focus ring; an incomplete submit says how many are missing and takes the annotator to
the first missing unit; the help opens at its top."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from studies.models import Assignment, Judgement, Study
from tests.browser.conftest import SUMMARIES
from tests.browser.test_task_views import open_item, open_task_view
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOOK = """el => {
  const style = getComputedStyle(el), mark = getComputedStyle(el, '::before').content;
  return {background: style.backgroundColor, color: style.color, outline: style.outlineStyle, mark};
}"""
WHITE = "rgb(255, 255, 255)"
FOCUSED = "() => document.activeElement ? (document.activeElement.id || document.activeElement.dataset.index) : null"


def test_it_fills_the_chosen_answer_with_a_check_mark_unlike_the_focus_ring(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    open_item(page, live_server, alice, "factuality")
    yes, no = page.locator(".choice[data-value=yes]"), page.locator(".choice[data-value=no]")
    assert yes.evaluate(LOOK)["background"] == WHITE and yes.evaluate(LOOK)["mark"] == "none"
    page.keyboard.press("2")  # no: chosen, and the focus moves on to Submit
    assert no.get_attribute("aria-pressed") == "true" and yes.get_attribute("aria-pressed") == "false"
    chosen = no.evaluate(LOOK)
    assert chosen["background"] != WHITE and chosen["color"] == WHITE
    assert "✓" in chosen["mark"] and chosen["outline"] == "none"
    yes.focus()  # focused, not chosen: the ring only
    focused = yes.evaluate(LOOK)
    assert focused["outline"] == "solid" and focused["background"] == WHITE and focused["mark"] == "none"


def test_it_says_what_is_missing_and_goes_there_when_an_incomplete_item_is_submitted(
    live_server: Any, page: Any, long_article_study: Study, alice: AbstractUser
) -> None:
    assignment = Assignment.objects.get(
        annotator=alice, item__study_task__task="entailment", item__summary__text=SUMMARIES[0]
    )
    open_task_view(page, live_server, alice, f"/annotate/{assignment.pk}/")
    submit, status = page.locator("#submit"), page.locator("#save-status")
    assert submit.get_attribute("aria-disabled") == "true" and not submit.evaluate("el => el.disabled")
    page.locator("#comment").focus()
    submit.click(force=True)  # the button: it looks disabled, and still answers
    assert "Not submitted yet: 3 missing" in status.text_content()
    assert page.evaluate(FOCUSED) == "0"  # the first sentence
    page.keyboard.press("3")
    page.keyboard.press("4")  # the first two judged: the third is the one missing
    page.locator("#summary .unit[data-index='0']").focus()
    page.keyboard.press("Control+Enter")
    assert "Not submitted yet: 1 missing" in status.text_content()
    assert page.evaluate(FOCUSED) == "2"
    # The draft of the two judgements is saved in the background after the submit: it reports in a live
    # region of its own and never replaces what is missing.
    page.wait_for_function("document.getElementById('draft-status').textContent === 'Draft saved.'")
    assert "Not submitted yet: 1 missing" in status.text_content()
    assert page.locator("#draft-status").get_attribute("role") == "status"
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and not Judgement.objects.filter(assignment=assignment)


def test_it_takes_the_annotator_to_the_first_open_question_of_qgqa(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "qgqa")
    units = units_of(assignment)
    page.keyboard.press("ArrowRight")  # answer question 2 first
    page.keyboard.press("1")
    page.keyboard.press("1")
    page.keyboard.press("Control+Enter")
    assert "Not submitted yet: 2 missing" in page.locator("#save-status").text_content()
    assert page.locator("#question-title").text_content().startswith(f"Question 1 / 2: {units[0].text}")
    first_statement = page.locator(".statement").first
    assert first_statement.evaluate("el => el.contains(document.activeElement)")


def test_it_opens_the_help_at_its_top(live_server: Any, page: Any, task_study: Study, alice: AbstractUser) -> None:
    page.set_viewport_size({"width": 1280, "height": 480})
    open_item(page, live_server, alice, "entailment")
    page.keyboard.press("?")
    help_dialog = page.locator("#help")
    assert help_dialog.evaluate("el => el.open && el.scrollHeight > el.clientHeight")  # it has to scroll
    assert help_dialog.evaluate("el => el.scrollTop") == 0
    assert page.evaluate(FOCUSED) == "help-title"
    title = page.locator("#help-title").bounding_box()
    assert title["y"] >= 0 and title["y"] + title["height"] <= 480
    page.keyboard.press("Escape")
    assert not help_dialog.evaluate("el => el.open")
