"""Starting an LLM judge from the API and the study page (the Celery task in eager mode: the real task, no
broker), against the local chat server; hostile input answers a clear error naming the field and starts
nothing; other researchers' studies and runs answer 404."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.cache import cache
from django.urls import reverse

from corpus.models import Dataset
from judges.models import JudgeRun
from studies.models import Judgement, Study
from studies.services.studies import StudySpec, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for
from tests.judges.chat_server import Reply, chat_server

VALID = json.dumps({"judgements": [{"unit": 0, "label": "no", "note": "wrong number"}]})


@pytest.fixture(autouse=True)
def _no_waiting(settings: Any) -> None:
    settings.FAITHANNO_LLM_BACKOFF_SECONDS = 0


@pytest.fixture
def study(small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser) -> Study:
    return study_create(
        spec=StudySpec(
            name="F",
            dataset=small_dataset,
            tasks=["factuality", "hallucination_spans"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study


def test_it_starts_a_run_from_the_api_and_answers_it_with_every_prompt_but_never_the_key(
    study: Study, rita: AbstractUser, import_worker: Callable[[], Any]
) -> None:
    api = api_client_for(rita)
    with chat_server(lambda body: Reply(VALID)) as server, import_worker():
        response = api.post(
            reverse("api_study_judge_runs", args=[study.pk]),
            {
                "task": "factuality",
                "endpoint": server.url,
                "model": "m1",
                "api_key": "sk-api-secret",
                "max_requests": 2,
            },
            format="json",
        )
    assert response.status_code == 202, response.content
    assert "api_key" not in response.json() and b"sk-api-secret" not in response.content
    run = JudgeRun.objects.get(pk=response.json()["id"])
    assert run.status == JudgeRun.Status.STOPPED and run.judged == 2 and run.api_key == ""
    assert Judgement.objects.filter(assignment__annotator=run.rater.user).count() == 2
    detail = api.get(reverse("api_judge_run", args=[run.pk])).json()
    assert detail["status"] == "stopped" and detail["judged"] == 2 and detail["model"] == "m1"
    items = api.get(reverse("api_judge_run_items", args=[run.pk])).json()
    assert items["count"] == 2 and items["results"][0]["prompt"] == server.requests[0]["messages"]
    assert items["results"][0]["response"] == VALID and items["results"][0]["model"] == "m1"
    listed = api.get(reverse("api_study_judge_runs", args=[study.pk])).json()
    assert [row["id"] for row in listed["results"]] == [run.pk]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endpoint": "file:///etc/passwd"}, "endpoint"),
        ({"endpoint": "http://user:pw@host/v1"}, "endpoint"),
        ({"endpoint": "http://host/v1\x00"}, "endpoint"),
        ({"model": "two words"}, "model"),
        ({"api_key_variable": "SECRET_KEY"}, "api_key_variable"),
        ({"api_key_variable": "DATABASE_URL"}, "api_key_variable"),
        ({"api_key": "sk x"}, "api_key"),
        ({"parameters": {"temperature": "__1e999__"}}, "parameters"),
        ({"parameters": {"temperature": "hot"}}, "parameters"),
        ({"parameters": [1, 2]}, "parameters"),
        ({"max_requests": 0}, "max_requests"),
        ({"max_seconds": 10**12}, "max_seconds"),
        ({"tries": 0}, "tries"),
        ({"task": "hallucination_spans"}, "task"),
        ({"task": "bump"}, "task"),
    ],
)
def test_it_refuses_hostile_input_naming_the_field_and_starts_nothing(
    study: Study, rita: AbstractUser, change: dict[str, Any], field: str
) -> None:
    body = {"task": "factuality", "endpoint": "http://127.0.0.1:9/v1", "model": "m", **change}
    raw = json.dumps(body).replace('"__1e999__"', "1e999")  # a number too large for a float
    response = api_client_for(rita).post(
        reverse("api_study_judge_runs", args=[study.pk]), raw, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert any(key.split(".")[0] == field for key in response.json()), response.json()
    assert not JudgeRun.objects.exists()


def test_other_researchers_and_annotators_cannot_start_or_read_runs(
    study: Study, rita: AbstractUser, ronald: AbstractUser, alice: AbstractUser
) -> None:
    body = {"task": "factuality", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}
    url = reverse("api_study_judge_runs", args=[study.pk])
    assert api_client_for(ronald).post(url, body, format="json").status_code == 404
    assert api_client_for(alice).post(url, body, format="json").status_code == 403
    page = reverse("study_judge_run", args=[study.pk])
    form = {f"judge-{key}": value for key, value in body.items()} | {
        "judge-task": study.tasks.get(task="factuality").pk
    }
    assert client_for(ronald).post(page, form).status_code == 404
    assert not JudgeRun.objects.exists()
    from judges.services import JudgeSpec, judge_run_create

    run = judge_run_create(
        spec=JudgeSpec(study_task=study.tasks.get(task="factuality"), endpoint="http://127.0.0.1:9/v1", model="m")
    )
    for name in ("api_judge_run", "api_judge_run_items"):
        assert api_client_for(ronald).get(reverse(name, args=[run.pk])).status_code == 404
        assert api_client_for(alice).get(reverse(name, args=[run.pk])).status_code == 403
        assert api_client_for(rita).get(reverse(name, args=[run.pk])).status_code == 200
    assert api_client_for(ronald).get(url).status_code == 404


def test_it_starts_a_run_from_the_study_page_form(
    study: Study, rita: AbstractUser, ronald: AbstractUser, import_worker: Callable[[], Any]
) -> None:
    client = client_for(rita)
    detail = client.get(reverse("study_detail", args=[study.pk]))
    form = detail.context["judge_form"]
    # Only the task judged per unit is offered; the span task is not.
    assert [label for _, label in form.fields["task"].choices] == ["Factuality (yes/no)"]
    factuality = study.tasks.get(task="factuality")
    with chat_server(lambda body: Reply(VALID)) as server, import_worker():
        response = client.post(
            reverse("study_judge_run", args=[study.pk]),
            {
                "judge-task": factuality.pk,
                "judge-endpoint": server.url,
                "judge-model": "page-model",
                "judge-api_key": "sk-page-secret",
                "judge-temperature": "0",
                "judge-max_answer_tokens": "100",
                "judge-seed": "",
                "judge-max_requests": "100",
                "judge-max_tokens": "100000",
                "judge-max_minutes": "5",
            },
        )
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.DONE and run.judged == factuality.items.count()
    assert run.rater.parameters == {"temperature": 0.0, "max_tokens": 100, "seed": None}
    page = client.get(reverse("study_detail", args=[study.pk])).content.decode()
    assert "page-model" in page and f"{run.rater.user.username}, model" in page and "sk-page-secret" not in page
    # A temperature of NaN is refused by the form, naming the field; nothing started.
    client.post(
        reverse("study_judge_run", args=[study.pk]),
        {"judge-task": factuality.pk, "judge-endpoint": "http://x/v1", "judge-model": "m", "judge-temperature": "nan"},
    )
    assert JudgeRun.objects.count() == 1


def queries(fetch: Callable[[], Any]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as context:
        response = fetch()
    assert response.status_code == 200
    return len(context.captured_queries)


# The runs list: the user, the role check, the study, the count, the page of runs (with their rater and task).
# A run's items: the user, the role check, the run, the count, the page of items. The study page of this
# two-task study, with runs: its reads (tests/test_query_counts.py, the conditions' among them) plus the runs
# and their failures.
RUNS_LIST_QUERIES, RUN_ITEMS_QUERIES, STUDY_PAGE_WITH_RUNS_QUERIES = 5, 5, 22


def test_it_keeps_the_runs_query_counts_flat(study: Study, rita: AbstractUser, settings: Any) -> None:
    from judges.services import JudgeSpec, judge_run_create, judge_run_execute

    settings.FAITHANNO_LLM_TRIES = 1
    api, client = api_client_for(rita), client_for(rita)
    factuality = study.tasks.get(task="factuality")

    def judge(model: str, **budget: Any) -> JudgeRun:
        run = judge_run_create(
            spec=JudgeSpec(study_task=factuality, endpoint=server.url, model=model, created_by=rita, **budget)
        )
        judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
        return run

    answers = iter([VALID, "no json"] * 100)
    with chat_server(lambda body: Reply(next(answers))) as server:
        first = judge("m1", max_requests=1)
        # The study page's first view stores the label task's agreement tally; every later view after a
        # submission (the judges' included) reads it instead of the labels.
        client.get(reverse("study_detail", args=[study.pk]))
        cache.clear()
        counts = (
            queries(lambda: api.get(reverse("api_study_judge_runs", args=[study.pk]))),
            queries(lambda: api.get(reverse("api_judge_run_items", args=[first.pk]))),
            queries(lambda: client.get(reverse("study_detail", args=[study.pk]))),
        )
        assert counts == (RUNS_LIST_QUERIES, RUN_ITEMS_QUERIES, STUDY_PAGE_WITH_RUNS_QUERIES)
        more = [judge("m2"), judge("m3")]
        assert all(run.items.count() == factuality.items.count() for run in more)
        assert JudgeRun.objects.filter(failed__gt=0).count() == 2
        assert (
            queries(lambda: api.get(reverse("api_study_judge_runs", args=[study.pk]))),
            queries(lambda: api.get(reverse("api_judge_run_items", args=[more[0].pk]))),
            queries(lambda: client.get(reverse("study_detail", args=[study.pk]))),
        ) == counts
