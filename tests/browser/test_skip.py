"""'Cannot judge' in the browser (issue 13, point 6): an annotator marks an item not English with a note, by
keyboard, lands on the next item; the researcher's study page shows the count and the note, and the item is
offered to another annotator. The dashboard groups the queue and filters it. axe-core finds no serious
violation in the open dialog, the skip list or the filtered dashboard."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from studies.models import Assignment, Judgement, Study
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_task_views import open_task_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_flags_an_item_not_english_and_gives_it_to_someone_else(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    bertscore_study.annotators.add(carol)
    first, second = Assignment.objects.filter(annotator=alice).order_by("position")[:2]
    open_task_view(page, live_server, alice, f"/annotate/{first.pk}/")
    dialog = page.locator("#skip-dialog")
    page.locator("#cannot-judge").focus()
    page.keyboard.press("Enter")  # keyboard reachable: a button, no single-key shortcut
    assert dialog.evaluate("el => el.open")
    assert serious_violations(page) == []
    page.keyboard.press("ArrowDown")  # the reasons are radio buttons: the second is "Not English"
    assert page.locator("input[name=reason]:checked").get_attribute("value") == "not_english"
    page.keyboard.press("1")  # a label's key on a reason: no label is chosen behind the dialog
    page.keyboard.press("n")  # nor does "next item" leave
    assert page.url.endswith(f"/annotate/{first.pk}/") and dialog.evaluate("el => el.open")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-note"
    page.keyboard.type("Welsh, 1 paragraph; n")  # typed into the note, never taken as shortcuts
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # "Mark cannot judge and go on"
    page.wait_for_url(f"**/annotate/{second.pk}/")
    first.refresh_from_db()
    assert (first.status, first.skip_reason, first.skip_note) == ("skipped", "not_english", "Welsh, 1 paragraph; n")
    assert not Judgement.objects.filter(assignment=first).exists()

    open_as(page, live_server.url, rita, f"/studies/{bertscore_study.pk}/")
    skips = page.locator("#skips")
    assert skips.locator("#skip-counts tr[data-task=bertscore] .skip-total").inner_text() == "1"
    assert "Not English: 1" in skips.locator("#skip-counts").inner_text()
    skips.locator("summary").click()
    row = skips.locator(f'#skip-list tr[data-assignment="{first.pk}"]')
    assert "alice" in row.inner_text() and row.locator(".skip-note").inner_text() == "Welsh, 1 paragraph; n"
    assert serious_violations(page) == []

    offered = Assignment.objects.get(item=first.item, annotator=carol)
    open_as(page, live_server.url, carol, "/annotate/")
    assert page.locator(f'tr[data-assignment="{offered.pk}"]').is_visible()
    page.locator("a.button.primary", has_text="Continue annotation").click()
    page.wait_for_url(f"**/annotate/{offered.pk}/")


def test_it_asks_for_a_note_when_the_reason_is_other_and_cancels_with_escape(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    first = Assignment.objects.filter(annotator=alice).order_by("position").first()
    open_task_view(page, live_server, alice, f"/annotate/{first.pk}/")
    page.locator("#cannot-judge").click()
    page.locator("input[name=reason][value=other]").check()
    page.locator("#skip-send").click()
    assert "Say in the note" in page.locator("#skip-error").inner_text()
    assert page.evaluate("document.activeElement.id") == "skip-note"
    page.keyboard.press("Escape")
    assert not page.locator("#skip-dialog").evaluate("el => el.open")
    first.refresh_from_db()
    assert first.status == Assignment.Status.ASSIGNED


def test_it_filters_the_grouped_dashboard(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    mine = Assignment.objects.filter(annotator=alice)
    open_as(page, live_server.url, alice, "/annotate/")
    assert page.locator("tr[data-assignment]").count() == mine.count()
    study = page.locator(f'section.queue-study[data-study="{bertscore_study.pk}"]')
    assert f"0 / {mine.count()} done" in study.locator(".study-progress").inner_text()
    page.locator("#filter-q").fill("Bridge closure")
    page.locator("#filter-q").press("Enter")
    page.wait_for_url("**q=Bridge*")
    bridge = mine.filter(item__summary__document__title="Bridge closure").count()
    assert 0 < bridge < mine.count()
    assert page.locator("tr[data-assignment]").count() == bridge
    assert f"{bridge} of {mine.count()} items match." in page.locator("#filter-count").inner_text()
    assert serious_violations(page) == []
