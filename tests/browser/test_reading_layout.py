"""The annotation frame at a laptop's 1280x720 (issue 13, point 1): the source document takes the viewport's
height and stays in view while judging, every highlight is scrolled into the part of the pane the annotator
sees, and the judge buttons are above the fold from a task's first item on (its description is folded after
that item unless the annotator opens it again)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from studies.models import Assignment, Study
from tests.browser.conftest import LONG_SUMMARY, SUMMARIES, open_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT_HEIGHT = 720
RECT = "el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, height: r.height}; }"
# Whether an element lies inside the part of its scrolling pane that is on the screen.
IN_VISIBLE_PANE = """el => {
  const r = el.getBoundingClientRect(), p = document.getElementById('source').getBoundingClientRect();
  const top = Math.max(p.top, 0), bottom = Math.min(p.bottom, window.innerHeight);
  return r.top >= top - 1 && r.bottom <= bottom + 1;
}"""


def open_item(page: Any, live_server: Any, alice: AbstractUser, assignment: Assignment) -> None:
    open_as(page, live_server.url, alice, f"/annotate/{assignment.pk}/")
    page.wait_for_function("document.getElementById('remaining').textContent.length > 0")


def entailment_items(alice: AbstractUser) -> list[Assignment]:
    assignments = Assignment.objects.filter(
        annotator=alice, item__study_task__task="entailment", item__summary__text__in=SUMMARIES
    )
    return list(assignments.order_by("position"))


def assert_readable(page: Any) -> None:
    """The pane is as tall as the window allows, the lit sentences are in its visible part, the buttons on screen."""
    pane = page.locator(".source-pane").evaluate(RECT)
    assert pane["height"] >= VIEWPORT_HEIGHT - 24
    assert page.locator("#source").evaluate("el => el.clientHeight") >= 560
    lit = page.locator("#source .src-sentence.top")
    assert lit.count() == 3
    assert lit.locator("xpath=self::*[@data-rank='1']").evaluate(IN_VISIBLE_PANE)
    buttons = page.locator(".choices").evaluate(RECT)
    assert buttons["top"] >= 0 and buttons["bottom"] <= VIEWPORT_HEIGHT
    assert page.evaluate("window.scrollY") == 0  # only the pane scrolled to the highlight, not the page


def test_it_fills_the_window_with_the_document_and_scrolls_every_highlight_into_the_pane(
    live_server: Any, page: Any, long_article_study: Study, alice: AbstractUser
) -> None:
    first, second = entailment_items(alice)
    open_item(page, live_server, alice, first)
    # The first item of the task: the description is open, and still the buttons are above the fold.
    assert page.locator(".task-description").get_attribute("open") is not None
    assert_readable(page)
    for sentence in (2, 3):  # the lit sentences of the next ones are at the article's end, then its start
        page.keyboard.press("3")
        assert page.locator("#summary .unit.current").get_attribute("data-index") == str(sentence - 1)
        assert_readable(page)
        lit = page.locator("#source .src-sentence.top")
        assert all(lit.nth(n).evaluate(IN_VISIBLE_PANE) for n in range(3))  # close together: all three shown

    # Every later item of the task starts with the description folded.
    open_item(page, live_server, alice, second)
    assert page.locator(".task-description").get_attribute("open") is None
    assert_readable(page)
    # Opened again, it stays open on the next items (here: the same one, reloaded) until closed.
    page.locator(".task-description summary").click()
    page.wait_for_function("localStorage.getItem('faithanno:description-closed:entailment') === '0'")
    open_item(page, live_server, alice, second)
    assert page.locator(".task-description").get_attribute("open") is not None
    # The first item shows it open again after a reload too, until it was closed there.
    page.locator(".task-description summary").click()
    page.wait_for_function("localStorage.getItem('faithanno:description-closed:entailment') === '1'")
    open_item(page, live_server, alice, first)
    assert page.locator(".task-description").get_attribute("open") is None


def test_it_keeps_the_document_in_view_while_the_work_pane_scrolls(
    live_server: Any, page: Any, long_article_study: Study, alice: AbstractUser
) -> None:
    assignment = Assignment.objects.get(
        annotator=alice, item__summary__text=LONG_SUMMARY, item__study_task__task="sentence_consistency"
    )
    open_item(page, live_server, alice, assignment)
    assert page.evaluate("document.documentElement.scrollHeight") > VIEWPORT_HEIGHT + 300
    last_card = page.locator(".sentence-card").last
    last_card.scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 300
    pane = page.locator(".source-pane").evaluate(RECT)
    assert pane["top"] >= 0 and pane["top"] <= 16 and pane["bottom"] <= VIEWPORT_HEIGHT
    assert pane["height"] >= VIEWPORT_HEIGHT - 24
