"""Reads about LLM judges: a study's runs and what each run did with its items."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from judges.models import JudgeItem, JudgeRun
from protocols.llm_judge import judgeable
from protocols.tasks import get_task
from studies.models import Study, StudyTask
from studies.selectors.access import studies_for_user


def judgeable_tasks(*, study: Study, study_tasks: list[StudyTask] | None = None) -> list[StudyTask]:
    """The study's tasks a model can judge (a label per unit; not spans, not edits); `study_tasks`: the
    study's tasks when the caller has them already."""
    if study.kind != Study.Kind.STUDY:
        return []
    tasks = study.tasks.all() if study_tasks is None else study_tasks
    return [study_task for study_task in tasks if judgeable(get_task(study_task.task))]


def study_judge_runs(*, study: Study, limit: int = 20) -> list[JudgeRun]:
    """The study's newest runs with their rater and task (one query)."""
    return list(
        JudgeRun.objects.filter(study_task__study=study)
        .select_related("rater__user", "study_task")
        .order_by("-created_at", "-pk")[:limit]
    )


def judge_runs_for_study(*, study: Study) -> QuerySet[JudgeRun]:
    return JudgeRun.objects.filter(study_task__study=study).select_related("rater__user", "study_task")


def judge_runs_for_user(*, user: User) -> QuerySet[JudgeRun]:
    """The runs of the studies the user runs (admins: any)."""
    runs = JudgeRun.objects.filter(study_task__study__in=studies_for_user(user=user))
    return runs.select_related("rater__user", "study_task")


def judge_run_items(*, run: JudgeRun) -> QuerySet[JudgeItem]:
    """Every item the run decided, in item order: the exact prompt, the answer and, when it failed, why."""
    return JudgeItem.objects.filter(run=run).select_related("item").order_by("item__position", "pk")


def run_failures(*, runs: list[JudgeRun], per_run: int = 5) -> dict[int, list[Any]]:
    """run id -> its first failed items (item id, reason), for the study page (one query)."""
    failures: dict[int, list[Any]] = {run.pk: [] for run in runs}
    rows = (
        JudgeItem.objects.filter(run__in=runs, status=JudgeItem.Status.FAILED)
        .order_by("run", "item__position", "pk")
        .values_list("run_id", "item_id", "reason")
    )
    for run_id, item_id, reason in rows:
        if len(failures[run_id]) < per_run:
            failures[run_id].append((item_id, reason))
    return failures
