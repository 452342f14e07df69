"""Studies: choosing items, giving each to exactly k annotators, and taking in their judgements."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from accounts.selectors import annotator_accounts
from common.roles import user_is_model_rater, user_is_researcher
from common.validation import InputError, finite_number, json_check, printable, storable_text, storable_text_problem
from corpus.models import Dataset, Summary
from protocols.conditions import block_of
from protocols.minimal_edit import edit_diff
from protocols.tasks import BUMP_ERROR_TYPES, BUMP_MODES, STUDY_TASKS, Submission, SubmissionError, get_task
from scoring.models import Explanation
from studies.models import Assignment, GuidelinesVersion, Judgement, Study, StudyCondition, StudyItem, StudyTask
from studies.selectors.assignments import annotator_assignments, item_units
from studies.selectors.selection import ItemSelection, selection_problems, summaries_select
from studies.selectors.tallies import tallied_task
from studies.services.conditions import (
    ConditionSpec,
    annotator_condition_orders,
    condition_problems,
    conditions_create,
)
from studies.services.tallies import agreement_tally_submitted

# A single visit longer than this is an idle tab, not work; the browser already pauses on inactivity.
MAX_SECONDS_PER_SUBMISSION = 4 * 3600
# More than this (a week of active time on one item) is no measurement but a broken or forged client: the
# submission is refused rather than counted as the four hours above.
MAX_REPORTED_SECONDS = 7 * 24 * 3600
# A reclaim time beyond a year is "never", which is an empty setting.
MAX_RECLAIM_HOURS = 24 * 365
MAX_COMMENT_CHARS = 5000
MAX_NAME_CHARS = Study._meta.get_field("name").max_length
MAX_GUIDELINES_CHARS = 20_000
MAX_CONFIG_CHARS = StudyTask._meta.get_field("explanation_config_hash").max_length
# More annotators per item than this is no study design but a typo.
MAX_ANNOTATORS_PER_ITEM = 50
MAX_DRAFT_BYTES = 256 * 1024
MAX_SKIP_NOTE_CHARS = 2000
OPEN = Assignment.Status.ASSIGNED
DONE = Assignment.Status.SUBMITTED
RECLAIMED = Assignment.Status.RECLAIMED
SKIPPED = Assignment.Status.SKIPPED


@dataclass(frozen=True)
class StudyPlan:
    study: Study
    items: int
    assignments: int
    skipped: dict[str, int]
    notes: list[str] = field(default_factory=list)


def explanations_for(task_key: str, summaries: Sequence[Summary], config_hash: str | None) -> dict[int, Explanation]:
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


def _reclaim_hours_check(hours: int | None) -> None:
    problem = _reclaim_hours_problem(hours)
    if problem:
        raise ValidationError({"reclaim_after_hours": problem})


def _reclaim_hours_problem(hours: int | None) -> str | None:
    if hours is not None and not 1 <= hours <= MAX_RECLAIM_HOURS:
        return f"Reclaim after 1 to {MAX_RECLAIM_HOURS} hours (or never); got {hours}."
    return None


def _task_options(task_key: str, options: Mapping[str, Any], problems: dict[str, list[str]]) -> dict[str, Any]:
    """Checked settings of one task (only the BUMP protocol has any: its mode and the error types asked
    for); a problem is keyed `<task>_<option>`, as the form and the API name the option."""
    if task_key != "bump":
        if options:
            problems.setdefault("task_options", []).append(f"The {task_key} task has no options; got {len(options)}.")
        return {}
    unknown = sorted(set(options) - {"mode", "error_types"})
    if unknown:
        problems.setdefault("task_options", []).append(f"Unknown BUMP options: {printable(', '.join(unknown))}.")
    mode = options.get("mode", "taxonomy")
    if mode not in BUMP_MODES:
        problems["bump_mode"] = [f"BUMP mode {printable(str(mode))!r}: choose {' or '.join(BUMP_MODES)}."]
        return {}
    if mode == "freestyle":
        return {"mode": mode}
    types = list(options.get("error_types", BUMP_ERROR_TYPES))
    unknown = sorted(printable(str(kind)) for kind in set(types) - set(BUMP_ERROR_TYPES))
    if unknown:
        problems["bump_error_types"] = [f"Unknown BUMP error types: {', '.join(unknown)}."]
    elif not types:
        problems["bump_error_types"] = ["Ask for at least one error type."]
    return {"mode": mode, "error_types": list(dict.fromkeys(types))}


def _item_params(options: Mapping[str, Any], count: int, seed: int) -> list[dict[str, Any]]:
    """Per-item parameters: BUMP's requested error types, balanced over the items in a seeded order."""
    types = options.get("error_types")
    if not types:
        return [{} for _ in range(count)]
    offset = random.Random(seed).randrange(len(types))
    return [{"error_type": types[(offset + i) % len(types)]} for i in range(count)]


