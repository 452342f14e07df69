"""Reads of a study's example items and of the tasks a researcher sets up (their guidelines and examples)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from corpus.models import Summary
from protocols.tasks import get_task
from studies.models import GuidelinesVersion, StudyExample, StudyTask
from studies.selectors.access import studies_for_user


def study_task_visible(*, user: User, study_id: int, task_id: int) -> StudyTask:
    """A task of a study the user runs (admins: any); raises StudyTask.DoesNotExist for any other."""
    return StudyTask.objects.select_related("study__dataset").get(
        pk=task_id, study__in=studies_for_user(user=user).filter(pk=study_id)
    )


def study_example_visible(*, user: User, study_id: int, example_id: int) -> StudyExample:
    """An example item of a study the user runs (admins: any); raises StudyExample.DoesNotExist for any other."""
    return StudyExample.objects.select_related("study_task__study", "summary__document", "explanation").get(
        pk=example_id, study_task__study__in=studies_for_user(user=user).filter(pk=study_id)
    )


def study_task_examples_listed(*, study_task: StudyTask) -> QuerySet[StudyExample]:
    """The task's examples as the researcher's list shows them, annotated or not."""
    return study_task.examples.select_related("summary__document").order_by("position", "pk")


def example_candidates(*, study_task: StudyTask) -> QuerySet[Summary]:
    """The summaries that may become an example of the task: of the study's dataset, no item of the task (an
    example would tell annotators the answer), references only for a task that edits references."""
    summaries = (
        Summary.objects.filter(document__dataset_id=study_task.study.dataset_id)
        .exclude(study_items__study_task=study_task)
        .select_related("document")
        .order_by("document__external_id", "external_id")
    )
    if get_task(study_task.task).references_only:
        summaries = summaries.filter(is_reference=True)
    return summaries


def guidelines_versions(*, study_task: StudyTask) -> QuerySet[GuidelinesVersion]:
    """Every saved version of the task's guidelines with who saved it."""
    return study_task.guideline_versions.select_related("created_by")
