"""Scoring spread over real Celery worker processes sharing one dataset through a real Redis broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotations.importers import parse
from annotations.models import Dataset, Summary
from annotations.services.corpus import dataset_import
from scoring.models import Explanation, ScoringClaim
from scoring.services import explanations_enqueue
from tests.conftest import write_jsonl
from tests.scoring.conftest import ROOT, database_url

WORKERS = 2


def _reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.exceptions.ConnectionError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The machine's Redis (FAITHANNO_TEST_REDIS_URL, default database 0 on 127.0.0.1:6379), or, when none
    answers, a private redis-server started for the session on a free port."""
    url = os.environ.get("FAITHANNO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    if _reachable(url):
        yield url
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    directory = tmp_path_factory.mktemp("redis")
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
    yield url
    server.terminate()
    server.wait(timeout=20)


@pytest.fixture
def celery_queue(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, list[Path]]]:
    """Start WORKERS real `celery worker` processes on a queue of their own; stop them afterwards."""
    from faithanno.celery import app

    queue = f"faithanno-test-{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "FAITHANNO_SCORING_RETRY_SECONDS": "1",
        "OMP_NUM_THREADS": "1",  # two workers on two cores
    }
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    command = [sys.executable, "-m", "celery", "-A", "faithanno.celery", "worker", "--pool", "solo"]
    command += ["--queues", queue, "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
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
    previous = (app.conf.broker_url, app.conf.result_backend, app.conf.task_default_queue)
    app.conf.broker_url, app.conf.result_backend, app.conf.task_default_queue = redis_url, redis_url, queue
    try:
        deadline = time.monotonic() + 180
        while len(app.control.ping(timeout=1.0, destination=None) or []) < WORKERS:
            running = [worker.poll() is None for worker in workers]
            assert all(running), "a worker stopped: " + " ".join(log.read_text()[-2000:] for log in logs)
            assert time.monotonic() < deadline, "workers did not come up"
        yield queue, logs
    finally:
        app.conf.broker_url, app.conf.result_backend, app.conf.task_default_queue = previous
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


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

    try:
        results = [AsyncResult(task_id).get(timeout=300) for task_id in task_ids]
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