@dataclass(frozen=True)
class StudySpec:
    """Everything a new study is made of. The web form, the API and `create_study` only parse their input
    into one of these; `study_spec_check` holds every rule, and `study_create` applies it."""

    name: str
    dataset: Dataset
    tasks: Sequence[str]
    annotators: Sequence[User]
    annotators_per_item: int
    created_by: User | None = None  # a researcher or admin; None for a study made by a command
    selection: ItemSelection = field(default_factory=ItemSelection)
    guidelines: Mapping[str, str] = field(default_factory=dict)  # task -> text (version 1)
    task_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # task -> its options
    one_task_per_summary: bool = False
    reclaim_after_hours: int | None = None
    explanation_config_hash: str = ""  # the configuration of the explanations shown; empty: the newest
    # Workers pull their items (a crowd study, the crowd app): no annotator list, nothing handed out now.
    pull_based: bool = False
    # Controlled conditions (studies.services.conditions): none, or two to six arms, and how annotators
    # meet them (Study.ConditionDesign). k applies per condition.
    conditions: Sequence[ConditionSpec] = ()
    condition_design: str = Study.ConditionDesign.BETWEEN


def _not_annotators(users: Sequence[User]) -> str | None:
    """The refusal of the users who are no active annotator accounts (accounts.selectors), or None."""
    allowed = set(annotator_accounts().filter(pk__in=[user.pk for user in users]).values_list("pk", flat=True))
    refused = sorted({user.get_username() for user in users if user.pk not in allowed})
    return f"Not active annotator accounts: {printable(', '.join(refused))}." if refused else None


def study_spec_check(*, spec: StudySpec) -> dict[str, dict[str, Any]]:
    """Check every rule of a new study; raise ValidationError keyed by field (the names the form and the
    API use) with every problem found, or return each task's checked options."""
    problems: dict[str, list[str]] = {}

    def problem(key: str, message: str) -> None:
        problems.setdefault(key, []).append(message)

    name_problem = storable_text_problem(spec.name, what="the name", max_chars=MAX_NAME_CHARS)
    if not spec.name.strip():
        problem("name", "A study needs a name.")
    elif name_problem:
        problem("name", name_problem)

    tasks = list(spec.tasks)
    unknown = [printable(str(task)) for task in tasks if task not in STUDY_TASKS]
    if not tasks or unknown:
        shown = f"Unknown tasks: {', '.join(unknown)}. " if unknown else ""
        problem("tasks", f"{shown}Choose tasks from: {', '.join(STUDY_TASKS)}.")
    elif len(set(tasks)) < len(tasks):
        problem("tasks", "Choose each task once.")

    annotators = {user.pk: user for user in spec.annotators}
    refused = _not_annotators(spec.annotators)
    if not annotators and not spec.pull_based:
        problem("annotators", "Choose at least one annotator.")
    elif refused:
        problem("annotators", refused)
    if spec.created_by is not None and not (spec.created_by.is_active and user_is_researcher(spec.created_by)):
        problem("created_by", f"{printable(spec.created_by.get_username())} is no researcher or admin.")

    k, chosen, distinct_tasks = spec.annotators_per_item, len(annotators), len(set(tasks))
    # k per condition, and an annotator never sees an item twice: an item needs k distinct annotators in
    # each condition, in either design.
    arms = max(1, len(spec.conditions))
    in_arms = f" in each of {arms} conditions" if arms > 1 else ""
    if not 1 <= k <= MAX_ANNOTATORS_PER_ITEM:
        problem("annotators_per_item", f"Annotators per item (k) is 1 to {MAX_ANNOTATORS_PER_ITEM}; got {k}.")
    elif spec.pull_based:
        pass  # the crowd brings the annotators, as many as the items need
    elif chosen and chosen < k * arms:
        need = f"{k * arms} annotators" if arms > 1 else "that many annotators"
        problem("annotators", f"{k} annotators per item{in_arms} need at least {need}; {chosen} chosen.")
    elif chosen and spec.one_task_per_summary and chosen < k * arms * distinct_tasks:
        problem(
            "annotators",
            f"{k} annotators per item{in_arms} in {distinct_tasks} tasks, with nobody seeing a summary in two "
            f"tasks, need at least {k * arms * distinct_tasks} annotators; {chosen} chosen.",
        )
    for key, messages in condition_problems(
        conditions=spec.conditions,
        design=spec.condition_design,
        tasks=tasks,
        max_guidelines_chars=MAX_GUIDELINES_CHARS,
    ).items():
        problems.setdefault(key, []).extend(messages)

    reclaim = _reclaim_hours_problem(spec.reclaim_after_hours)
    if reclaim:
        problem("reclaim_after_hours", reclaim)
    for key, messages in selection_problems(dataset=spec.dataset, selection=spec.selection).items():
        problems.setdefault(key, []).extend(messages)

    for task_key, text in spec.guidelines.items():
        if task_key not in tasks:
            problem("guidelines", f"Guidelines for {printable(str(task_key))}, which is not among the tasks.")
            continue
        text_problem = storable_text_problem(
            text, what=f"the text of the {task_key} guidelines", max_chars=MAX_GUIDELINES_CHARS
        )
        if text_problem:
            problem("guidelines", text_problem)
    for task_key in spec.task_options:
        if task_key not in tasks:
            problem("task_options", f"Options for {printable(str(task_key))}, which is not among the tasks.")
    options = {
        task_key: _task_options(task_key, spec.task_options.get(task_key) or {}, problems)
        for task_key in tasks
        if task_key in STUDY_TASKS
    }
    config_problem = storable_text_problem(
        spec.explanation_config_hash, what="the configuration", max_chars=MAX_CONFIG_CHARS
    )
    if config_problem:
        problem("explanation_config_hash", config_problem)
    if problems:
        raise ValidationError(problems)
    return options


