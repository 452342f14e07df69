"""Reads for the analysis pages and the API: a study's tasks, the tasks and the study holding a dataset's
imported crowd labels, one item a user may read, the annotators a study could still take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from accounts.selectors import annotator_accounts
from corpus.models import Dataset
from studies.models import Study, StudyItem, StudyTask
from studies.selectors.access import studies_readable


def annotators_outside_study(*, study: Study, usernames: Sequence[str]) -> list[Any]:
    """The annotator accounts among `usernames` that are not yet annotators of the study."""
    return list(annotator_accounts().filter(username__in=list(usernames)).exclude(pk__in=study.annotators.all()))


def study_tasks(*, study: Study, task: str | None = None) -> QuerySet[StudyTask]:
    """The study's tasks (only `task` when given) with their study and dataset."""
    tasks = study.tasks.select_related("study__dataset")
    return tasks.filter(task=task) if task else tasks


def dataset_imported_tasks(*, dataset: Dataset, task: str | None = None) -> QuerySet[StudyTask]:
    """The tasks of the dataset's imported crowd labels (only `task` when given) with their study and dataset."""
    tasks = StudyTask.objects.filter(study__dataset=dataset, study__kind=Study.Kind.IMPORTED).select_related(
        "study__dataset"
    )
    return tasks.filter(task=task) if task else tasks


def dataset_imported_study(*, dataset_id: int) -> Study:
    """The study holding the dataset's imported judgements; raises Study.DoesNotExist when it has none."""
    return Study.objects.select_related("dataset").get(dataset_id=dataset_id, kind=Study.Kind.IMPORTED)


def study_item_readable(*, item_id: int, user: User) -> StudyItem:
    """An item of a study the user may read, with its study, summary and explanation; raises
    StudyItem.DoesNotExist for any other, so ids cannot be probed."""
    return StudyItem.objects.select_related("study_task__study__dataset", "summary__document", "explanation").get(
        pk=item_id, study_task__study__in=studies_readable(user=user)
    )
