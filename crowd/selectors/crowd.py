"""Reads of crowd studies and their workers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.urls import reverse

from crowd.models import KEY_MAX_CHARS, TRAINING, CrowdStudy, CrowdWorker, TrainingItem
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
SURVEY_COLUMN_TYPES = dict.fromkeys(SURVEY_FIELDS, "text")


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


# One row per worker of a public study (docs/EXPORTS.md, "Crowd workers"): who they are on the platform, how
# their session went, their training and their attention checks.
WORKER_COLUMN_TYPES: dict[str, str] = {
    "study": "integer",
    "worker_id": "text",
    "platform": "text",
    "platform_study_id": "text",
    "platform_session_id": "text",
    "annotator": "text",
    "status": "text",
    "phase": "text",
    "excluded": "boolean",
    "started_at": "text",
    "consented_at": "text",
    "finished_at": "text",
    "end_reason": "text",
    "training_attempts": "integer",
    "training_passed": "boolean",
    "items_done": "integer",
    "checks_graded": "integer",
    "checks_passed": "integer",
    "check_pass_rate": "number",
}
WORKER_FIELDS = tuple(WORKER_COLUMN_TYPES)


def _iso(moment: Any) -> str:
    return moment.isoformat() if moment is not None else ""


def crowd_worker_rows(*, crowd: CrowdStudy) -> Iterator[dict[str, Any]]:
    """One row per worker of the public study, in the order they arrived: platform ids, status and phase,
    exclusion, the training's finished attempts and whether the last one passed, the real items done and the
    attention checks graded and passed (check_pass_rate empty when none was graded). One query."""
    graded = Q(records__check_passed__isnull=False)
    workers = (
        crowd_workers(crowd=crowd)
        .select_related("user")
        .annotate(
            checks_graded=Count("records", filter=graded),
            checks_passed=Count("records", filter=graded & Q(records__check_passed=True)),
            items_done=Count(
                "records",
                filter=Q(records__assignment__item__crowd_check__isnull=True)
                & Q(records__assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED]),
            ),
        )
    )
    for worker in workers.iterator(chunk_size=500):
        attempts = [attempt for attempt in worker.training_results if isinstance(attempt, dict)]
        yield {
            "study": crowd.study_id,
            "worker_id": worker.participation.external_id,
            "platform": worker.participation.platform,
            "platform_study_id": worker.platform_study_id,
            "platform_session_id": worker.platform_session_id,
            "annotator": worker.user.get_username(),
            "status": worker.status,
            "phase": worker.phase,
            "excluded": worker.participation.excluded,
            "started_at": _iso(worker.started_at),
            "consented_at": _iso(worker.consented_at),
            "finished_at": _iso(worker.finished_at),
            "end_reason": worker.end_reason,
            "training_attempts": len(attempts),
            "training_passed": bool(attempts[-1].get("passed")) if attempts else None,
            "items_done": worker.items_done,
            "checks_graded": worker.checks_graded,
            "checks_passed": worker.checks_passed,
            "check_pass_rate": worker.checks_passed / worker.checks_graded if worker.checks_graded else None,
        }


# One row per finished training attempt (docs/EXPORTS.md, "Training attempts").
TRAINING_COLUMN_TYPES: dict[str, str] = {
    "study": "integer",
    "worker_id": "text",
    "platform": "text",
    "phase": "text",
    "attempt": "integer",
    "correct": "integer",
    "total": "integer",
    "passed": "boolean",
}
TRAINING_FIELDS = tuple(TRAINING_COLUMN_TYPES)


def training_attempt_rows(*, crowd: CrowdStudy) -> Iterator[dict[str, Any]]:
    """One row per training attempt a worker finished (the pass rule decided it), in the order the workers
    arrived and attempted: how many gold items they got right of how many, and whether the attempt passed."""
    workers = crowd_workers(crowd=crowd).only("training_results", "participation__external_id")
    for worker in workers.iterator(chunk_size=500):
        for attempt in worker.training_results:
            if not isinstance(attempt, dict):
                continue
            yield {
                "study": crowd.study_id,
                "worker_id": worker.participation.external_id,
                "platform": crowd.platform,
                "phase": TRAINING,
                "attempt": attempt.get("attempt"),
                "correct": attempt.get("correct"),
                "total": attempt.get("total"),
                "passed": attempt.get("passed"),
            }


# The public study's own downloads: name -> (fields, column types, rows).
CROWD_EXPORTS: dict[str, tuple[tuple[str, ...], dict[str, str], Callable[..., Iterator[dict[str, Any]]]]] = {
    "surveys": (SURVEY_FIELDS, SURVEY_COLUMN_TYPES, survey_answer_rows),
    "workers": (WORKER_FIELDS, WORKER_COLUMN_TYPES, crowd_worker_rows),
    "training": (TRAINING_FIELDS, TRAINING_COLUMN_TYPES, training_attempt_rows),
}