@transaction.atomic
def study_create(*, spec: StudySpec) -> StudyPlan:
    """Create a study over a dataset's summaries and assign its items, after checking every rule
    (study_spec_check).

    The items are all summaries, a seeded random sample or the most controversial ones (`spec.selection`);
    every task gets the same selection (BUMP: of the reference summaries).
    """
    options = study_spec_check(spec=spec)
    dataset, selection, created_by = spec.dataset, spec.selection, spec.created_by
    config_hash = spec.explanation_config_hash or None

    pools: dict[bool, Any] = {}
    for task_key in spec.tasks:
        references_only = get_task(task_key).references_only
        if references_only not in pools:
            pools[references_only] = summaries_select(
                dataset=dataset, selection=selection, references_only=references_only
            )
    for references_only, result in pools.items():
        if not result.summaries:
            kind = "reference summaries" if references_only else "summaries"
            raise ValidationError(
                {"dataset": f"The selection leaves no {kind} of dataset {dataset.name!r}. " + " ".join(result.notes)}
            )

    study = Study.objects.create(
        name=spec.name,
        dataset=dataset,
        annotators_per_item=spec.annotators_per_item,
        created_by=created_by,
        one_task_per_summary=spec.one_task_per_summary,
        reclaim_after_hours=spec.reclaim_after_hours,
        selection=selection.as_dict(),
        pull_based=spec.pull_based,
        condition_design=spec.condition_design,
    )
    if created_by is not None:
        study.researchers.add(created_by)
    if spec.conditions:
        # One at a time, in the order given: the join order decides conditions (studies.services.conditions).
        for annotator in dict.fromkeys(spec.annotators):
            study.annotators.add(annotator)
    else:
        study.annotators.add(*spec.annotators)
    conditions_create(study=study, conditions=spec.conditions)

    skipped: dict[str, int] = {}
    items: list[StudyItem] = []
    for task_key in spec.tasks:
        task = get_task(task_key)
        summaries = pools[task.references_only].summaries
        explanations = explanations_for(task_key, summaries, config_hash)
        if task.explanation_metric:
            missing = [s for s in summaries if s.pk not in explanations]
            if missing:
                raise ValidationError(
                    {
                        "tasks": f"{len(missing)} of {len(summaries)} summaries have no "
                        f"{' or '.join(task.explanation_metrics)} "
                        f'explanation; run: python manage.py score --dataset "{dataset.name}" '
                        f"--metric {task.explanation_metric}"
                    }
                )
        text = spec.guidelines.get(task_key, "")
        study_task = StudyTask.objects.create(
            study=study,
            task=task_key,
            guidelines=text,
            explanation_config_hash=spec.explanation_config_hash,
            options=options[task_key],
        )
        GuidelinesVersion.objects.create(study_task=study_task, version=1, text=text, created_by=created_by)
        task_items = []
        for summary in summaries:
            explanation = explanations.get(summary.pk)
            units = task.units(
                summary_text=summary.text,
                summary_sentences=summary.sentences,
                payload=explanation.payload if explanation else None,
            )
            if not summary.text.strip() or (explanation and explanation.error) or (not units and not task.spans):
                # Nothing to judge: an empty summary, an undefined score or no content word.
                skipped[task_key] = skipped.get(task_key, 0) + 1
                continue
            task_items.append(StudyItem(study_task=study_task, summary=summary, explanation=explanation))
        for position, (item, params) in enumerate(
            zip(task_items, _item_params(options[task_key], len(task_items), selection.seed), strict=True)
        ):
            item.position, item.params = position, params
        items.extend(task_items)
    StudyItem.objects.bulk_create(items)
    created = assignments_distribute(study=study, seed=selection.seed)
    notes = [note for result in pools.values() for note in result.notes]
    return StudyPlan(study=study, items=len(items), assignments=created, skipped=skipped, notes=notes)


def _study_assignments(study: Study) -> Any:
    return Assignment.objects.filter(item__study_task__study=study)


def _per_annotator(assignments: Any, aggregate: Any) -> dict[int, int]:
    return {row["annotator"]: row["value"] for row in assignments.values("annotator").annotate(value=aggregate)}


def _arm_suffix(condition: StudyCondition | None) -> str:
    return "" if condition is None else f"_{condition.pk}"


def _arms(conditions: Sequence[StudyCondition]) -> list[StudyCondition | None]:
    """The conditions an item is counted in: each of them, or the one unnamed arm of a study without any."""
    return list(conditions) if conditions else [None]


