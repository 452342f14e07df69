from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command

from corpus.models import Dataset
from tests.conftest import DATA, PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page: Any, base_url: str, username: str) -> None:
    page.goto(base_url + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(base_url + "/studies/")


def test_it_draws_the_plots_from_local_assets_and_follows_a_disagreement(
    live_server: Any, page: Any, rita: AbstractUser
) -> None:
    call_command(
        "import_dataset", str(DATA / "frank_xsum_sample" / "xsum_hallucination"), "--format", "maynez",
        "--name", "sample", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    dataset = Dataset.objects.get(name="sample")
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    log_in(page, live_server.url, "rita")
    page.click("nav >> text=Datasets")
    page.click(f"text={dataset.name}")
    page.wait_for_selector("figure[data-chart=scatter] svg")

    # Twelve summaries have both scores; every point is drawn inside the plot's frame.
    points = page.locator("figure[data-chart=scatter] circle.point")
    assert points.count() == 12
    frame = page.locator("figure[data-chart=scatter] svg").bounding_box()
    for box in (points.nth(i).bounding_box() for i in range(points.count())):
        assert frame["x"] <= box["x"] <= frame["x"] + frame["width"]
        assert frame["y"] <= box["y"] <= frame["y"] + frame["height"]
    assert page.locator("figure[data-chart=histogram] rect.bar").count() == 20

    # Choosing another human score and method redraws the table.
    page.select_option("select[name=human]", "Factual")
    page.select_option("select[name=method]", "kendall")
    page.click("#correlations button[type=submit]")
    page.wait_for_url("**human=Factual**")
    assert page.locator("table.correlations th", has_text="Kendall").count() == 1
    assert page.locator("table.correlations tbody tr").count() == 5

    # Nothing came from another host: the page and its assets are served by FaithAnno itself.
    assert requested and all(url.startswith(live_server.url) for url in requested)

    # The disagreement list of the imported labels links to the item with every annotator's labels.
    page.locator("section.agreement[data-task=factuality] table.disagreements a").first.click()
    page.wait_for_selector("table.item-labels")
    assert page.locator("table.item-labels thead th").count() == 4  # the unit and three workers
