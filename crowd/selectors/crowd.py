"""Reads of crowd studies and their workers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.urls import reverse

from crowd.models import KEY_MAX_CHARS, CrowdStudy, CrowdWorker, TrainingItem
from studies.models import Assignment


def crowd_study_by_key(*, key: str) -> CrowdStudy | None:
    """The crowd study whose public link holds `key` (None: no such link)."""
    if not isinstance(key, str) or not 1 <= len(key) <= KEY_MAX_CHARS:
        return None
    return CrowdStudy.objects.select_related("study").filter(key=key).first()


def crowd_public_link(*, crowd: CrowdStudy) -> str:
    """The study's public link as workers open it: SITE_URL and /crowd/<key>/."""
    return settings.SITE_URL.rstrip("/") + reverse("crowd_start", args=[crowd.key])


def crowd_study_of(*, study_id: int) -> CrowdStudy | None:
    return CrowdStudy.objects.select_related("study").filter(study_id=study_id).first()


def crowd_worker_get(*, worker_id: Any, user_id: Any) -> CrowdWorker | None:
    """The crowd worker of a session: both ids must agree (a session of another account is no worker's)."""
    if not isinstance(worker_id, int) or not isinstance(user_id, int):
        return None
    return (
        CrowdWorker.objects.select_related("crowd_study__study", "participation", "user")
        .filter(pk=worker_id, user_id=user_id)
        .first()
    )


def crowd_worker_is_active(*, worker_id: Any) -> bool:
    return isinstance(worker_id, int) and CrowdWorker.objects.filter(pk=worker_id, status="active").exists()


def training_item_current(*, worker: CrowdWorker) -> TrainingItem | None:
    """The first training item the worker has not answered in this attempt."""
    answered = [int(key) for key in worker.training_answers]
    return (
        TrainingItem.objects.filter(crowd_study_id=worker.crowd_study_id)
        .exclude(pk__in=answered)
        .select_related("document")
        .order_by("position", "pk")
        .first()
    )


def training_items_count(*, worker: CrowdWorker) -> int:
    return TrainingItem.objects.filter(crowd_study_id=worker.crowd_study_id).count()


def crowd_workers(*, crowd: CrowdStudy) -> QuerySet[CrowdWorker]:
    return CrowdWorker.objects.filter(crowd_study=crowd).select_related("participation").order_by("started_at", "pk")


def crowd_worker_counts(*, crowd: CrowdStudy) -> dict[str, int]:
    """How many workers are at each status (every status listed, 0 when none)."""
    counts = dict(
        CrowdWorker.objects.filter(crowd_study=crowd)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {status: counts.get(status, 0) for status in CrowdWorker.Status.values}


SURVEY_FIELDS = ("worker_id", "platform", "status", "survey", "question", "answer")


def survey_answer_rows(*, crowd: CrowdStudy) -> Iterator[dict[str, Any]]:
    """One row per answer of every worker to the pre- and post-survey (multiple choices joined by '; ')."""
    workers = crowd_workers(crowd=crowd).only("status", "survey_answers", "participation__external_id")
    for worker in workers.iterator(chunk_size=500):
        for survey in ("pre_survey", "post_survey"):
            for question, answer in (worker.survey_answers.get(survey) or {}).items():
                yield {
                    "worker_id": worker.participation.external_id,
                    "platform": crowd.platform,
                    "status": worker.status,
                    "survey": survey,
                    "question": question,
                    "answer": "; ".join(answer) if isinstance(answer, list) else answer,
                }


def crowd_items_done(*, worker: CrowdWorker) -> int:
    """The real items (no attention checks) the worker submitted or marked "cannot judge"."""
    return Assignment.objects.filter(
        annotator_id=worker.user_id,
        item__study_task__study_id=worker.crowd_study.study_id,
        item__crowd_check__isnull=True,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED],
    ).count()