def _short_items(study: Study, conditions: Sequence[StudyCondition] = ()) -> Any:
    """Items with fewer than k live assignments of the study's annotators (in some condition: k applies per
    condition, counted as `n_<condition id>`, else as `n`). A removed annotator's submitted work stays in
    the data but does not count towards k: the item is given to someone still in the study. Nor does a
    "cannot judge" when the study frees skipped items (`skipped` counts those skips)."""
    member = Q(assignments__annotator__in=study.annotators.all())
    not_counted = [RECLAIMED, SKIPPED] if study.skipped_items_reassigned else [RECLAIMED]
    counts: dict[str, Any] = {}
    short = Q()
    for arm in _arms(conditions):
        suffix, in_arm = _arm_suffix(arm), Q() if arm is None else Q(assignments__condition=arm)
        counts[f"n{suffix}"] = Count("assignments", filter=member & in_arm & ~Q(assignments__status__in=not_counted))
        counts[f"skipped{suffix}"] = Count("assignments", filter=member & in_arm & Q(assignments__status=SKIPPED))
        short |= Q(**{f"n{suffix}__lt": study.annotators_per_item})
    return StudyItem.objects.filter(study_task__study=study).annotate(**counts).filter(short)


def _summaries_seen(study: Study, live: Any, summary_ids: Any) -> dict[int, set[int]]:
    """Summary id -> the annotators with a live item of it; empty unless nobody may see a summary twice."""
    seen: dict[int, set[int]] = defaultdict(set)
    if study.one_task_per_summary:
        rows = live.filter(item__summary_id__in=summary_ids).values_list("item__summary_id", "annotator_id")
        for summary_id, annotator_id in rows:
            seen[summary_id].add(annotator_id)
    return seen


@transaction.atomic
def assignments_distribute(*, study: Study, seed: int = 0, partial: bool = False) -> int:
    """Give every item of the study to exactly k distinct annotators, always to the least loaded ones.

    Items are topped up to k (existing assignments stay), so adding annotators to a running study and
    calling this again spreads the remaining work. Greedy least-loaded choice keeps the difference
    between the most and the least loaded annotator at one item at most. With `one_task_per_summary`
    an annotator never gets two items (of different tasks) that show the same summary; items of one
    summary are handed out together so that the constraint costs no balance. An item too few annotators
    may take fails the whole call, unless `partial`: then it gets whom it can and stays short. An item short
    only because annotators could not judge it never fails the call: it goes to whoever has not seen it.

    With conditions, each item is topped up to k in every condition, never giving an annotator an item
    twice: between annotators from the annotators of that condition; within annotators from everybody,
    the least loaded in that condition first, and each annotator's new work is queued in blocks, one per
    condition, in their counterbalanced order (studies.services.conditions).
    """
    if study.pull_based:
        return 0  # crowd workers pull their items (crowd.services.assignment)
    k = study.annotators_per_item
    annotators = list(study.annotators.filter(is_active=True).order_by("pk"))
    conditions = list(study.conditions.all())
    orders = annotator_condition_orders(study=study, annotators=annotators, conditions=conditions)
    rng = random.Random(seed)
    rng.shuffle(annotators)
    assignments = _study_assignments(study)
    live = assignments.exclude(status=RECLAIMED)
    load = _per_annotator(live, Count("id"))
    # Each annotator's load per condition (without conditions: their load).
    arm_load: dict[tuple[int, int | None], int] = {(annotator, None): n for annotator, n in load.items()}
    if conditions:
        per_arm = live.values("annotator", "condition").annotate(n=Count("id"))
        arm_load = {(row["annotator"], row["condition"]): row["n"] for row in per_arm}
    positions = _per_annotator(assignments, Max("position"))
    items = list(_short_items(study, conditions).order_by("summary_id", "study_task__task", "pk"))
    if not items:
        return 0
    taken = set(assignments.filter(item__in=items).values_list("item_id", "annotator_id"))
    seen_summary = _summaries_seen(study, live, {item.summary_id for item in items})
    new: list[Assignment] = []
    for item in items:
        for arm in _arms(conditions):
            suffix = _arm_suffix(arm)
            candidates = [
                user
                for user in annotators
                if (item.pk, user.pk) not in taken
                and user.pk not in seen_summary.get(item.summary_id, ())
                and (arm is None or arm in orders[user.pk])
            ]
            needed = k - getattr(item, f"n{suffix}")
            skipped = getattr(item, f"skipped{suffix}") if study.skipped_items_reassigned else 0
            if len(candidates) < needed - skipped and not partial:
                reason = " (nobody may see a summary in two tasks)" if study.one_task_per_summary else ""
                where = f" in condition {arm.name!r}" if arm is not None else ""
                raise ValidationError(
                    {
                        "annotators": f"Item {item.pk} needs {needed} more annotators{where} but only "
                        f"{len(candidates)} are free{reason}. Add annotators or lower k."
                    }
                )
            # Stable sort on the shuffled list: ties are broken by the seeded order, not by user id.
            arm_id = None if arm is None else arm.pk
            for user in sorted(candidates, key=lambda u: (arm_load.get((u.pk, arm_id), 0), load.get(u.pk, 0)))[:needed]:
                load[user.pk] = load.get(user.pk, 0) + 1
                arm_load[(user.pk, arm_id)] = arm_load.get((user.pk, arm_id), 0) + 1
                positions[user.pk] = positions.get(user.pk, 0) + 1
                taken.add((item.pk, user.pk))
                if study.one_task_per_summary:
                    seen_summary[item.summary_id].add(user.pk)
                # The annotator's queue follows the order in which work was handed out.
                new.append(Assignment(item=item, annotator=user, position=positions[user.pk], condition=arm))
    if study.condition_design == Study.ConditionDesign.WITHIN:
        _queue_in_blocks(new, orders)
    Assignment.objects.bulk_create(new)
    return len(new)


