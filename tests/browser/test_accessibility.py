"""axe-core (pinned in package.json, loaded from node_modules: never a CDN) in Chromium on every page of the
product, as each role sees it: no serious or critical violation (issue 13, point 9). The annotation views
are checked on load and with a dialog open."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from protocols.tasks import STUDY_TASKS
from studies.models import Assignment, Study
from tests.browser.conftest import open_as

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
# axe's report, one line per failing rule: rule, impact, what it asks, and the first offending elements.
RUN_AXE = """async (impacts) => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.filter((v) => impacts.includes(v.impact)).map((v) =>
    `${location.pathname}: ${v.id} (${v.impact}): ${v.help}: ` +
    v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', '));
}"""


@functools.cache
def axe_source() -> str:
    assert AXE.exists(), f"{AXE} is missing: run `npm ci` (bin/test does)"
    return AXE.read_text(encoding="utf-8")


def serious_violations(page: Any) -> list[str]:
    # page.evaluate runs through the DevTools protocol, which the Content-Security-Policy does not govern.
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source())
    return page.evaluate(RUN_AXE, list(SERIOUS))


def check_pages(page: Any, base_url: str, user: AbstractUser | None, paths: list[str]) -> list[str]:
    found: list[str] = []
    for number, path in enumerate(paths):
        if number == 0 and user is not None:
            open_as(page, base_url, user, path)
        else:
            page.goto(base_url + path)
        page.wait_for_load_state("load")
        found += serious_violations(page)
    return found


def test_it_finds_no_serious_violation_on_the_pages_signed_out(live_server: Any, page: Any) -> None:
    paths = [reverse("login"), reverse("password_reset"), "/no-such-page/"]
    assert check_pages(page, live_server.url, None, paths) == []


def test_it_finds_no_serious_violation_on_the_annotators_pages(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignments = [
        Assignment.objects.filter(annotator=alice, item__study_task__task=task).order_by("position").first()
        for task in STUDY_TASKS
    ]
    paths = [reverse("dashboard"), reverse("api_token"), reverse("password_change"), "/no-such-page/"]
    found = check_pages(page, live_server.url, alice, paths)
    for assignment in assignments:
        page.goto(live_server.url + reverse("annotate", args=[assignment.pk]))
        page.wait_for_function("document.getElementById('remaining').textContent.length > 0")
        found += serious_violations(page)
        page.keyboard.press("?")  # the help dialog open over the view
        found += serious_violations(page)
        page.keyboard.press("Escape")
    assert found == []


def test_it_finds_no_serious_violation_on_the_researchers_pages(
    live_server: Any, page: Any, task_study: Study, rita: AbstractUser
) -> None:
    study_task = task_study.tasks.order_by("pk").first()
    item = study_task.items.order_by("pk").first()
    summaries = list(item.summary.document.summaries.order_by("pk")[:2])
    dataset = task_study.dataset.pk
    paths = [
        reverse("studies"),
        reverse("study_new"),
        reverse("study_detail", args=[task_study.pk]),
        reverse("study_task_guidelines", args=[task_study.pk, study_task.pk]),
        reverse("study_task_examples", args=[task_study.pk, study_task.pk]),
        reverse("study_analysis", args=[task_study.pk]),
        reverse("datasets"),
        reverse("dataset_analysis", args=[dataset]),
        reverse("dataset_documents", args=[dataset]),
        reverse("dataset_summaries", args=[dataset]),
        reverse("analysis_item", args=[item.pk]),
        reverse("summary_inspect", args=[summaries[0].pk]),
        f"{reverse('summary_compare')}?a={summaries[0].pk}&b={summaries[1].pk}",
    ]
    assert check_pages(page, live_server.url, rita, paths) == []
