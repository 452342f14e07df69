"""Pull-based assignment for crowds, and the checks that act on each item a worker submits.

The next item of a worker is the one furthest from k (counting accepted work: submitted by workers who are
not excluded, plus items held right now) that shows a summary this worker has not seen in any task of the
study; attention checks are mixed in at the study's rate, evenly spread, and look like any other item.
Items held longer than the study's timeout go back to the pool.

The checks run on the server whenever the worker asks for more work (and before the session ends), on what
was submitted, whichever path the submission took: an attention check is graded once (the outcome is frozen,
so resubmitting cannot change it), time and explanation checks use the active time already recorded, and the
warn/block decisions of protocols.decisions act (a block ends the session with the failure code).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from crowd.models import ANNOTATION, CrowdItemRecord, CrowdStudy, CrowdWorker
from crowd.services.workers import assignments_reclaim, crowd_worker_end
from protocols.attention import CheckResult, attention_decisions
from protocols.conditions import block_of
from protocols.decisions import BLOCK, OK, WARN, Thresholds, WorkerDecision, decisions_merge
from protocols.tasks import CheckOutcome, CheckTarget, get_task
from protocols.timing import ItemWork, TimeRules, time_decisions
from studies.models import Assignment, Study, StudyCondition, StudyItem
from studies.selectors.assignments import item_units
from studies.selectors.participation import excluded_annotator_ids
from studies.services.conditions import annotator_condition_orders

OPEN = Assignment.Status.ASSIGNED
DONE = Assignment.Status.SUBMITTED
RECLAIMED = Assignment.Status.RECLAIMED
MAX_PASTE_EVENTS = 10_000


def abandoned_release(*, crowd: CrowdStudy) -> int:
    """Items held longer than the timeout without being touched go back to the pool (kept as reclaimed)."""
    cutoff = timezone.now() - timedelta(minutes=crowd.timeout_minutes)
    return assignments_reclaim(
        Assignment.objects.filter(item__study_task__study_id=crowd.study_id, touched_at__lt=cutoff)
    )


def check_due(rate: float, taken: int) -> bool:
    """Whether the worker's item number taken + 1 is a check: checks fall evenly, `rate` of the items."""
    return rate > 0 and math.floor((taken + 1) * rate + 1e-9) > math.floor(taken * rate + 1e-9)


def _check_item(crowd: CrowdStudy, mine: object) -> StudyItem | None:
    """The check this worker has not had that fewest workers had (then in the order they were made)."""
    return (
        StudyItem.objects.filter(study_task__study_id=crowd.study_id, crowd_check__isnull=False)
        .exclude(pk__in=mine.values("item_id"))  # type: ignore[attr-defined]
        .annotate(n=Count("assignments"))
        .order_by("n", "position", "pk")
        .first()
    )


def _real_items(crowd: CrowdStudy, mine: object, condition: StudyCondition | None = None) -> QuerySet[StudyItem]:
    """The items short of k (accepted work plus items held now) whose summary this worker has not seen,
    furthest from k first; in a study with conditions, counting the work of that condition only (k applies
    per condition)."""
    study = crowd.study
    in_arm = Q() if condition is None else Q(assignments__condition=condition)
    accepted = Count(
        "assignments",
        filter=in_arm
        & Q(assignments__status=DONE)
        & ~Q(assignments__annotator__in=excluded_annotator_ids(study=study)),
    )
    held = Count("assignments", filter=in_arm & Q(assignments__status=OPEN))
    return (
        StudyItem.objects.filter(study_task__study=study, crowd_check__isnull=True)
        .exclude(summary_id__in=mine.values("item__summary_id"))  # type: ignore[attr-defined]
        .annotate(accepted=accepted, held=held)
        .annotate(load=F("accepted") + F("held"))
        .filter(load__lt=study.annotators_per_item)
        .order_by("load", "accepted", "position", "pk")
    )


# Items looked at before the pull takes its turn (benchmarks/crowd.py, docs/PERFORMANCE.md).
CANDIDATES = 50


def _real_item(
    crowd: CrowdStudy, mine: object, condition: StudyCondition | None, candidates: list[int]
) -> StudyItem | None:
    """The item furthest from k, counted again now: among the candidates chosen before the pull's turn, else
    (all of them filled meanwhile) among all items."""
    items = _real_items(crowd, mine, condition)
    chosen = items.filter(pk__in=candidates).first() if candidates else None
    return chosen or items.first()


