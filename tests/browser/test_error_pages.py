"""Error pages in a real browser: the app's own layout (navigation, stylesheet) for the 4xx a researcher or
an annotator can meet, with nothing blocked by the Content-Security-Policy (checked by the page fixture)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from studies.models import Study
from tests.browser.conftest import open_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assert_error_page(page: Any, status: int, title: str) -> None:
    assert page.locator("[data-testid=error-page] h1").text_content().startswith(title)
    assert f"({status})" in page.locator("[data-testid=error-page] h1").text_content()
    assert page.locator("nav[aria-label=Main]").is_visible()
    # The stylesheet applies: the page is a card on the app's background, not unstyled text.
    assert page.evaluate("getComputedStyle(document.documentElement).backgroundColor") == "rgb(246, 247, 249)"


def test_it_shows_the_compare_pages_refusal_in_the_apps_layout(
    live_server: Any, page: Any, scored_dataset: Dataset, rita: AbstractUser
) -> None:
    first, second = [document.summaries.first() for document in scored_dataset.documents.order_by("pk")[:2]]
    open_as(page, live_server.url, rita, f"{reverse('summary_compare')}?a={first.pk}&b={second.pk}")
    assert_error_page(page, 400, "Bad request")
    assert "Cannot compare" in page.locator("[data-testid=error-page]").text_content()


def test_it_shows_unknown_formats_missing_pages_and_wrong_methods_in_the_apps_layout(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    open_as(page, live_server.url, rita, f"/studies/{bertscore_study.pk}/judgements.xlsx")
    assert_error_page(page, 400, "Bad request")
    assert "use one of csv" in page.locator("[data-testid=error-page]").text_content()
    page.goto(live_server.url + "/no-such-page/")
    assert_error_page(page, 404, "Not found")
    open_as(page, live_server.url, rita, reverse("study_reclaim", args=[bertscore_study.pk]))
    assert_error_page(page, 405, "Not possible this way")
    open_as(page, live_server.url, alice, reverse("studies"))
    assert_error_page(page, 403, "Not allowed")
