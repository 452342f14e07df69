"""A researcher starts an LLM judge from the study page in Chromium (issue 16 point 4), against a local
OpenAI-compatible chat server the test starts; the run's row shows the model rater, its counts and the
failures' reasons; the key typed in is never shown again; the page stays clean under axe-core."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset
from judges.models import JudgeRun
from studies.services.studies import StudySpec, study_create
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations
from tests.judges.chat_server import Reply, chat_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SECRET = "sk-browser-secret-42"


@pytest.fixture
def eager_worker(settings: Any) -> Iterator[None]:
    """The run's Celery task runs in the live server's request once it commits (eager: no broker)."""
    from faithanno.celery import app

    settings.FAITHANNO_LLM_BACKOFF_SECONDS = 0
    settings.FAITHANNO_LLM_TRIES = 2
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


def test_it_starts_an_llm_judge_from_the_study_page(
    live_server: Any,
    page: Any,
    small_dataset: Dataset,
    alice: AbstractUser,
    bob: AbstractUser,
    rita: AbstractUser,
    eager_worker: None,
) -> None:
    study = study_create(
        spec=StudySpec(
            name="Judged", dataset=small_dataset, tasks=["factuality"], annotators=[alice, bob], annotators_per_item=2
        )
    ).study
    study.researchers.add(rita)
    answers = iter(
        [json.dumps({"judgements": [{"unit": 0, "label": "perhaps"}]})] * 2
        + [json.dumps({"judgements": [{"unit": 0, "label": "yes"}]})] * 100
    )
    with chat_server(lambda body: Reply(next(answers))) as server:
        open_as(page, live_server.url, rita, reverse("study_detail", args=[study.pk]))
        form = page.locator("#judge-form")
        form.get_by_label("Endpoint").fill(server.url)
        form.get_by_label("Model:", exact=True).fill("tiny-judge")
        form.get_by_label("API key").fill(SECRET)
        form.get_by_label("Budget: requests").fill("50")
        form.get_by_role("button", name="Start the LLM judge").click()
        page.wait_for_selector("#judge-runs")
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.DONE and run.failed == 1 and run.judged == run.items_total - 1
    assert set(server.authorizations) == {f"Bearer {SECRET}"}
    row = page.locator(f"#judge-runs tr[data-run='{run.pk}']").first
    assert "tiny-judge" in row.inner_text() and "model)" in row.inner_text()
    assert row.locator("td.status").inner_text().startswith("Done")
    failure = page.locator("#judge-runs tr.failure")
    assert "'perhaps' is not a choice of task 'factuality'" in failure.inner_text()
    # The key is neither in the page nor in the form, which asks for it afresh.
    assert SECRET not in page.content() and page.locator("#judge-form").get_by_label("API key").input_value() == ""
    # The human progress table lists the people only.
    assert page.locator("#annotator-progress tr[data-annotator]").count() == 2
    assert "LLM judge run" in page.get_by_role("status").inner_text()
    assert serious_violations(page) == []