def _conditions_to_try(
    crowd: CrowdStudy, worker: CrowdWorker, real: int, conditions: list[StudyCondition]
) -> list[StudyCondition | None]:
    """The conditions the worker's next item may come from, best first: none in a study without conditions;
    between annotators, the worker's one condition; within annotators, the condition of the block their
    next item falls in (their maximum cut into one block per condition, in their counterbalanced order),
    then the later ones, when that condition's items all have their k."""
    if not conditions:
        return [None]
    orders = annotator_condition_orders(study=crowd.study, annotators=[worker.user], conditions=conditions)
    order: list[StudyCondition | None] = list(orders[worker.user_id])
    if crowd.study.condition_design == Study.ConditionDesign.BETWEEN:
        return order
    # A worker sees each summary once: no more than the study's summaries fit into their blocks.
    summaries = (
        StudyItem.objects.filter(study_task__study=crowd.study, crowd_check__isnull=True)
        .values("summary_id")
        .distinct()
        .count()
    )
    block = block_of(real, total=min(crowd.max_items_per_worker, summaries), conditions=len(order))
    return order[block:] + order[:block]


def _real_count(mine: QuerySet[Assignment]) -> int:
    """How many study items (not attention checks) the worker has taken, given back ones left out."""
    return mine.exclude(status=RECLAIMED).filter(item__crowd_check__isnull=True).count()


@transaction.atomic
def crowd_item_next(*, worker: CrowdWorker) -> Assignment | None:
    """The worker's open item, or a new one pulled from the pool; None when there is nothing more for them
    (their maximum reached, or every item has its k)."""
    crowd = CrowdStudy.objects.select_related("study").get(pk=worker.crowd_study_id)
    mine = Assignment.objects.filter(annotator_id=worker.user_id, item__study_task__study_id=crowd.study_id)
    # The query over every item of the study runs before the pull takes its turn, so that pulls wait for each
    # other only for a few cheap queries; its candidates are counted again in the turn.
    holding = mine.filter(status=OPEN).exists()  # their open item comes back: no candidates needed
    conditions = list(crowd.study.conditions.all())
    # In a study with conditions the worker's condition may be chosen in the turn (which locks the study):
    # its pulls rank every item in the turn, as a study's first pulls would.
    candidates: list[int] = []
    if not holding and not conditions:
        candidates = list(_real_items(crowd, mine).values_list("pk", flat=True)[:CANDIDATES])
    # Pulls of one study are taken one at a time: two workers never both take an item's last place.
    crowd = CrowdStudy.objects.select_for_update().select_related("study").get(pk=worker.crowd_study_id)
    abandoned_release(crowd=crowd)
    if not CrowdWorker.objects.filter(pk=worker.pk, status=CrowdWorker.Status.ACTIVE).exists():
        return None  # their session ended while the pull waited for its turn (e.g. they left on the platform)
    current = mine.filter(status=OPEN).order_by("position", "pk").first()
    if current is not None:
        return current
    real = _real_count(mine)
    if real >= crowd.max_items_per_worker:
        return None
    taken = mine.exclude(status=RECLAIMED).count()
    item, condition = None, None
    for condition in _conditions_to_try(crowd, worker, real, conditions):
        item = _real_item(crowd, mine, condition, candidates)
        if item is not None:
            break
    if item is None:
        return None  # no real work left: no more checks either
    if check_due(crowd.check_rate, taken):
        # A check is chosen and graded as in any study; it is shown under the worker's current condition so
        # that it looks like any other item.
        item = _check_item(crowd, mine) or item
    position = (mine.order_by("-position").values_list("position", flat=True).first() or 0) + 1
    assignment = Assignment.objects.create(
        item=item, annotator_id=worker.user_id, position=position, condition=condition
    )
    CrowdItemRecord.objects.create(assignment=assignment, worker=worker)
    return assignment