def _queue_in_blocks(new: Sequence[Assignment], orders: Mapping[int, Sequence[StudyCondition]]) -> None:
    """Renumber each annotator's new assignments so their queue takes one condition after the other, in the
    annotator's order (a stable sort: within a block, the order work was handed out)."""
    mine: dict[int, list[Assignment]] = defaultdict(list)
    for assignment in new:
        mine[assignment.annotator.pk].append(assignment)
    for annotator_id, own in mine.items():
        rank = {condition.pk: place for place, condition in enumerate(orders.get(annotator_id, ()))}
        slots = sorted(assignment.position for assignment in own)
        for assignment, position in zip(
            sorted(own, key=lambda a: rank.get(a.condition_id or 0, 0)), slots, strict=True
        ):
            assignment.position = position


@transaction.atomic
def assignments_reclaim(*, study: Study, now: datetime | None = None) -> int:
    """Give open assignments nobody touched for the study's reclaim time to other annotators.

    The item still lacks its k judgements (the assignment is open), so it moves to the annotator with
    the fewest open items who may take it. Rows being submitted right now are locked and skipped.
    Returns how many assignments moved.
    """
    if not study.reclaim_after_hours or study.pull_based:
        return 0  # a pull-based study's abandoned items go back to its pool (crowd.services.assignment)
    now = now or timezone.now()
    cutoff = now - timedelta(hours=study.reclaim_after_hours)
    stale = list(
        _study_assignments(study)
        .filter(status=OPEN, touched_at__lt=cutoff)
        .select_for_update(skip_locked=True, of=("self",))
        .select_related("item")
        .order_by("touched_at", "pk")
    )
    if not stale:
        return 0
    annotators = list(study.annotators.filter(is_active=True).order_by("pk"))
    # Between annotators, work moves only to an annotator of the same condition; it keeps its condition.
    orders = annotator_condition_orders(study=study, annotators=annotators, conditions=list(study.conditions.all()))
    assignments = _study_assignments(study)
    live = assignments.exclude(status=RECLAIMED)
    open_load = _per_annotator(live.filter(status=OPEN), Count("id"))
    load = _per_annotator(live, Count("id"))
    positions = _per_annotator(assignments, Max("position"))
    item_ids = {a.item_id for a in stale}
    taken = set(assignments.filter(item_id__in=item_ids).values_list("item_id", "annotator_id"))
    seen_summary = _summaries_seen(study, live, {a.item.summary_id for a in stale})
    moved: list[Assignment] = []
    reclaimed: list[int] = []
    for old in stale:
        candidates = [
            user
            for user in annotators
            if (old.item_id, user.pk) not in taken
            and user.pk not in seen_summary.get(old.item.summary_id, ())
            and (old.condition_id is None or old.condition_id in {c.pk for c in orders.get(user.pk, ())})
        ]
        if not candidates:
            continue  # nobody else may take it; it stays where it is
        user = min(candidates, key=lambda u: (open_load.get(u.pk, 0), load.get(u.pk, 0), u.pk))
        for counter in (open_load, load, positions):
            counter[user.pk] = counter.get(user.pk, 0) + 1
        open_load[old.annotator_id] = open_load.get(old.annotator_id, 1) - 1
        load[old.annotator_id] = load.get(old.annotator_id, 1) - 1
        taken.add((old.item_id, user.pk))
        if study.one_task_per_summary:
            seen_summary[old.item.summary_id].discard(old.annotator_id)
            seen_summary[old.item.summary_id].add(user.pk)
        reclaimed.append(old.pk)
        moved.append(
            Assignment(
                item_id=old.item_id,
                annotator=user,
                position=positions[user.pk],
                touched_at=now,
                condition_id=old.condition_id,
            )
        )
    Assignment.objects.filter(pk__in=reclaimed).update(status=RECLAIMED, updated_at=now)
    Assignment.objects.bulk_create(moved)
    return len(moved)


def assignments_reclaim_for_annotator(*, user: User, now: datetime | None = None) -> int:
    """Reclaim stale work in the studies the user annotates (the user asked for more); assignments moved."""
    studies = Study.objects.filter(kind=Study.Kind.STUDY, annotators=user).exclude(reclaim_after_hours=None)
    return sum(assignments_reclaim(study=study, now=now) for study in studies)


def studies_reclaim_all(*, now: datetime | None = None) -> dict[int, int]:
    """Reclaim in every study that has a reclaim time (for a periodic job); study id -> assignments moved."""
    moved = {}
    for study in Study.objects.filter(kind=Study.Kind.STUDY).exclude(reclaim_after_hours=None):
        moved[study.pk] = assignments_reclaim(study=study, now=now)
    return moved


def _managed(study: Study) -> None:
    if study.kind != Study.Kind.STUDY:
        raise ValidationError(f"{study.name!r} holds imported judgements; it has no annotators or settings to change.")


@dataclass(frozen=True)
class AnnotatorsAdded:
    """What adding annotators did: `assigned` items short of k were given out, `extended` more beyond k (the
    researcher asked for it), and `still_short` items still lack annotators."""

    assigned: int
    extended: int
    still_short: int


