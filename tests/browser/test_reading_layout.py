"""The annotation frame at a laptop's 1280x720 (issue 13, point 1): the source document takes the viewport's
height and stays in view while judging, every highlight is scrolled into the part of the pane the annotator
sees, and the judge buttons are above the fold from a task's first item on (its description is folded after
that item unless the annotator opens it again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from annotations.importers import parse
from annotations.models import Assignment, Study, Summary
from annotations.services.corpus import dataset_import
from annotations.services.studies import study_create
from tests.browser.conftest import open_as
from tests.conftest import write_jsonl
from tests.factories import entailment_payload, explanation_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT_HEIGHT = 720
# A news article as long as those that needed 640-912 px of pane (the pane was capped at 374 px).
ARTICLE = " ".join(
    f"In the {number}th paragraph the council of Cardiff said that bridge number {number} will be repaired "
    f"for {number} weeks from Monday, and that drivers should use road A{number} instead."
    for number in range(1, 41)
)
SUMMARIES = [
    "Bridge 33 will be repaired. Drivers should use road A38. Bridge 2 is closed.",
    "Bridge 12 will be repaired for 12 weeks. Drivers should use road A20. Bridge 40 is closed.",
]
# The source sentences lit for each summary sentence: far down the article, at its very end, at its start.
TOPS = [[32, 31, 33], [37, 39, 38], [1, 0, 2]]
# Enough summary sentences for a work pane taller than the window (one card with buttons per sentence).
LONG_SUMMARY = " ".join(f"Bridge {number} will be repaired for {number} weeks." for number in range(1, 11))

RECT = "el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, height: r.height}; }"
# Whether an element lies inside the part of its scrolling pane that is on the screen.
IN_VISIBLE_PANE = """el => {
  const r = el.getBoundingClientRect(), p = document.getElementById('source').getBoundingClientRect();
  const top = Math.max(p.top, 0), bottom = Math.min(p.bottom, window.innerHeight);
  return r.top >= top - 1 && r.bottom <= bottom + 1;
}"""


@pytest.fixture
def long_article_study(tmp_path: Path, alice: AbstractUser, rita: AbstractUser) -> Study:
    record = {
        "id": "long",
        "text": ARTICLE,
        "summaries": [{"system": f"Model{n}", "text": text} for n, text in enumerate([*SUMMARIES, LONG_SUMMARY])],
    }
    batch = parse("jsonl", write_jsonl(tmp_path / "long.jsonl", [record]))
    dataset = dataset_import(name="long", batch=batch).dataset
    for summary in Summary.objects.filter(document__dataset=dataset):
        tops = TOPS if summary.text in SUMMARIES else [[n, n + 1, n + 2] for n in range(10)]
        assert len(summary.document.sentences) == 40 and len(summary.sentences) == len(tops)
        explanation_create(summary, "entailment", entailment_payload(summary, tops), score=None)
    return study_create(
        name="Long article",
        dataset=dataset,
        tasks=["entailment", "sentence_consistency"],
        annotators=[alice],
        annotators_per_item=1,
        created_by=rita,
    ).study


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
