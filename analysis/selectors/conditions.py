"""Reads for comparing a study's conditions (issue 16 point 2): per task, the counted judgements grouped by the
condition each item was shown under (Assignment.condition), the time spent on each item, and the final labels;
the comparison itself is stats.conditions.

Each task costs a fixed number of queries (its judgements, its assignments' times, its final labels), whatever
the number of judgements; the page keeps the result in the cache under the state of the submitted work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from django.core.cache import cache
from django.db.models import Count, Max

from analysis.selectors.analysis import (
    final_unit_labels,
    submitted_assignments,
    submitted_judgements,
)
from protocols.tasks import get_task
from stats.conditions import ConditionComparison, ConditionLabels, compare_conditions
from studies.models import FinalLabel, Study, StudyCondition, StudyTask
from studies.selectors.participation import ACCEPTED
from studies.selectors.studies import TaskProgress
from studies.selectors.tallies import DONT_KNOW_AS_INCORRECT

# The page's and the API's default: resamples for the bootstrap and permutations for the test, with a fixed seed.
CONDITION_RESAMPLES = 1000
CONDITION_SEED = 0
SPANS_NOT_COMPARED = "span tasks mark spans, not labels per unit: their conditions are not compared here"
EDITS_NOT_COMPARED = "edit tasks (BUMP) have no labels to compare"


@dataclass(frozen=True)
class TaskConditions:
    """One task's comparison of the study's conditions, or why there is none; `n_without_condition`: counted
    judgements whose assignment has no condition (left out)."""

    study_task_id: int
    task: str
    comparison: ConditionComparison | None
    n_without_condition: int = 0
    reason: str = ""

    def comparison_dict(self) -> dict[str, object] | None:
        return self.comparison.as_dict() if self.comparison is not None else None


def study_conditions(*, study: Study) -> list[StudyCondition]:
    """The study's conditions, the reference (lowest position) first."""
    return list(StudyCondition.objects.filter(study=study).order_by("position", "id"))


def condition_labels(
    *,
    study_task: StudyTask,
    conditions: Iterable[StudyCondition],
    judgements: str = ACCEPTED,
    dont_know_as_incorrect: bool = False,
) -> tuple[list[ConditionLabels], int]:
    """Each condition's counted labels (unit -> annotator -> label) and times per (item, annotator), in the order
    of `conditions`; and how many counted judgements have no condition. Two queries."""
    mapping = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else {}
    labels: dict[int, dict[tuple[Hashable, int], dict[str, str]]] = {}
    seconds: dict[int, dict[tuple[Hashable, str], float]] = {}
    without = 0
    rows = submitted_judgements(study_task=study_task, judgements=judgements).values_list(
        "assignment__condition_id", "assignment__item_id", "unit_index", "assignment__annotator__username", "label"
    )
    for condition_id, item_id, unit_index, annotator, label in rows.iterator(chunk_size=10000):
        if condition_id is None:
            without += 1
            continue
        by_unit = labels.setdefault(condition_id, {})
        by_unit.setdefault((item_id, unit_index), {})[annotator] = mapping.get(label, label)
    times = submitted_assignments(study_task=study_task, judgements=judgements).values_list(
        "condition_id", "item_id", "annotator__username", "time_spent"
    )
    for condition_id, item_id, annotator, spent in times.iterator(chunk_size=10000):
        if condition_id is not None:
            seconds.setdefault(condition_id, {})[(item_id, annotator)] = spent
    return [
        ConditionLabels(condition.name, labels.get(condition.pk, {}), seconds.get(condition.pk, {}))
        for condition in conditions
    ], without


def conditions_compare(
    *,
    study: Study,
    study_tasks: Iterable[StudyTask],
    conditions: list[StudyCondition],
    judgements: str = ACCEPTED,
    dont_know_as_incorrect: bool = False,
    resamples: int = CONDITION_RESAMPLES,
    seed: int = CONDITION_SEED,
) -> list[TaskConditions]:
    """Per task of the study, its conditions compared with the first (stats.conditions.compare_conditions),
    agreement with the gold read from the task's final labels."""
    results = []
    for study_task in study_tasks:
        task = get_task(study_task.task)
        if task.edit or task.spans:
            reason = EDITS_NOT_COMPARED if task.edit else SPANS_NOT_COMPARED
            results.append(TaskConditions(study_task.pk, study_task.task, None, reason=reason))
            continue
        per_condition, without = condition_labels(
            study_task=study_task,
            conditions=conditions,
            judgements=judgements,
            dont_know_as_incorrect=dont_know_as_incorrect,
        )
        label_map = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
        gold = cast(
            "dict[tuple[Hashable, int], str | None]", final_unit_labels(study_task=study_task, label_map=label_map)
        )
        comparison = compare_conditions(
            per_condition, gold=gold, design=study.condition_design, resamples=resamples, seed=seed
        )
        results.append(TaskConditions(study_task.pk, study_task.task, comparison, without))
    return results


# A bound on how long a change that bypasses the services (a judgement edited in the admin) goes unseen.
CONDITIONS_CACHE_SECONDS = 24 * 3600


def conditions_compare_cached(
    *,
    study: Study,
    study_tasks: list[StudyTask],
    conditions: list[StudyCondition],
    progress: Mapping[int, TaskProgress],
    excluded: Iterable[int] = (),
    judgements: str = ACCEPTED,
    dont_know_as_incorrect: bool = False,
    resamples: int = CONDITION_RESAMPLES,
    seed: int = CONDITION_SEED,
) -> list[TaskConditions]:
    """conditions_compare, kept in the cache under the state of each task's submitted work (`progress`, from
    studies.selectors.studies.study_task_progress), of the final labels, of the conditions and of the excluded
    annotators (as analysis.selectors.analysis.study_agreement_cached): one aggregate query when cached."""
    finals = FinalLabel.objects.filter(item__study_task__study=study).aggregate(
        n=Count("id"), changed=Max("updated_at")
    )
    state = ";".join(
        f"{task.pk}:{task.task}:{progress[task.pk].submitted_state if task.pk in progress else ()}"
        for task in study_tasks
    )
    state += f";final:{finals['n']}:{finals['changed']};design:{study.condition_design}"
    state += ";conditions:" + ",".join(f"{condition.pk}={condition.name}" for condition in conditions)
    if judgements == ACCEPTED:
        state += ";excluded:" + ",".join(str(pk) for pk in sorted(excluded))
    digest = hashlib.sha256(state.encode()).hexdigest()[:32]
    key = f"study-conditions:1:{study.pk}:{int(dont_know_as_incorrect)}:{judgements}:{resamples}:{seed}:{digest}"
    compared = cache.get_or_set(
        key,
        lambda: conditions_compare(
            study=study,
            study_tasks=study_tasks,
            conditions=conditions,
            judgements=judgements,
            dont_know_as_incorrect=dont_know_as_incorrect,
            resamples=resamples,
            seed=seed,
        ),
        CONDITIONS_CACHE_SECONDS,
    )
    return cast("list[TaskConditions]", compared)