def _assignments_extend(*, study: Study, annotators: Sequence[User]) -> int:
    """Give each of these annotators every item they may take (k grows by one on each such item, in the
    annotator's condition; within annotators, the items are cut into one block per condition, in the
    annotator's counterbalanced order)."""
    assignments = _study_assignments(study)
    positions = _per_annotator(assignments, Max("position"))
    taken = set(assignments.values_list("item_id", "annotator_id"))
    items = list(StudyItem.objects.filter(study_task__study=study).order_by("summary_id", "study_task__task", "pk"))
    seen_summary = _summaries_seen(study, assignments.exclude(status=RECLAIMED), {item.summary_id for item in items})
    orders = annotator_condition_orders(study=study, annotators=annotators, conditions=list(study.conditions.all()))
    new: list[Assignment] = []
    for user in annotators:
        order = orders.get(user.pk, [])
        free = []
        for item in items:
            if (item.pk, user.pk) in taken or user.pk in seen_summary[item.summary_id]:
                continue
            free.append(item)
            if study.one_task_per_summary:
                seen_summary[item.summary_id].add(user.pk)
        for number, item in enumerate(free):
            positions[user.pk] = positions.get(user.pk, 0) + 1
            arm = order[block_of(number, total=len(free), conditions=len(order))] if order else None
            new.append(Assignment(item=item, annotator=user, position=positions[user.pk], condition=arm))
    Assignment.objects.bulk_create(new)
    return len(new)


def annotators_added_message(*, names: str, k: int, added: AnnotatorsAdded) -> str:
    """What adding annotators did, in the words the study page and the API show."""
    if added.extended:
        return f"{names} got {added.extended} items beyond k={k}: those items now have more than k annotators."
    if not added.assigned and not added.still_short:
        return f"No item is short of k={k}; tick 'extend' to give {names} items beyond k."
    message = f"{names} got {added.assigned} items that were short of k={k}."
    if added.still_short:
        message += f" {added.still_short} items are still short of k: add more annotators."
    return message


@transaction.atomic
def study_annotators_add(*, study: Study, annotators: Sequence[User], extend: bool = False) -> AnnotatorsAdded:
    """Add annotators to a running study. Items short of k (removed annotators' work not counted) are
    topped up first, never giving anyone an item twice; when nothing was short and `extend` is set, each new
    annotator gets every item they may take, beyond k (those items' k grows by one)."""
    _managed(study)
    refused = _not_annotators(annotators)
    if refused:
        raise ValidationError({"annotators": refused})
    study.annotators.add(*annotators)
    assigned = assignments_distribute(study=study, partial=True)
    extended = 0
    if not assigned and extend:
        extended = _assignments_extend(study=study, annotators=[user for user in annotators if user.is_active])
    still_short = _short_items(study, list(study.conditions.all())).count()
    return AnnotatorsAdded(assigned=assigned, extended=extended, still_short=still_short)


@transaction.atomic
def study_annotator_remove(*, study: Study, annotator: User) -> int:
    """Take an annotator out of a study: their open items go to others, their submitted work stays.

    Returns how many assignments were handed to others. Fails (and changes nothing) when too few
    annotators remain for k.
    """
    _managed(study)
    if not study.annotators.filter(pk=annotator.pk).exists():
        raise ValidationError({"annotator": f"{annotator.get_username()} is not an annotator of this study."})
    study.annotators.remove(annotator)
    _study_assignments(study).filter(annotator=annotator, status=OPEN).delete()
    return assignments_distribute(study=study)


@transaction.atomic
def study_settings_update(
    *,
    study: Study,
    annotators_per_item: int,
    reclaim_after_hours: int | None,
    skipped_items_reassigned: bool | None = None,
) -> int:
    """Change k (only upwards in a running study: judgements already made stay), the reclaim time and
    whether items marked "cannot judge" go to someone else (None: unchanged).

    Returns the assignments created to top items up to the new k.
    """
    _managed(study)
    if isinstance(annotators_per_item, bool) or not isinstance(annotators_per_item, int):
        raise ValidationError({"annotators_per_item": "k must be a whole number."})
    if annotators_per_item > MAX_ANNOTATORS_PER_ITEM:
        raise ValidationError({"annotators_per_item": f"k is at most {MAX_ANNOTATORS_PER_ITEM}."})
    if annotators_per_item < study.annotators_per_item:
        raise ValidationError(
            {"annotators_per_item": f"k can only grow in a running study (it is {study.annotators_per_item})."}
        )
    _reclaim_hours_check(reclaim_after_hours)
    study.annotators_per_item = annotators_per_item
    study.reclaim_after_hours = reclaim_after_hours
    if skipped_items_reassigned is not None:
        study.skipped_items_reassigned = skipped_items_reassigned
    study.save(update_fields=["annotators_per_item", "reclaim_after_hours", "skipped_items_reassigned"])
    return assignments_distribute(study=study)


@transaction.atomic
def study_task_guidelines_update(*, study_task: StudyTask, text: str, user: User | None) -> GuidelinesVersion | None:
    """Save new guidelines as the next version; None when the text did not change."""
    problem = storable_text_problem(text, what="The guidelines", max_chars=MAX_GUIDELINES_CHARS)
    if problem:
        raise ValidationError({"guidelines": problem})
    text = text.strip()
    locked = StudyTask.objects.select_for_update().get(pk=study_task.pk)
    if text == locked.guidelines.strip():
        return None
    locked.guidelines = text
    locked.guidelines_version += 1
    locked.save(update_fields=["guidelines", "guidelines_version"])
    study_task.guidelines, study_task.guidelines_version = locked.guidelines, locked.guidelines_version
    return GuidelinesVersion.objects.create(
        study_task=locked, version=locked.guidelines_version, text=text, created_by=user
    )


