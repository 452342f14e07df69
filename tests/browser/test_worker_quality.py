"""A researcher decides about workers in Chromium (issue 14, points 7-9): the study page links to the worker
quality page, which shows the live progress and every worker; excluding one (with a reason) takes their
labels out of the analysis page at once, setting a bonus and payment rules shows in the payment preview,
and the page is clean under axe-core."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from studies.models import Participation, Study
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_excludes_a_worker_sets_a_bonus_and_shows_payments(
    live_server: Any, page: Any, crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    open_as(page, live_server.url, rita, reverse("study_detail", args=[crowd_study.pk]))
    page.get_by_role("link", name="Worker quality").click()
    page.wait_for_selector("#worker-quality")
    assert page.locator("#live-at-k").inner_text().startswith("2 of ")
    assert page.locator("#live-active").inner_text() == "3"
    carol_row = page.locator("#worker-quality tr[data-annotator='carol']")
    assert carol_row.locator("td.agreement").inner_text().startswith("0%")
    assert carol_row.locator("td.checks").inner_text() == "—"
    assert serious_violations(page) == []

    # An exclusion needs a reason: the browser refuses an empty one before anything is sent.
    carol_row.get_by_role("button", name="Exclude").click()
    assert not Participation.objects.filter(excluded=True).exists()
    carol_row.get_by_label("Reason to exclude carol").fill("said no to everything in 2 s")
    carol_row.get_by_role("button", name="Exclude").click()
    page.wait_for_selector("#worker-quality tr[data-annotator='carol'][data-excluded='true']")
    assert (
        "said no to everything in 2 s"
        in page.locator("#worker-quality tr[data-annotator='carol'] td.standing").inner_text()
    )

    page.goto(live_server.url + reverse("study_analysis", args=[crowd_study.pk]))
    assert "1 excluded annotator left out" in page.locator("#judgement-set").inner_text()
    page.get_by_role("link", name="Include all judgements").click()
    page.wait_for_selector("#judgement-set[data-judgements='all']")

    page.goto(live_server.url + reverse("study_quality", args=[crowd_study.pk]))
    alice_row = page.locator("#worker-quality tr[data-annotator='alice']")
    alice_row.get_by_label("Bonus for alice").fill("0.50")
    alice_row.get_by_role("button", name="Set bonus").click()
    page.wait_for_selector("#worker-quality tr[data-annotator='alice'] .bonus:text('0.50')")
    rules = page.locator("#payment-rules")
    rules.get_by_label("Per item done").fill("0.10")
    with page.expect_navigation():  # the preview is on the page before the rules are saved too
        rules.get_by_role("button", name="Save rules").click()
    page.wait_for_selector("#payment-rules input[name='per_item'][value='0.10']")
    preview = page.locator("#payment-preview tr[data-annotator='alice'] td.total")
    assert preview.inner_text() == "0.70"
    # alice 0.20 + 0.50, bob 0.20, carol (excluded: per item only) 0.20.
    assert page.locator("#payment-total").inner_text() == "1.10"
    assert page.locator("#live-cost").inner_text() == "1.10 GBP"
    assert serious_violations(page) == []
