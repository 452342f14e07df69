"""Scoring spread over real Celery worker processes sharing one dataset through a real Redis broker."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from scoring.models import Explanation, ScoringClaim
from scoring.services import explanations_enqueue
from tests.conftest import broker_point, write_jsonl
from tests.scoring.conftest import ROOT, database_url

WORKERS = 2


def _reachable(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.exceptions.ConnectionError:
        return False


def _redis_server(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A private redis-server on a free port, answering when this returns."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 20
    while not _reachable(url):
        assert server.poll() is None and time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.2)
    return server, url


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The machine's Redis (FAITHANNO_TEST_REDIS_URL, default database 0 on 127.0.0.1:6379), or, when none
    answers, a private redis-server started for the session on a free port."""
    url = os.environ.get("FAITHANNO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    if _reachable(url):
        yield url
        return
    server, url = _redis_server(tmp_path_factory.mktemp("redis"))
    yield url
    _stop(server)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server of this test alone. Kombu keeps one index of unacknowledged tasks per Redis database
    for all queues, and a worker hands out again any task in it older than its own visibility timeout: a
    worker with a timeout of seconds must not share a database with other tests' workers."""
    server, url = _redis_server(tmp_path)
    yield url
    _stop(server)


def _worker_environment(redis_url: str, **variables: str) -> tuple[str, dict[str, str]]:
    """A queue of its own, and the environment of workers that take its tasks from this Redis."""
    queue = f"faithanno-test-{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "OMP_NUM_THREADS": "1",  # two workers on two cores
        **variables,
    }
    return queue, env


def _worker_command(queue: str, *pool: str) -> list[str]:
    command = [sys.executable, "-m", "celery", "-A", "faithanno.celery", "worker", *pool]
    return [*command, "--queues", queue, "--loglevel", "INFO", "--without-gossip", "--without-mingle"]


def _result_backend_forget(app: Any) -> None:
    # The app keeps the result backend it made when a task was first sent in this process (an earlier test's
    # sends one): the results would be awaited there, at the old URL.
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


