"""Celery tasks of the judges app: an LLM judge's run over a study task, on the same workers as scoring.

A failure of our side (the database went away, the worker's connection broke) retries the whole task with
a growing wait; the run continues after the items it already recorded (judges.services.judge_items_left).
What the endpoint does wrong (time-outs, errors, answers outside the label set) is retried per item inside
the run and never fails the task. After the last retry the run is marked failed with the reason.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import DatabaseError, InterfaceError

from judges.services import judge_run_execute, judge_run_fail

MAX_TASK_RETRIES = 5


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(DatabaseError, InterfaceError, ConnectionError),
    retry_backoff=True,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=MAX_TASK_RETRIES,
)
def judge_run_job(self: Any, *, run_id: int) -> str | None:
    """Run a queued judge run; returns its final status (None: another delivery has it or had it)."""
    try:
        run = judge_run_execute(run_id=run_id)
    except Exception as exc:
        if self.request.retries >= MAX_TASK_RETRIES or not isinstance(
            exc, DatabaseError | InterfaceError | ConnectionError
        ):
            judge_run_fail(run_id=run_id, reason=f"the run broke off: {type(exc).__name__}: {exc}")
        raise
    return run.status if run is not None else None
