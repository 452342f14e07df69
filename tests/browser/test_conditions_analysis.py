"""The study analysis page's Conditions section in Chromium: each condition's row, the comparison with the
reference, the judgement set switch, and no serious accessibility violation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from studies.services.participation import participation_exclude
from tests.analysis.test_conditions import HIDDEN, conditions_study
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations
from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_compares_the_conditions_on_the_analysis_page(
    live_server: Any,
    page: Any,
    small_dataset: Dataset,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
) -> None:
    others = [make_user(name, "annotator") for name in HIDDEN]
    study = conditions_study(small_dataset, [alice, bob, carol, *others], rita)
    participation_exclude(study=study, annotator=carol, reason="careless", by=rita)
    open_as(page, live_server.url, rita, reverse("study_analysis", args=[study.pk]))
    section = page.locator("#conditions section.condition-task[data-task=factuality]")
    shown = section.locator("table.condition-summary tr[data-condition=shown]")
    hidden = section.locator("table.condition-summary tr[data-condition=hidden]")
    assert "(reference)" in shown.locator("th").inner_text()
    assert shown.locator("td").nth(0).inner_text() == "2"  # carol is excluded: accepted work only
    assert hidden.locator("td").nth(0).inner_text() == "3"
    assert "30.0 (30.0," in shown.locator("td.time").inner_text()
    contrast = section.locator("table.condition-contrasts tr[data-condition=hidden]")
    assert contrast.locator("td.time-difference").inner_text().startswith("-20.0")
    assert "undefined: no final labels yet" in contrast.locator("td.gold-difference").inner_text()
    # Shown: everybody says yes but carol once; without her a single label is in use, so alpha is undefined.
    assert "undefined" in shown.locator("td.alpha").inner_text()
    assert "1000 bootstrap resamples" in page.locator("#conditions").inner_text()
    assert serious_violations(page) == []

    page.click("#judgement-set a")
    page.wait_for_url("**judgements=all**")
    shown = page.locator("#conditions table.condition-summary tr[data-condition=shown]")
    assert shown.locator("td").nth(0).inner_text() == "3"
    # With carol's "no", alpha is defined (her one disagreement is as likely as chance: 0); resamples without
    # her first item are not, and are counted.
    alpha = shown.locator("td.alpha").inner_text()
    assert alpha.startswith("0.000 [") and "resamples undefined" in alpha
