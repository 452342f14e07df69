"""Studies: choosing items, giving each to exactly k annotators, and taking in their judgements."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotations.models import Assignment, Dataset, Judgement, Study, StudyItem, StudyTask, Summary
from annotations.selectors.assignments import item_units
from annotations.tasks import STUDY_TASKS, get_task
from scoring.models import Explanation

# A single visit longer than this is an idle tab, not work; the browser already pauses on inactivity.
MAX_SECONDS_PER_SUBMISSION = 4 * 3600


@dataclass(frozen=True)
class StudyPlan:
    study: Study
    items: int
    assignments: int
    skipped: dict[str, int]


def _explanations_for(task_key: str, summaries: Sequence[Summary], config_hash: str | None) -> dict[int, Explanation]:
    """The explanation each summary shows in this task: of the task's preferred metric that exists, with
    the given configuration, else the newest one."""
    metrics = get_task(task_key).explanation_metrics
    if not metrics:
        return {}
    queryset = Explanation.objects.filter(metric__in=metrics, summary__in=summaries)
    if config_hash:
        queryset = queryset.filter(config_hash=config_hash)
    chosen: dict[int, Explanation] = {}
    rank = {metric: position for position, metric in enumerate(metrics)}
    # Later rows win within a metric (newest configuration); a preferred metric always wins over a fallback.
    for explanation in sorted(queryset, key=lambda e: (-rank[e.metric], e.created_at, e.pk)):
        chosen[explanation.summary_id] = explanation
    return chosen


@transaction.atomic
def study_create(
    *,
    name: str,
    dataset: Dataset,
    tasks: Sequence[str],
    annotators: Sequence[AbstractUser],
    annotators_per_item: int,
    created_by: AbstractUser | None,
    sample_size: int | None = None,
    seed: int = 0,
    explanation_config_hash: str | None = None,
    guidelines: Mapping[str, str] | None = None,
) -> StudyPlan:
    """Create a study over a dataset's summaries (all, or a seeded random sample) and assign its items."""
    if not name.strip():
        raise ValidationError({"name": "A study needs a name."})
    unknown = [task for task in tasks if task not in STUDY_TASKS]
    if not tasks or unknown:
        raise ValidationError({"tasks": f"Choose tasks from: {', '.join(STUDY_TASKS)}."})
    if annotators_per_item < 1:
        raise ValidationError({"annotators_per_item": "At least one annotator per item."})
    if len(set(annotators)) < annotators_per_item:
        raise ValidationError(
            {
                "annotators": f"{annotators_per_item} annotators per item need at least that many annotators; "
                f"{len(set(annotators))} chosen."
            }
        )
    summaries = list(Summary.objects.filter(document__dataset=dataset).order_by("document__external_id", "external_id"))
    if not summaries:
        raise ValidationError({"dataset": f"Dataset {dataset.name!r} has no summaries."})
    if sample_size is not None:
        if sample_size < 1:
            raise ValidationError({"sample_size": "Sample at least one summary."})
        chosen = random.Random(seed).sample(range(len(summaries)), min(sample_size, len(summaries)))
        summaries = [summaries[index] for index in sorted(chosen)]

    study = Study.objects.create(
        name=name, dataset=dataset, annotators_per_item=annotators_per_item, created_by=created_by
    )
    if created_by is not None:
        study.researchers.add(created_by)
    study.annotators.add(*annotators)

    skipped: dict[str, int] = {}
    items: list[StudyItem] = []
    for task_key in tasks:
        task = get_task(task_key)
        explanations = _explanations_for(task_key, summaries, explanation_config_hash)
        if task.explanation_metric:
            missing = [s for s in summaries if s.pk not in explanations]
            if missing:
                raise ValidationError(
                    {
                        "tasks": f"{len(missing)} of {len(summaries)} summaries have no {task.explanation_metric} "
                        f'explanation; run: python manage.py score --dataset "{dataset.name}" '
                        f"--metric {task.explanation_metric}"
                    }
                )
        study_task = StudyTask.objects.create(
            study=study,
            task=task_key,
            guidelines=(guidelines or {}).get(task_key, ""),
            explanation_config_hash=explanation_config_hash or "",
        )
        position = 0
        for summary in summaries:
            explanation = explanations.get(summary.pk)
            if explanation is not None:
                payload = explanation.payload
                units = task.units(summary_text=summary.text, summary_sentences=summary.sentences, payload=payload)
                if explanation.error or not units:
                    # Nothing to judge: an undefined score (e.g. an empty summary) or no content word.
                    skipped[task_key] = skipped.get(task_key, 0) + 1
                    continue
            items.append(StudyItem(study_task=study_task, summary=summary, explanation=explanation, position=position))
            position += 1
    StudyItem.objects.bulk_create(items)
    created = assignments_distribute(study=study, seed=seed)
    return StudyPlan(study=study, items=len(items), assignments=created, skipped=skipped)