@pytest.fixture
def celery_queue(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, list[Path]]]:
    """Start WORKERS real `celery worker` processes on a queue of their own; stop them afterwards."""
    from faithanno.celery import app

    queue, env = _worker_environment(redis_url, FAITHANNO_SCORING_RETRY_SECONDS="1")
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    command = _worker_command(queue, "--pool", "solo")
    workers = [
        subprocess.Popen(
            [*command, "--hostname", f"worker{i}-{queue}@%h"],
            cwd=ROOT,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        for i, log in enumerate(logs)
    ]
    previous = (broker_point(app, redis_url), app.conf.result_backend, app.conf.task_default_queue)
    app.conf.result_backend, app.conf.task_default_queue = redis_url, queue
    _result_backend_forget(app)
    try:
        deadline = time.monotonic() + 180
        while len(app.control.ping(timeout=1.0, destination=None) or []) < WORKERS:
            running = [worker.poll() is None for worker in workers]
            assert all(running), "a worker stopped: " + " ".join(log.read_text()[-2000:] for log in logs)
            assert time.monotonic() < deadline, "workers did not come up"
        yield queue, logs
    finally:
        broker_point(app, previous[0])
        app.conf.result_backend, app.conf.task_default_queue = previous[1:]
        _result_backend_forget(app)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            _stop(worker)


@pytest.mark.django_db(transaction=True)
def test_it_scores_every_summary_exactly_once_with_racing_workers(
    tmp_path: Path, celery_queue: tuple[str, list[Path]]
) -> None:
    records = [
        {
            "id": f"doc{n}",
            "text": f"Story {n}: the council of town {n} approved a budget of {n} million pounds on Monday. "
            f"The mayor said schools in town {n} would get more money.",
            "summaries": [
                {"system": "A", "text": f"Town {n} approved a budget of {n} million pounds."},
                {"system": "B", "text": f"The mayor of town {n} cut the school budget."},
                {"system": "C", "text": f"Schools in town {n} get more money."},
            ],
        }
        for n in range(12)
    ]
    dataset: Dataset = dataset_import(
        name="racing", batch=parse("jsonl", write_jsonl(tmp_path / "r.jsonl", records))
    ).dataset
    # The same work enqueued three times over, in chunks that overlap: tasks race for the same summaries.
    reports = [
        *explanations_enqueue(dataset=dataset, metrics=["bertscore"], documents_per_task=2),
        *explanations_enqueue(dataset=dataset, metrics=["bertscore"], documents_per_task=3),
        *explanations_enqueue(dataset=dataset, metrics=["bertscore"], documents_per_task=12),
    ]
    task_ids = [task_id for report in reports for task_id in report.tasks]
    assert len(task_ids) == 6 + 4 + 1

    from celery.result import AsyncResult

    from faithanno.celery import app

    try:
        # The project's app and its result backend (the thread's current app may be another test's).
        results = [AsyncResult(task_id, app=app).get(timeout=300) for task_id in task_ids]
    except Exception:
        print("\n".join(log.read_text()[-3000:] for log in celery_queue[1]))
        raise
    summaries = Summary.objects.filter(document__dataset=dataset).count()
    assert summaries == 36
    assert sum(result["computed_by_task"] for result in results) == summaries  # no summary computed twice
    assert Explanation.objects.filter(summary__document__dataset=dataset).count() == summaries
    assert Explanation.objects.values("summary").distinct().count() == summaries
    assert not Explanation.objects.exclude(error="").exists()
    assert not ScoringClaim.objects.exists()  # every claim was released with its explanation
    assert len({result["worker"] for result in results}) == WORKERS  # both machines took work


# Short settings for the test below: claims lapse after 3 s, a task nobody acknowledged comes back after 4 s.
SHORT_TIMEOUTS = {
    "FAITHANNO_SCORING_CLAIM_SECONDS": "3",
    "FAITHANNO_SCORING_RETRY_SECONDS": "1",
    "CELERY_VISIBILITY_TIMEOUT": "4",
}
# Far beyond what the work needs even on a loaded machine: a deadline, never a timing assertion.
DEADLINE_SECONDS = 600


def _succeeded(log: Path) -> list[tuple[str, int]]:
    """(task id, summaries computed) of each task run that the worker's log reports as succeeded. A task
    handed out again while its first run still held it has a line for each run."""
    pattern = r"score_documents\[([0-9a-f-]+)\] succeeded in .*'computed_by_task': (\d+)"
    return [(task_id, int(computed)) for task_id, computed in re.findall(pattern, log.read_text())]


@pytest.mark.django_db(transaction=True)
def test_it_brings_back_the_task_of_a_killed_worker_and_scores_every_summary_once(
    tmp_path: Path, private_redis: str
) -> None:
    """SIGKILL of a whole worker (main process and child) while it computes a batch: its task was never
    acknowledged and its claims never released. The broker hands the task out again after the visibility
    timeout, the claims lapse, and a new worker scores every summary: each exactly once."""
    records = [
        {
            "id": f"doc{n}",
            "text": " ".join(
                f"In town {n}, council meeting {m} approved a budget of {n + m} million pounds for schools, "
                f"roads and the library, after a debate that lasted {m + 2} hours."
                for m in range(12)
            ),
            "summaries": [
                {"system": "A", "text": f"Town {n} approved a budget of {n} million pounds."},
                {"system": "B", "text": f"The mayor of town {n} cut the school budget."},
                {"system": "C", "text": f"Schools in town {n} get more money after a long debate."},
            ],
        }
        for n in range(40)
    ]
    dataset_import(name="killed-worker", batch=parse("jsonl", write_jsonl(tmp_path / "k.jsonl", records)))
    summaries = Summary.objects.filter(document__dataset__name="killed-worker")
    total = summaries.count()
    explanations = Explanation.objects.filter(summary__in=summaries)
    claims = ScoringClaim.objects.filter(summary__in=summaries)
    queue, env = _worker_environment(private_redis, **SHORT_TIMEOUTS)
    broker = redis.Redis.from_url(private_redis)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    # The prefork pool: a main process that takes tasks from the broker and a child that runs them. Its own
    # session, so that one signal to its process group kills both, as when a machine or container dies.
    command = _worker_command(queue, "--pool", "prefork", "--concurrency", "1")
    first = _start_in_own_session(command, env, logs[0])
    second = None
    try:
        enqueue = [sys.executable, "manage.py", "score", "--dataset", "killed-worker", "--metric", "bertscore"]
        subprocess.run(
            [*enqueue, "--enqueue", "--documents-per-task", "4"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        # Freeze the worker (main process and child) whenever it holds claims after it stored some summaries;
        # kill it if the task those claims belong to is still unacknowledged on the broker, else let it go on.
        deadline = time.monotonic() + DEADLINE_SECONDS
        held = None
        while held is None:
            assert first.poll() is None, logs[0].read_text()[-3000:]
            assert explanations.count() < total, "the worker finished before it could be killed mid-batch"
            assert time.monotonic() < deadline, "the worker did not start computing"
            if explanations.exists() and claims.exists():
                os.killpg(first.pid, signal.SIGSTOP)
                time.sleep(0.2)  # statements already sent to PostgreSQL land
                held = _unacknowledged_task(broker, set(claims.values_list("summary__document_id", flat=True)))
                if held is None:
                    os.killpg(first.pid, signal.SIGCONT)
            time.sleep(0.02)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        _wait_until_gone(first.pid)

        stored_before = explanations.count()
        orphaned = set(claims.values_list("summary_id", flat=True))
        assert 0 < stored_before < total
        assert orphaned and not explanations.filter(summary_id__in=orphaned).exists()  # claimed, not stored
        # The dead worker's claims as if it had run on another machine, where no process id can tell that
        # it died: they free their summaries only by lapsing. (A dead process on the same machine frees
        # them at once; tests/scoring/test_pipeline.py covers that.)
        claims.update(owner="elsewhere:1:killed")

        second = _start_in_own_session(command, env, logs[1])
        while not (explanations.count() == total and broker.llen(queue) == 0 and broker.hlen("unacked") == 0):
            assert second.poll() is None, logs[1].read_text()[-3000:]
            assert time.monotonic() < deadline, "the work did not come back: " + logs[1].read_text()[-3000:]
            time.sleep(0.5)
    finally:
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()

    # Exactly once: one explanation per summary, none failed, no claim left behind ...
    assert explanations.count() == total
    assert explanations.values("summary").distinct().count() == total
    assert not explanations.exclude(error="").exists()
    assert not claims.exists()
    # ... and nothing computed twice: the new worker computed exactly what the dead one had not stored
    # (Explanation rows are unique, so a second computation would not show in them).
    # Each task is one batch (4 documents), so the killed run stored nothing: the runs that succeeded, on
    # the first worker (some of them twice, when a run outlasted the visibility timeout) and on the new
    # one, computed every summary once between them.
    before, after = _succeeded(logs[0]), _succeeded(logs[1])
    assert sum(computed for _, computed in before) == stored_before
    assert sum(computed for _, computed in after) == total - stored_before
    # The task the dead worker held came back and ran to the end on the new worker.
    assert held in {task_id for task_id, _ in after}


def _start_in_own_session(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A process leading a process group of its own, so that one signal reaches it and its children."""
    with log.open("w") as output:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def _unacknowledged_task(broker: redis.Redis, documents: set[int]) -> str | None:
    """The id of the task handed out and not acknowledged (Kombu's "unacked" hash) that scores these
    documents, if any."""
    for message in broker.hvals("unacked"):
        payload = json.loads(message)[0]
        _, kwargs, _ = json.loads(base64.b64decode(payload["body"]))
        if documents and documents <= set(kwargs["document_ids"]):
            return payload["headers"]["id"]
    return None


def _wait_until_gone(process_group: int) -> None:
    """Until no process of the group is left (the child outlives the main process for a moment)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            os.killpg(process_group, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process group {process_group} survived SIGKILL"
        time.sleep(0.05)


TIMEOUT_VARIABLES = ("FAITHANNO_SCORING_CLAIM_SECONDS", "FAITHANNO_SCORING_RETRY_SECONDS", "CELERY_VISIBILITY_TIMEOUT")


def _celery_configuration(**env: str) -> subprocess.CompletedProcess[str]:
    """What a worker started with these variables reads from its Celery app, as JSON."""
    clean = {k: v for k, v in os.environ.items() if k not in TIMEOUT_VARIABLES}
    code = (
        "import json; from faithanno.celery import app; "
        "print(json.dumps([app.conf.broker_transport_options, app.conf.task_acks_late, "
        "app.conf.task_reject_on_worker_lost]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def test_it_hands_out_a_dead_workers_task_again_once_its_claims_and_a_retry_could_have_passed() -> None:
    result = _celery_configuration()
    assert result.returncode == 0, result.stderr
    options, acks_late, reject_on_worker_lost = json.loads(result.stdout)
    assert acks_late and reject_on_worker_lost
    assert options["visibility_timeout"] == 1800 + 60
    assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] <= 10
    short = json.loads(_celery_configuration(FAITHANNO_SCORING_CLAIM_SECONDS="300").stdout)[0]
    assert short["visibility_timeout"] == 300 + 60
    longer = json.loads(_celery_configuration(CELERY_VISIBILITY_TIMEOUT="7200").stdout)[0]
    assert longer["visibility_timeout"] == 7200


def test_it_refuses_a_visibility_timeout_shorter_than_a_task_may_hold_its_work() -> None:
    result = _celery_configuration(CELERY_VISIBILITY_TIMEOUT="1859")
    assert result.returncode != 0
    assert (
        "CELERY_VISIBILITY_TIMEOUT (1859 s) must be at least FAITHANNO_SCORING_CLAIM_SECONDS + "
        "FAITHANNO_SCORING_RETRY_SECONDS (1800 + 60 s)" in result.stderr
    )
    result = _celery_configuration(FAITHANNO_SCORING_CLAIM_SECONDS="600", CELERY_VISIBILITY_TIMEOUT="300")
    assert result.returncode != 0 and "(600 + 60 s)" in result.stderr
    result = _celery_configuration(FAITHANNO_SCORING_CLAIM_SECONDS="0")
    assert result.returncode != 0 and "FAITHANNO_SCORING_CLAIM_SECONDS must be at least 1" in result.stderr
