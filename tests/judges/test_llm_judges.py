"""LLM judges as raters, against a local OpenAI-compatible server the test starts (tests/judges/chat_server.py):
valid answers become judgements of a model rater; answers outside the label set, time-outs, HTTP errors,
non-JSON and huge bodies are retried and then recorded as failures with the reason, never as labels; the
cache, the budget, the exact prompt; agreement includes the model rater and human counts leave it out; the
API key is never logged, shown or exported."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.analysis import agreement_overview
from analysis.selectors.analysis_groups import metric_rater_analysis
from common.roles import MODEL
from corpus.models import Dataset
from judges.models import CachedResponse, JudgeItem, JudgeRun
from judges.services import JudgeSpec, judge_run_create, judge_run_execute
from studies.models import Assignment, Judgement, Study, StudyItem
from studies.selectors.studies import studies_glance, study_progress, study_task_progress
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for
from tests.judges.chat_server import Reply, chat_server

VALID = json.dumps({"judgements": [{"unit": 0, "label": "yes", "note": "supported"}]})
OUTSIDE = json.dumps({"judgements": [{"unit": 0, "label": "maybe", "note": ""}]})
SECRET = "sk-test-0123456789-secret"


@pytest.fixture(autouse=True)
def _no_waiting(settings: Any) -> None:
    settings.FAITHANNO_LLM_BACKOFF_SECONDS = 0


def factuality_study(dataset: Dataset, annotators: list[AbstractUser], rita: AbstractUser, name: str = "F") -> Study:
    return study_create(
        spec=StudySpec(
            name=name,
            dataset=dataset,
            tasks=["factuality"],
            annotators=annotators,
            annotators_per_item=2,
            created_by=rita,
            guidelines={"factuality": "Numbers must match the article exactly."},
        )
    ).study


@pytest.fixture
def study(small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser) -> Study:
    return factuality_study(small_dataset, [alice, bob], rita)


def run_judge(study: Study, url: str, **overrides: Any) -> JudgeRun:
    spec = JudgeSpec(study_task=study.tasks.get(), endpoint=url, model="test-model", **overrides)
    run = judge_run_create(spec=spec)
    judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
    run.refresh_from_db()
    return run


def items_of(study: Study) -> int:
    return StudyItem.objects.filter(study_task__study=study).count()


def test_it_turns_valid_answers_into_judgements_of_a_model_rater(study: Study) -> None:
    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url, parameters={"temperature": 0.2, "max_tokens": 64, "seed": 7})
    n = items_of(study)
    assert run.status == JudgeRun.Status.DONE and run.judged == n and run.failed == 0 and run.requests == n
    assert server.paths == ["/v1/chat/completions"] * n
    user = run.rater.user
    assert user.groups.filter(name=MODEL).exists() and not user.is_active and not user.has_usable_password()
    assert not study.annotators.filter(pk=user.pk).exists()  # given no items, not counted towards k
    judgements = Judgement.objects.filter(assignment__annotator=user)
    assert judgements.count() == n and set(judgements.values_list("label", flat=True)) == {"yes"}
    assert set(judgements.values_list("note", flat=True)) == {"supported"}  # the model's reason, as a note
    assert set(Assignment.objects.filter(annotator=user).values_list("status", "guidelines_version")) == {
        (Assignment.Status.SUBMITTED, 1)
    }
    # The model, the parameters and the exact prompt are recorded with every item.
    records = list(JudgeItem.objects.filter(run=run).order_by("item__position"))
    first_sent = server.requests[0]
    assert first_sent["model"] == "test-model" and first_sent["temperature"] == 0.2 and first_sent["seed"] == 7
    assert records[0].prompt == first_sent["messages"]
    assert {tuple(map(json.dumps, r.prompt)) for r in records} == {
        tuple(map(json.dumps, body["messages"])) for body in server.requests
    }
    assert records[0].parameters == {"temperature": 0.2, "max_tokens": 64, "seed": 7}
    assert records[0].model == "test-model" and records[0].endpoint == server.url + "/chat/completions"
    assert "Numbers must match the article exactly." in first_sent["messages"][1]["content"]
    assert run.prompt_tokens == 100 * n and run.completion_tokens == 20 * n


def test_it_retries_an_answer_outside_the_label_set_and_records_the_failure_never_as_a_label(study: Study) -> None:
    with chat_server(lambda body: Reply(OUTSIDE)) as server:
        run = run_judge(study, server.url, tries=3)
    n = items_of(study)
    assert len(server.requests) == 3 * n
    assert run.status == JudgeRun.Status.DONE and run.failed == n and run.judged == 0
    assert not Judgement.objects.filter(assignment__annotator=run.rater.user).exists()
    assert not Assignment.objects.filter(annotator=run.rater.user).exists()
    failure = JudgeItem.objects.filter(run=run).first()
    assert failure.status == JudgeItem.Status.FAILED and failure.tries == 3
    assert failure.reason.count("'maybe' is not a choice of task 'factuality'") == 3
    assert not CachedResponse.objects.exists()  # a wrong answer is never cached


def test_it_takes_the_answer_of_a_later_try(study: Study) -> None:
    answers = iter([OUTSIDE, VALID] * 100)
    with chat_server(lambda body: Reply(next(answers))) as server:
        run = run_judge(study, server.url, tries=2)
    assert run.judged == items_of(study) and len(server.requests) == 2 * run.judged
    record = JudgeItem.objects.filter(run=run).first()
    assert record.status == JudgeItem.Status.JUDGED and record.tries == 2 and "try 1: 'maybe'" in record.reason


def test_it_gives_up_on_an_endpoint_that_times_out(study: Study, settings: Any) -> None:
    settings.FAITHANNO_LLM_TIMEOUT_SECONDS = 0.3
    with chat_server(lambda body: Reply(VALID, delay=1.5)) as server:
        run = run_judge(study, server.url, tries=2, max_requests=2)
    assert len(server.requests) == 2
    record = JudgeItem.objects.get(run=run)
    assert record.status == JudgeItem.Status.FAILED and record.reason.count("(time-out)") == 2
    assert run.status == JudgeRun.Status.STOPPED and "2 requests" in run.reason
    assert not Judgement.objects.filter(assignment__annotator=run.rater.user).exists()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(body=b"<html>502 Bad Gateway</html>"), "the response is not JSON"),
        (Reply(body=b'{"choices": []}'), "no choices[0].message.content"),
        (Reply(body=b"x" * 5000), "bytes; at most 2048"),
        (Reply(VALID, status=500), "HTTP 500"),
        (Reply(VALID, status=429), "HTTP 429"),
    ],
)
def test_it_retries_broken_bodies_and_http_errors_then_records_the_reason(
    study: Study, settings: Any, reply: Reply, reason: str
) -> None:
    settings.FAITHANNO_LLM_MAX_RESPONSE_BYTES = 2048
    with chat_server(lambda body: reply) as server:
        run = run_judge(study, server.url, tries=2, max_requests=2)
    assert len(server.requests) == 2
    record = JudgeItem.objects.get(run=run)
    assert record.status == JudgeItem.Status.FAILED and record.reason.count(reason) == 2
    assert not Judgement.objects.filter(assignment__annotator=run.rater.user).exists()


def test_it_fails_the_run_at_once_when_the_endpoint_refuses_the_key_and_never_shows_the_key(
    study: Study, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = json.dumps({"error": f"invalid key {SECRET}"}).encode()
    with chat_server(lambda body: Reply(body=echo, status=401)) as server:
        run = run_judge(study, server.url, api_key=SECRET, tries=3)
    assert server.authorizations == [f"Bearer {SECRET}"]  # one request: a 401 is not tried again
    assert run.status == JudgeRun.Status.FAILED and "HTTP 401" in run.reason and "check the API key" in run.reason
    assert run.api_key == ""  # forgotten when the run ends
    record = JudgeItem.objects.get(run=run)
    assert SECRET not in record.reason and "***" in record.reason
    assert SECRET not in caplog.text and SECRET not in run.reason


def test_it_never_shows_logs_or_exports_the_key(
    study: Study, rita: AbstractUser, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url, api_key=SECRET)
    assert set(server.authorizations) == {f"Bearer {SECRET}"}
    run.refresh_from_db()
    assert run.api_key == ""
    client = client_for(rita)
    pages = [
        client.get(reverse("study_detail", args=[study.pk])),
        client.get(reverse("study_export", args=[study.pk, "csv"])),
        client.get(reverse("api_judge_run", args=[run.pk])),
        client.get(reverse("api_judge_run_items", args=[run.pk])),
        client.get(reverse("api_study_judge_runs", args=[study.pk])),
    ]
    assert all(page.status_code == 200 for page in pages)
    texts = [b"".join(page.streaming_content) if page.streaming else page.content for page in pages]
    assert run.rater.user.username.encode() in texts[1]  # the export holds the model rater's judgements
    assert all(SECRET.encode() not in text for text in texts)
    assert SECRET not in caplog.text


def test_it_keeps_the_key_sealed_while_the_run_waits(study: Study, settings: Any) -> None:
    spec = JudgeSpec(study_task=study.tasks.get(), endpoint="http://127.0.0.1:1", model="test-model", api_key=SECRET)
    run = judge_run_create(spec=spec)
    stored = JudgeRun.objects.values_list("api_key", flat=True).get(pk=run.pk)
    # a copy of the database alone does not give the key away (test_it_never_shows_logs_or_exports_the_key
    # sees the run open it and send it)
    assert stored and SECRET not in stored
    # The server's SECRET_KEY changed without a fallback: the run fails saying so, and never sends anything.
    settings.SECRET_KEY = "a-rotated-secret-key-without-fallback"
    judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED and "API key is lost" in run.reason and run.api_key == ""
    assert run.requests == 0 and not JudgeItem.objects.filter(run=run).exists()


def test_it_reads_the_key_from_the_named_variable_only(study: Study, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAITHANNO_LLM_API_KEY_LOCAL", "from-the-environment")
    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url, api_key_variable="FAITHANNO_LLM_API_KEY_LOCAL", max_requests=1)
    assert server.authorizations == ["Bearer from-the-environment"]
    assert run.api_key_variable == "FAITHANNO_LLM_API_KEY_LOCAL" and run.api_key == ""


def test_it_answers_a_repeated_prompt_from_the_cache_without_a_request(
    study: Study, small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    with chat_server(lambda body: Reply(VALID)) as server:
        first = run_judge(study, server.url)
        n = len(server.requests)
        twin = factuality_study(small_dataset, [alice, bob], rita, name="twin")  # the same prompts
        second = run_judge(twin, server.url)
        assert len(server.requests) == n  # not one more request
        # A third run of the same rater finds every item judged and asks for nothing.
        third = run_judge(study, server.url)
        assert third.items_total == 0 and len(server.requests) == n
    assert first.cached == 0 and second.cached == second.judged == n and second.requests == 0
    assert CachedResponse.objects.count() == n
    assert Judgement.objects.filter(assignment__item__study_task__study=twin).count() == n


def test_it_stops_cleanly_when_the_budget_is_used_up(study: Study) -> None:
    with chat_server(lambda body: Reply(VALID, usage=(100, 20))) as server:
        by_requests = run_judge(study, server.url, max_requests=3)
        assert len(server.requests) == 3
    assert by_requests.status == JudgeRun.Status.STOPPED and by_requests.judged == 3
    assert "the budget of 3 requests is used up" in by_requests.reason and by_requests.api_key == ""
    # Another model (another rater), a token budget: 120 tokens an answer, the third passes 250.
    with chat_server(lambda body: Reply(VALID, usage=(100, 20))) as server:
        spec = JudgeSpec(study_task=study.tasks.get(), endpoint=server.url, model="other-model", max_tokens=250)
        run = judge_run_create(spec=spec)
        judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
        run.refresh_from_db()
        assert len(server.requests) == 3
    assert run.status == JudgeRun.Status.STOPPED and run.judged == 3 and "250 tokens" in run.reason


def test_the_agreement_includes_the_model_rater_and_human_counts_leave_it_out(
    study: Study, alice: AbstractUser
) -> None:
    for assignment in Assignment.objects.filter(annotator=alice):
        assignment_submit(assignment=assignment, user=alice, labels={"0": "yes"}, seconds=5)
    study_task = study.tasks.get()
    before = agreement_overview(study_task=study_task)
    assert before.fewest_raters == 1 and before.tables.n_items == 0  # one rater per unit: nothing to compare
    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url)
    model = run.rater.user.username
    overview = agreement_overview(study_task=study_task)
    assert overview.model_raters == (model,)
    assert {row.annotator for row in overview.tables.annotators} == {"alice", model}
    assert overview.tables.n_items == items_of(study)  # every unit now has two raters: alice and the model
    percent = next(row for row in overview.results if row["coefficient"] == "percent")
    assert percent["value"] == 100.0
    # Still only one person per item: the model does not make up k = 2.
    assert overview.fewest_raters == 1
    progress = study_task_progress(study=study)[study_task.pk]
    assert progress.complete_items == 0 and progress.done == items_of(study)  # alice's only
    assert {row.username for row in study_progress(study=study)} == {"alice", "bob"}
    assert studies_glance(studies=[study])[study.pk].active == 1

    # The analysis page and the API list it as an extra rater with a clear label.
    client = client_for(study.created_by)
    page = client.get(reverse("study_analysis", args=[study.pk])).content.decode()
    assert f'data-annotator="{model}"' in page and "(model rater: an LLM judge)" in page
    [answer] = client.get(reverse("api_study_agreement", args=[study.pk])).json()
    assert answer["model_raters"] == [model] and answer["fewest_raters"] == 1
    assert {row["annotator"] for row in answer["annotators"]} == {"alice", model}


def test_the_metric_as_rater_analysis_compares_the_metric_with_the_model_rater(
    study: Study, alice: AbstractUser
) -> None:
    from corpus.models import MetricScore, Summary

    for summary in Summary.objects.filter(document__dataset=study.dataset):
        MetricScore.objects.create(summary=summary, name="toy", value=0.9, source="test")
    for assignment in Assignment.objects.filter(annotator=alice):
        assignment_submit(assignment=assignment, user=alice, labels={"0": "no"}, seconds=5)
    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url)
    [row] = metric_rater_analysis(study_task=study.tasks.get(), metrics=["toy"], thresholds=[[0.5]])
    assert row["model_raters"] == [run.rater.user.username]
    against = {annotator["rater"]: annotator for annotator in row["annotators"]}
    assert set(against) == {"alice", run.rater.user.username}
    assert against[run.rater.user.username]["agreement"] == 1.0 and against["alice"]["agreement"] == 0.0
    # The human majority is alice's "no" alone (the model's "yes" would make every item a tie).
    assert row["majority"]["agreement"] == 0.0 and row["majority"]["n_items"] == items_of(study)


def test_the_command_shows_progress(study: Study) -> None:
    from io import StringIO

    out = StringIO()
    with chat_server(lambda body: Reply(VALID)) as server:
        call_command(
            "llm_judge", "--study", str(study.pk), "--task", "factuality", "--endpoint", server.url,
            "--model", "test-model", stdout=out,
        )  # fmt: skip
    text = out.getvalue()
    n = items_of(study)
    assert f"[1/{n}] item" in text and f"[{n}/{n}] item" in text and f"Done: {n} judged" in text


def test_a_second_delivery_leaves_a_live_run_alone_and_takes_over_a_silent_one(study: Study) -> None:
    from datetime import timedelta

    from django.utils import timezone

    with chat_server(lambda body: Reply(VALID)) as server:
        run = run_judge(study, server.url, max_requests=2)
        assert run.status == JudgeRun.Status.STOPPED and run.judged == 2
        # The broker hands the task out again while a worker still reports: nothing happens.
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, max_requests=100)
        assert judge_run_execute(run_id=run.pk, sleep=lambda seconds: None) is None
        assert len(server.requests) == 2
        # The worker went silent: the next delivery takes the run over and judges only the items left.
        JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
        judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
    run.refresh_from_db()
    n = items_of(study)
    assert run.status == JudgeRun.Status.DONE and run.judged == n and len(server.requests) == n
    assert JudgeItem.objects.filter(run=run).count() == n
    # A finished run is never run again.
    assert judge_run_execute(run_id=run.pk) is None


def test_the_celery_task_marks_a_run_that_breaks_off_as_failed(study: Study) -> None:
    from judges.jobs import judge_run_job
    from judges.models import ModelRater

    with chat_server(lambda body: Reply(VALID)) as server:
        run = judge_run_create(spec=JudgeSpec(study_task=study.tasks.get(), endpoint=server.url, model="m"))
        # A rater whose stored parameters no longer parse (edited by hand in the database): the run cannot go on.
        ModelRater.objects.filter(pk=run.rater_id).update(parameters={"temperature": "hot"})
        result = judge_run_job.apply(kwargs={"run_id": run.pk})
        assert server.requests == []
    assert result.failed()
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED and "the run broke off: ValueError: temperature" in run.reason
    assert run.api_key == "" and run.finished_at is not None
    # Delivered again, a failed run is left alone.
    assert judge_run_job.apply(kwargs={"run_id": run.pk}).get() is None


def first_label_judge(body: dict[str, Any]) -> Reply:
    """A judge that answers every unit of the prompt with its first label (and a note), as a model would."""
    import re

    text = body["messages"][1]["content"]
    blocks = re.findall(r"^Unit (\d+): .*?^Labels: (\w+) ", text, flags=re.M | re.S)
    judgements = [{"unit": int(unit), "label": label, "note": "because"} for unit, label in blocks]
    return Reply(json.dumps({"judgements": judgements}))


def test_it_judges_every_task_with_labels_per_unit_showing_what_the_annotator_sees(task_study: Study) -> None:
    from protocols.llm_judge import judgeable
    from protocols.tasks import get_task

    judged_tasks = [t for t in task_study.tasks.all() if judgeable(get_task(t.task))]
    assert {t.task for t in judged_tasks} == {
        "bertscore", "qgqa", "entailment", "sentence_consistency", "feqa", "factuality"
    }  # fmt: skip
    prompts: dict[str, str] = {}
    with chat_server(first_label_judge) as server:
        for study_task in judged_tasks:
            spec = JudgeSpec(study_task=study_task, endpoint=server.url, model="first-label")
            run = judge_run_create(spec=spec)
            judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
            run.refresh_from_db()
            assert (run.failed, run.judged) == (0, study_task.items.count()), (study_task.task, run.reason)
            prompts[study_task.task] = JudgeItem.objects.filter(run=run).first().prompt[1]["content"]
    # Beside each unit the prompt shows what the task view highlights.
    assert "Aligned source word(s): " in prompts["bertscore"]
    assert "Answer from the summary: " in prompts["qgqa"] and "Answer from the source: " in prompts["qgqa"]
    assert "Highlighted source sentence: " in prompts["entailment"]
    assert "Answer only if unit 0 is meaningful" in prompts["feqa"]
    # FEQA: the error-type question was answered but does not apply after "faithful": it is not stored.
    feqa_labels = set(
        Judgement.objects.filter(
            assignment__item__study_task__task="feqa", assignment__annotator__username__startswith="llm."
        ).values_list("label", flat=True)
    )
    assert feqa_labels == {"meaningful", "grammatical", "faithful"}


def test_it_seals_in_place_the_keys_of_runs_queued_before_sealing(study: Study) -> None:
    import importlib

    from django.apps import apps

    spec = JudgeSpec(study_task=study.tasks.get(), endpoint="http://127.0.0.1:1", model="test-model", api_key=SECRET)
    run = judge_run_create(spec=spec)
    JudgeRun.objects.filter(pk=run.pk).update(api_key=SECRET)  # as a run queued by the previous version stored it
    migration = importlib.import_module("judges.migrations.0002_seal_api_keys")
    migration.seal_plain_keys(apps, None)
    migration.seal_plain_keys(apps, None)  # a second pass leaves sealed keys alone
    stored = JudgeRun.objects.values_list("api_key", flat=True).get(pk=run.pk)
    assert SECRET not in stored
    with chat_server(lambda body: Reply(VALID)) as server:
        JudgeRun.objects.filter(pk=run.pk).update(
            rater=judge_run_create(
                spec=JudgeSpec(study_task=study.tasks.get(), endpoint=server.url, model="test-model")
            ).rater
        )
        judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
    assert set(server.authorizations) == {f"Bearer {SECRET}"}
