"""Which tasks of a study can be adjudicated (the reads of the adjudication pages are in
review.selectors.adjudication)."""

from __future__ import annotations

from protocols.tasks import TaskDefinition, get_task
from studies.models import Study, StudyTask


def adjudication_problem(task: TaskDefinition) -> str:
    """Why the items of a task cannot be adjudicated ("" when they can)."""
    if task.spans:
        return "span tasks mark their own units per annotator; there is no shared unit to decide a label for"
    if task.edit:
        return "each annotator writes their own edit; there is no shared label to decide"
    return ""


def adjudicable_tasks(*, study: Study) -> tuple[list[StudyTask], dict[str, str]]:
    """The study's tasks whose items can be adjudicated, and the others with the reason."""
    tasks, others = [], {}
    for study_task in StudyTask.objects.filter(study=study).order_by("task"):
        problem = adjudication_problem(get_task(study_task.task))
        if problem:
            others[study_task.task] = problem
        else:
            tasks.append(study_task)
    return tasks, others


def study_adjudicator_names(*, study: Study) -> list[str]:
    """The study's adjudicators' usernames, sorted."""
    return sorted(study.adjudicators.values_list("username", flat=True))