# --- an annotator's work -------------------------------------------------------------------------------


def _writable(assignment: Assignment, user: User) -> None:
    if assignment.annotator_id != user.pk:
        raise PermissionDenied("This item is not assigned to you.")
    if assignment.status == RECLAIMED:
        raise PermissionDenied("This item was given to another annotator after it stayed untouched.")
    if assignment.status == SKIPPED:
        raise PermissionDenied("You marked this item as 'cannot judge'.")


def clean_submission(
    *, item_task: str, units: Sequence[Any], summary_text: str, params: Mapping[str, Any], submission: Submission
) -> list[Any]:
    """Task validation as Django's ValidationError (the views and services speak that). Every text of the
    submission must be storable (no NUL, no lone surrogate) and every number finite."""
    try:
        json_check(
            {"labels": submission.labels, "notes": submission.notes, "spans": submission.spans, "edit": submission.edit}
        )
    except InputError as exc:
        raise ValidationError({exc.field: str(exc)}) from None
    try:
        return get_task(item_task).clean(submission, units=units, summary_text=summary_text, params=params)
    except SubmissionError as exc:
        raise ValidationError(exc.messages) from exc


@transaction.atomic
def assignment_submit(
    *,
    assignment: Assignment,
    user: User,
    labels: Mapping[Any, Any] | None = None,
    notes: Mapping[Any, Any] | None = None,
    spans: Sequence[Any] | None = None,
    edit: Mapping[str, Any] | None = None,
    comment: str = "",
    seconds: float = 0.0,
    guidelines_version: int | None = None,
) -> Assignment:
    """Store the annotator's complete work on an item and mark it done.

    Submitting again (a second tab, a double click, a later edit) replaces the same judgement set: the
    assignment row is locked, judgements are upserted on (assignment, unit) and units no longer judged
    (a removed span, a FEQA follow-up that no longer applies) are deleted, so two tabs submitting at
    once leave exactly one of the two submissions.
    """
    _writable(assignment, user)
    # The views check all this already; a service is also called by scripts and must never store what
    # breaks every later read of the row (NaN seconds, NUL or a lone surrogate in a text).
    try:
        seconds = finite_number(seconds, field="seconds", minimum=0, maximum=MAX_REPORTED_SECONDS)
        storable_text(comment, field="comment", max_chars=MAX_COMMENT_CHARS)
    except InputError as exc:
        raise ValidationError({exc.field: str(exc)}) from None
    membership = Study.annotators.through.objects.filter(study_id=OuterRef("item__study_task__study_id"), user=user)
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item__study_task", "item__summary", "item__explanation")
        .annotate(member=Exists(membership))
        .get(pk=assignment.pk)
    )
    _writable(locked, user)
    study_task = locked.item.study_task
    # A model rater (an LLM judge, judges app) is no annotator of the study: it is given no items and does
    # not count towards k; its judgements come in here like everybody's.
    if not locked.member and not user_is_model_rater(user):
        raise PermissionDenied("You are no longer an annotator of this study.")
    version = study_task.guidelines_version if guidelines_version is None else guidelines_version
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= study_task.guidelines_version:
        raise ValidationError(
            f"guidelines version {guidelines_version!r} does not exist (current: {study_task.guidelines_version})"
        )
    judgements = clean_submission(
        item_task=study_task.task,
        units=item_units(locked.item),
        summary_text=locked.item.summary.text,
        params=locked.item.params,
        submission=Submission(labels=labels or {}, notes=notes or {}, spans=spans or (), edit=edit),
    )
    # What the task's agreement tally holds of this assignment, to take away (a resubmission replaces it).
    previous = (
        dict(locked.judgements.values_list("unit_index", "label"))
        if locked.status == DONE and tallied_task(study_task.task)
        else None
    )
    locked.judgements.exclude(unit_index__in=[j.unit_index for j in judgements]).delete()
    Judgement.objects.bulk_create(
        [
            Judgement(
                assignment=locked,
                unit_index=j.unit_index,
                unit_text=j.unit_text,
                label=j.label,
                start=j.start,
                end=j.end,
                note=j.note,
                data=dict(j.data),
            )
            for j in judgements
        ],
        update_conflicts=True,
        unique_fields=["assignment", "unit_index"],
        update_fields=["label", "unit_text", "start", "end", "note", "data", "updated_at"],
    )
    now = timezone.now()
    locked.status = DONE
    locked.submitted_at = locked.submitted_at or now
    locked.comment = comment.strip()
    locked.time_spent += min(seconds, MAX_SECONDS_PER_SUBMISSION)
    locked.guidelines_version = version
    locked.draft, locked.draft_saved_at, locked.touched_at = {}, None, now
    locked.save(
        update_fields=[
            "status",
            "submitted_at",
            "comment",
            "time_spent",
            "guidelines_version",
            "draft",
            "draft_saved_at",
            "touched_at",
            "updated_at",
        ]
    )
    # Last, so that the task's tally row stays locked only until the commit.
    agreement_tally_submitted(assignment=locked, previous=previous)
    return locked