@transaction.atomic
def assignments_distribute(*, study: Study, seed: int = 0) -> int:
    """Give every item of the study to exactly k distinct annotators, always to the least loaded ones.

    Items are topped up to k (existing assignments stay), so adding annotators to a running study and
    calling this again spreads the remaining work. Greedy least-loaded choice keeps the difference
    between the most and the least loaded annotator at one item at most.
    """
    k = study.annotators_per_item
    annotators = list(study.annotators.filter(is_active=True).order_by("pk"))
    rng = random.Random(seed)
    rng.shuffle(annotators)
    load = {
        row["annotator"]: row["n"]
        for row in Assignment.objects.filter(item__study_task__study=study).values("annotator").annotate(n=Count("id"))
    }
    items = list(
        StudyItem.objects.filter(study_task__study=study)
        .annotate(n=Count("assignments"))
        .filter(n__lt=k)
        .order_by("study_task__task", "position")
    )
    taken = {
        (row["item_id"], row["annotator_id"])
        for row in Assignment.objects.filter(item__in=items).values("item_id", "annotator_id")
    }
    new: list[Assignment] = []
    for item in items:
        candidates = [user for user in annotators if (item.pk, user.pk) not in taken]
        needed = k - item.n
        if len(candidates) < needed:
            raise ValidationError(
                {"annotators": f"Item {item.pk} needs {needed} more annotators but only {len(candidates)} are free."}
            )
        # Stable sort on the shuffled list: ties are broken by the seeded order, not by user id.
        for user in sorted(candidates, key=lambda u: load.get(u.pk, 0))[:needed]:
            load[user.pk] = load.get(user.pk, 0) + 1
            # The annotator's queue follows the order in which work was handed out.
            new.append(Assignment(item=item, annotator=user, position=load[user.pk]))
    Assignment.objects.bulk_create(new)
    return len(new)


def _checked_labels(assignment: Assignment, labels: Mapping[int, str]) -> tuple[dict[int, str], dict[int, str]]:
    task = get_task(assignment.item.study_task.task)
    units = {unit.index: unit.text for unit in item_units(assignment.item)}
    errors = []
    cleaned: dict[int, str] = {}
    for raw_index, label in labels.items():
        try:
            index = int(raw_index)
        except (TypeError, ValueError):
            errors.append(f"unit {raw_index!r} is not a unit number")
            continue
        if index not in units:
            errors.append(f"unit {index} does not exist in this item")
        elif label not in task.values:
            errors.append(f"{label!r} is not a choice of task {task.key!r} (choices: {', '.join(task.values)})")
        else:
            cleaned[index] = label
    if errors:
        raise ValidationError(errors)
    return cleaned, units


@transaction.atomic
def assignment_submit(
    *,
    assignment: Assignment,
    user: AbstractUser,
    labels: Mapping[int, str],
    comment: str = "",
    seconds: float = 0.0,
) -> Assignment:
    """Store the annotator's labels for every unit of an item and mark it done.

    Submitting again (a second tab, a double click, a later edit) updates the same judgement set: the
    assignment row is locked and judgements are upserted on (assignment, unit).
    """
    if assignment.annotator_id != user.pk:
        raise PermissionDenied("This item is not assigned to you.")
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item__study_task", "item__summary", "item__explanation")
        .get(pk=assignment.pk)
    )
    cleaned, units = _checked_labels(locked, labels)
    missing = len(set(units) - set(cleaned))
    if missing:
        raise ValidationError(f"{missing} unit(s) still need a label.")
    Judgement.objects.bulk_create(
        [
            Judgement(assignment=locked, unit_index=index, unit_text=units[index], label=label)
            for index, label in sorted(cleaned.items())
        ],
        update_conflicts=True,
        unique_fields=["assignment", "unit_index"],
        update_fields=["label", "unit_text", "updated_at"],
    )
    now = timezone.now()
    locked.status = Assignment.Status.SUBMITTED
    locked.submitted_at = locked.submitted_at or now
    locked.comment = comment.strip()
    locked.time_spent += min(max(float(seconds), 0.0), MAX_SECONDS_PER_SUBMISSION)
    locked.guidelines_version = locked.item.study_task.guidelines_version
    locked.save(update_fields=["status", "submitted_at", "comment", "time_spent", "guidelines_version", "updated_at"])
    return locked
