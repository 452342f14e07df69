"""Tasks go through the project's Celery app from any thread (common.broker.task_send)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from celery import current_app
from celery.result import EagerResult

from common.broker import task_send
from ingest.jobs import import_dataset_job
from tests.conftest import UNREACHABLE_BROKER, broker_point


@pytest.mark.django_db(transaction=True)
def test_it_sends_through_the_projects_app_from_a_thread_that_never_made_it_current() -> None:
    from faithanno.celery import app

    seen: dict[str, Any] = {}

    def in_thread() -> None:
        seen["current"] = current_app._get_current_object()
        seen["result"] = task_send(import_dataset_job, job_id=0)

    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    try:
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join(timeout=60)
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before
    # The thread's current app is Celery's default one (a direct .delay() would have used its broker), yet the
    # task ran here, eagerly, as the project's app is set to.
    assert seen["current"] is not app
    assert isinstance(seen["result"], EagerResult)


def test_it_sends_to_the_broker_the_app_points_at_after_pointing_elsewhere() -> None:
    from faithanno.celery import app

    previous = broker_point(app, UNREACHABLE_BROKER)
    try:
        assert app.amqp.producer_pool.connections.connection.as_uri().endswith("127.0.0.1:1/0")
        broker_point(app, "redis://127.0.0.1:6379/9")
        # The pools made for the first URL are not reused for the second.
        assert app.amqp.producer_pool.connections.connection.as_uri().endswith("127.0.0.1:6379/9")
        assert app.pool.connection.as_uri().endswith("127.0.0.1:6379/9")
    finally:
        broker_point(app, previous)
