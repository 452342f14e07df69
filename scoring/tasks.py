"""Celery tasks: scoring spread over worker machines (see faithanno/celery.py for starting a worker).

A task scores one chunk of a dataset's documents for one metric with fully resolved options, through
the same pipeline as `python manage.py score`; claims keep two workers off the same summary. When
another worker holds some of the chunk's summaries, the task retries later until they are stored
(a dead worker's claims lapse), so every enqueued summary ends up computed exactly once.
"""

from __future__ import annotations

import os
from typing import Any

from celery import shared_task
from django.conf import settings

from corpus.models import Dataset, Summary
from scoring.models import Explanation
from scoring.registry import metric_plan
from scoring.services import config_hash, explanations_compute


@shared_task(bind=True, acks_late=True, max_retries=None)
def score_documents(
    self: Any,
    *,
    dataset_id: int,
    metric: str,
    options: dict[str, Any],
    document_ids: list[int],
    computed_before: int = 0,
) -> dict[str, Any]:
    """Returns the run's ScoreReport as a dict, plus `computed_by_task`: summaries this task stored over
    all its tries (a retry passes the count on)."""
    dataset = Dataset.objects.get(pk=dataset_id)
    report = explanations_compute(dataset=dataset, metric=metric, options=options, document_ids=document_ids)
    result = report.as_dict()
    result["computed_by_task"] = computed_before + report.computed + report.failed
    result["worker"] = f"{self.request.hostname} (pid {os.getpid()})"
    if report.left_to_others and _unfinished(dataset_id, metric, options, document_ids):
        raise self.retry(
            countdown=settings.FAITHANNO_SCORING_RETRY_SECONDS,
            kwargs={**self.request.kwargs, "computed_before": result["computed_by_task"]},
        )
    return result


def _unfinished(dataset_id: int, metric: str, options: dict[str, Any], document_ids: list[int]) -> bool:
    plan = metric_plan(metric, options)
    digest = config_hash(plan.config)
    summaries = Summary.objects.filter(document__dataset_id=dataset_id, document_id__in=document_ids)
    done = Explanation.objects.filter(summary__in=summaries, metric=plan.metric, config_hash=digest).count()
    return done < summaries.count()