@dataclass(frozen=True)
class DraftSaved:
    """A saved draft: when, and for a BUMP edit the minimal-edit check of the edited text (computed here only,
    so the warning the annotator sees is the one the submission will store)."""

    saved_at: datetime
    edited: str | None = None
    diff: dict[str, Any] | None = None


def assignment_draft_save(*, assignment_id: int, user: User, draft: Any) -> DraftSaved:
    """Keep unsubmitted work on the server; a reload or another device continues from it.

    Drafts are saved with every change, so this is one UPDATE (and one read for an edit task's check).
    They are partial by nature: only their shape and size are checked; the submission checks the rest.
    Raises Assignment.DoesNotExist for an assignment the user may not read (unknown, someone else's, of a
    study they were removed from: no probing of ids) and PermissionDenied for their own that was given to
    someone else.
    """
    if not isinstance(draft, dict):
        raise ValidationError("draft: give an object")
    try:
        json_check(draft, field="draft")
    except InputError as exc:
        raise ValidationError({exc.field: str(exc)}) from None
    size = len(json.dumps(draft))
    if size > MAX_DRAFT_BYTES:
        raise ValidationError(f"draft: {size} bytes; at most {MAX_DRAFT_BYTES}")
    now = timezone.now()
    own = annotator_assignments(user=user).filter(pk=assignment_id)
    updated = own.exclude(status__in=[RECLAIMED, SKIPPED]).update(
        draft=draft, draft_saved_at=now, touched_at=now, updated_at=now
    )
    if not updated:
        _writable(own.only("annotator_id", "status").get(), user)
    task = draft.get("task")
    task_part: dict[str, Any] = task if isinstance(task, dict) else {}
    edited = task_part["edit"].get("text") if isinstance(task_part.get("edit"), dict) else None
    if not isinstance(edited, str):
        return DraftSaved(saved_at=now)
    task_key, reference = own.values_list("item__study_task__task", "item__summary__text").get()
    if not get_task(task_key).edit:
        return DraftSaved(saved_at=now)
    return DraftSaved(saved_at=now, edited=edited, diff=edit_diff(reference, edited).as_dict())


def assignment_touch(*, assignment: Assignment) -> None:
    """Opening an item counts as touching it: an item someone is looking at is not reclaimed."""
    Assignment.objects.filter(pk=assignment.pk, status=OPEN).update(touched_at=timezone.now())


@dataclass(frozen=True)
class Skipped:
    """A "cannot judge": the annotator's assignment and how many items went to other annotators with it."""

    assignment: Assignment
    reassigned: int


def _skip_note(reason: Any, note: Any) -> str:
    if reason not in Assignment.SkipReason.values:
        choices = ", ".join(Assignment.SkipReason.values)
        raise ValidationError({"reason": f"Choose why you cannot judge the item: {choices}; got {reason!r}."})
    if not isinstance(note, str):
        raise ValidationError({"note": "The note must be text."})
    try:
        text = storable_text(note, field="note", max_chars=MAX_SKIP_NOTE_CHARS).strip()
    except InputError as exc:
        raise ValidationError({exc.field: str(exc)}) from None
    if reason == Assignment.SkipReason.OTHER and not text:
        raise ValidationError({"note": "Say in the note why you cannot judge the item."})
    return text


@transaction.atomic
def assignment_skip(*, assignment_id: int, user: User, reason: Any, note: Any = "") -> Skipped:
    """Mark the annotator's open item as "cannot judge" (a SkipReason, a note; the note is required for
    "other"). With the study's `skipped_items_reassigned` the item goes to an annotator who has not seen it
    (assignments_distribute tops it up to k) and the skip does not count towards k.

    Skipping again (a double click, a replayed request) keeps the one skip and only updates reason and note.
    Raises Assignment.DoesNotExist for an assignment the user may not read (as assignment_draft_save),
    PermissionDenied for their own that was given to someone else and ValidationError after a submission.
    """
    note = _skip_note(reason, note)
    locked = (
        annotator_assignments(user=user)
        .select_for_update(of=("self",))
        .select_related("item__study_task__study")
        .get(pk=assignment_id)
    )
    if locked.status == RECLAIMED:
        _writable(locked, user)
    if locked.status == DONE:
        raise ValidationError("You submitted this item already; a submitted item cannot be marked 'cannot judge'.")
    now = timezone.now()
    locked.status, locked.skip_reason, locked.skip_note = SKIPPED, reason, note
    locked.skipped_at = locked.skipped_at or now
    locked.draft, locked.draft_saved_at, locked.touched_at = {}, None, now
    fields = ["status", "skip_reason", "skip_note", "skipped_at", "draft", "draft_saved_at", "touched_at"]
    locked.save(update_fields=[*fields, "updated_at"])
    study = locked.item.study_task.study
    if not study.skipped_items_reassigned:
        return Skipped(assignment=locked, reassigned=0)
    # Two annotators skipping at once would both hand out the same short items: top-ups of a study queue up.
    list(Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True))
    return Skipped(assignment=locked, reassigned=assignments_distribute(study=study, partial=True))
