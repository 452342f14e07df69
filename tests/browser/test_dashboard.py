"""A fresh annotator's dashboard (issue 13, point 4): asking for the next item with nothing assigned shows
only "Nothing is assigned to you yet", never "Everything assigned to you is done" above it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from tests.browser.conftest import open_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_tells_a_fresh_annotator_only_that_nothing_is_assigned_yet(
    live_server: Any, page: Any, carol: AbstractUser
) -> None:
    open_as(page, live_server.url, carol, "/annotate/next/")
    text = page.locator("main").inner_text()
    assert "Nothing is assigned to you yet" in text
    assert "Everything assigned to you is done" not in text
