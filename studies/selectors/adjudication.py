"""The tasks of a study to adjudicate and its adjudicators (the reads of the adjudication pages are in
review.selectors.adjudication)."""

from __future__ import annotations

from studies.models import Study, StudyTask


def adjudicable_tasks(*, study: Study) -> list[StudyTask]:
    """The study's tasks, each of which can be adjudicated: label tasks per unit, span and edit tasks per
    item (review.services.adjudication)."""
    return list(StudyTask.objects.filter(study=study).order_by("task"))


def study_adjudicator_names(*, study: Study) -> list[str]:
    """The study's adjudicators' usernames, sorted."""
    return sorted(study.adjudicators.values_list("username", flat=True))