@transaction.atomic
def crowd_paste_record(*, worker: CrowdWorker, assignment_id: int) -> int:
    """Count a paste into an explanation of the worker's own open item; Assignment.DoesNotExist otherwise."""
    assignment = Assignment.objects.get(
        pk=assignment_id,
        annotator_id=worker.user_id,
        item__study_task__study_id=worker.crowd_study.study_id,
        status__in=[OPEN, DONE],
    )
    record, _ = CrowdItemRecord.objects.select_for_update().get_or_create(assignment=assignment, worker=worker)
    if record.paste_events < MAX_PASTE_EVENTS:
        record.paste_events += 1
        record.save(update_fields=["paste_events"])
    return record.paste_events


@dataclass(frozen=True)
class Evaluation:
    decision: WorkerDecision
    new_warnings: list[str]  # reasons the worker has not been told yet
    ended: bool  # the worker was blocked now


def time_rules(crowd: CrowdStudy) -> TimeRules:
    thresholds = Thresholds(warn_at=crowd.time_warn_at, block_at=crowd.time_block_at)
    return TimeRules(
        min_seconds=dict(crowd.min_seconds),
        min_explanation_chars=crowd.min_explanation_chars,
        fast=thresholds,
        short_explanation=thresholds,
    )


@transaction.atomic
def crowd_work_evaluate(*, worker: CrowdWorker) -> Evaluation:
    """Grade the worker's submitted items not graded yet, then decide on all their work: warn (new reasons
    are returned once, for a notice) or block (the session ends with the failure code)."""
    worker = CrowdWorker.objects.select_for_update(of=("self",)).select_related("crowd_study__study").get(pk=worker.pk)
    crowd = worker.crowd_study
    done = list(
        Assignment.objects.filter(annotator_id=worker.user_id, item__study_task__study_id=crowd.study_id, status=DONE)
        .select_related("item__study_task", "item__summary", "item__explanation", "item__crowd_check")
        .prefetch_related("judgements")
        .order_by("position", "pk")
    )
    records = {record.assignment_id: record for record in CrowdItemRecord.objects.filter(worker=worker)}
    now = timezone.now()
    results, works = [], []
    name = str(worker.pk)
    for assignment in done:
        record = records.get(assignment.pk) or CrowdItemRecord.objects.create(assignment=assignment, worker=worker)
        check = getattr(assignment.item, "crowd_check", None)
        task = get_task(assignment.item.study_task.task)
        judgements = list(assignment.judgements.all())
        if record.evaluated_at is None:
            if check is not None:
                span = (check.span_start, check.span_end) if check.span_start is not None else None
                outcome = task.check_outcome(
                    CheckTarget(assignment.item.summary.text, check.expected, span),
                    judgements=judgements,
                    units=item_units(assignment.item),
                )
                record.check_passed, record.check_reason = outcome.passed, outcome.reason
            record.evaluated_at = now
            record.save(update_fields=["evaluated_at", "check_passed", "check_reason"])
        if check is not None:
            results.append(CheckResult(name, assignment.pk, CheckOutcome(record.check_passed, record.check_reason)))
        works.append(
            ItemWork(
                worker=name,
                item=assignment.pk,
                task=task.key,
                active_seconds=assignment.time_spent,
                explanations=[j.note for j in judgements] if task.note_required else (),
                paste_events=record.paste_events,
            )
        )
    attention = Thresholds(warn_at=crowd.attention_warn_at, block_at=crowd.attention_block_at)
    merged = decisions_merge(attention_decisions(results, attention), time_decisions(works, time_rules(crowd)))
    decision = merged[0] if merged else WorkerDecision(name, OK, (), ())
    if decision.action == BLOCK and worker.status == CrowdWorker.Status.ACTIVE:
        reasons = "; ".join(reason for reason in decision.reasons if reason.startswith(BLOCK))
        crowd_worker_end(worker=worker, status=CrowdWorker.Status.BLOCKED, reason=reasons)
        return Evaluation(decision=decision, new_warnings=[], ended=True)
    new = [reason for reason in decision.reasons if reason.startswith(WARN) and reason not in worker.warnings]
    if new:
        worker.warnings = [*worker.warnings, *new]
        worker.save(update_fields=["warnings", "last_seen_at"])
    return Evaluation(decision=decision, new_warnings=new, ended=False)


def in_annotation(worker: CrowdWorker) -> bool:
    return worker.status == CrowdWorker.Status.ACTIVE and worker.phase == ANNOTATION
