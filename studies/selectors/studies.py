"""Reads for researchers: a study's progress, agreement, items, assignments and judgements (which studies
a user may see: studies.selectors.access)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, Count, F, Max, Q, QuerySet, Sum, Value, When
from django.utils import timezone

from accounts.selectors import model_rater_accounts
from common.aggregates import Median
from protocols.tasks import STUDY_TASKS, get_task
from studies.models import Assignment, Judgement, Participation, Study, StudyCondition, StudyItem, StudyTask

# An annotator counts as active when they submitted, saved a draft or opened an item this recently.
ACTIVE_WINDOW = timedelta(hours=1)

# "Time per item": the active time the task view measured for one annotator's submitted item (the Active
# time columns sum the same field); imported judgements and clients that sent no time have none.
TIMED = Q(status=Assignment.Status.SUBMITTED, time_spent__gt=0)


def human_work() -> Q:
    """Assignments of people: not of an LLM judge's account (judges app), which is a rater in the analyses
    but never counts as an annotator, towards k, or in a study's progress and times."""
    return ~Q(annotator__in=model_rater_accounts().values("pk"))


@dataclass(frozen=True)
class AnnotatorProgress:
    username: str
    assigned: int
    done: int
    seconds: float
    user_id: int = 0
    open: int = 0
    reclaimed: int = 0  # items given to someone else after this annotator left them untouched
    skipped: int = 0  # items this annotator marked "cannot judge"
    member: bool = True  # still an annotator of the study (removed annotators keep their submitted work)
    median_seconds: float | None = None  # median active time of a submitted item (TIMED); None: none timed


def _of_study(study: Study, study_tasks: Sequence[StudyTask] | None, path: str = "item__study_task") -> Q:
    """The rows of a study's items (`path` leads from the row to its StudyTask). Given the study's tasks, by
    their ids: PostgreSQL then knows how many items each holds (its statistics of the column) and hashes
    the assignments; through the join it guesses an average task and loops over an index once per item,
    about three times slower at 10,000 items (docs/PERFORMANCE.md)."""
    if study_tasks is None:
        return Q(**{f"{path}__study": study})
    return Q(**{f"{path}__in": [task.pk for task in study_tasks]})


def study_progress(*, study: Study, study_tasks: Sequence[StudyTask] | None = None) -> list[AnnotatorProgress]:
    """Per annotator: items assigned (without those given away), done, open, given away, marked "cannot
    judge", active time and the median time per item. `study_tasks`: the study's tasks, if already read."""
    live = ~Q(status=Assignment.Status.RECLAIMED)
    rows = {
        row["annotator"]: row
        for row in Assignment.objects.filter(human_work(), _of_study(study, study_tasks))
        .values("annotator", "annotator__username")
        .annotate(
            assigned=Count("id", filter=live),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            reclaimed=Count("id", filter=Q(status=Assignment.Status.RECLAIMED)),
            skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
            seconds=Sum("time_spent"),
            median=Median("time_spent", filter=TIMED),
        )
    }
    members = dict(study.annotators.values_list("pk", "username"))
    result = []
    for user_id in set(rows) | set(members):
        row: Mapping[str, Any] = rows.get(user_id, {})
        assigned, done = row.get("assigned", 0), row.get("done", 0)
        result.append(
            AnnotatorProgress(
                username=row.get("annotator__username") or members[user_id],
                assigned=assigned,
                done=done,
                seconds=row.get("seconds") or 0.0,
                user_id=user_id,
                open=assigned - done - row.get("skipped", 0),
                reclaimed=row.get("reclaimed", 0),
                skipped=row.get("skipped", 0),
                member=user_id in members,
                median_seconds=row.get("median"),
            )
        )
    return sorted(result, key=lambda progress: progress.username)


@dataclass(frozen=True)
class TaskProgress:
    study_task_id: int
    items: int
    complete_items: int  # items with all k judgements submitted (complete_items)
    assignments: int
    done: int
    seconds: float
    # The state of the task's submitted work: how many, the newest id and the latest change. Agreement is
    # computed from submitted work only, so equal states mean equal agreement (the study page's cache key).
    submitted_state: tuple[object, ...] = ()

    @property
    def percent(self) -> int:
        return self.complete_items * 100 // self.items if self.items else 0


def complete_items(
    *, studies: list[int], by: str, study_tasks: Sequence[StudyTask] | None = None
) -> dict[int, tuple[int, int]]:
    """Group (the id in the field `by` of each item of the studies: its study task's, its study's) -> (items,
    items done). An item is done when it has as many submitted assignments as its study's annotators per item
    (k), in each of its conditions if it has any: all k judgements are in. One query, however many items: the
    submitted assignments are counted per item once (a hashed subquery). `study_tasks`: every task of the
    studies, if already read (see _of_study)."""
    if study_tasks is None:
        of_items, of_assignments = Q(study_task__study__in=studies), Q(item__study_task__study__in=studies)
    else:
        ids = [task.pk for task in study_tasks]
        of_items, of_assignments = Q(study_task__in=ids), Q(item__study_task__in=ids)
    # k applies per condition: a study of C conditions needs k·C judgements of an item (assignment gives no
    # condition more than k, except "extend", which raises k for the items it touches). Read first, so that
    # the count below compares with k itself in a study without conditions (a correlated subquery per item
    # tripled this query's time at 30,000 items).
    arms = dict(
        StudyCondition.objects.filter(study__in=studies)
        .order_by()
        .values("study")
        .annotate(c=Count("pk"))
        .values_list("study", "c")
    )
    needed: Any = F("item__study_task__study__annotators_per_item")
    if arms:
        conditions = [When(item__study_task__study=study, then=Value(c)) for study, c in arms.items()]
        needed = needed * Case(*conditions, default=Value(1))
    complete = (
        Assignment.objects.filter(human_work(), of_assignments, status=Assignment.Status.SUBMITTED)
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .filter(n__gte=needed)
        .values("item")
    )
    rows = (
        StudyItem.objects.filter(of_items)
        .order_by()
        .values(by)
        .annotate(n=Count("pk"), done=Count("pk", filter=Q(pk__in=complete)))
        .values_list(by, "n", "done")
    )
    return {group: (n, done) for group, n, done in rows}


def study_task_progress(*, study: Study, study_tasks: Sequence[StudyTask] | None = None) -> dict[int, TaskProgress]:
    """Per study task: items, items done (k submitted judgements), assignments done and the state of the
    submitted work; two grouped queries. `study_tasks`: the study's tasks, if already read."""
    items = complete_items(studies=[study.pk], by="study_task", study_tasks=study_tasks)
    submitted = Q(status=Assignment.Status.SUBMITTED)
    human = human_work()
    work = {
        row["item__study_task"]: row
        # A "cannot judge" is no work to do; study_skips counts it.
        for row in Assignment.objects.filter(_of_study(study, study_tasks))
        .exclude(status__in=[Assignment.Status.RECLAIMED, Assignment.Status.SKIPPED])
        .values("item__study_task")
        .annotate(
            n=Count("id", filter=human),
            done=Count("id", filter=submitted & human),
            seconds=Sum("time_spent", filter=human),
            # The state of the submitted work the agreement reads, an LLM judge's included: a submission saves
            # its assignment (updated_at), an import creates new ones (ids), and work that stops being
            # submitted lowers the count: each changes the state.
            all_done=Count("id", filter=submitted),
            newest=Max("id", filter=submitted),
            changed=Max("updated_at", filter=submitted),
        )
    }
    no_work: dict[str, Any] = {}  # a task without assignments
    return {
        task_id: TaskProgress(
            study_task_id=task_id,
            items=n,
            complete_items=done,
            assignments=work.get(task_id, no_work).get("n", 0),
            done=work.get(task_id, no_work).get("done", 0),
            seconds=work.get(task_id, no_work).get("seconds") or 0.0,
            submitted_state=tuple(work.get(task_id, no_work).get(field) for field in ("all_done", "newest", "changed")),
        )
        for task_id, (n, done) in items.items()
    }


def recent_work(since: datetime) -> Q:
    """Assignments worked on since `since`: submitted, a draft saved or the item opened. Each of these sets
    `touched_at`; an assignment's `touched_at` starts just before its creation, which is no work."""
    return Q(touched_at__gte=since, touched_at__gt=F("created_at")) | Q(submitted_at__gte=since)


@dataclass(frozen=True)
class StudyGlance:
    """A study's progress at a glance, for the studies list."""

    items: int
    done: int  # items with all k judgements submitted
    active: int  # annotators who worked on it within ACTIVE_WINDOW
    median_seconds: float | None  # median active time of a submitted item (None: no time recorded yet)

    @property
    def percent(self) -> int:
        return self.done * 100 // self.items if self.items else 0


def studies_glance(*, studies: Iterable[Study], now: datetime | None = None) -> dict[int, StudyGlance]:
    """Study id -> its StudyGlance, for all the given studies in two grouped queries."""
    ids = [study.pk for study in studies]
    since = (now or timezone.now()) - ACTIVE_WINDOW
    items = complete_items(studies=ids, by="study_task__study")
    work = {
        study: (active, median)
        for study, active, median in Assignment.objects.filter(human_work(), item__study_task__study__in=ids)
        .order_by()
        .values("item__study_task__study")
        .annotate(
            active=Count("annotator", distinct=True, filter=recent_work(since)),
            median=Median("time_spent", filter=TIMED),
        )
        .values_list("item__study_task__study", "active", "median")
    }
    return {
        pk: StudyGlance(
            items=items.get(pk, (0, 0))[0],
            done=items.get(pk, (0, 0))[1],
            active=work.get(pk, (0, None))[0],
            median_seconds=work.get(pk, (0, None))[1],
        )
        for pk in ids
    }


@dataclass(frozen=True)
class Skip:
    """One item an annotator marked "cannot judge"."""

    assignment_id: int
    item_id: int
    study_task_id: int
    task: str
    annotator: str
    document: str
    summary_id: int
    system: str
    reason: str
    reason_label: str
    note: str
    skipped_at: datetime | None


@dataclass(frozen=True)
class TaskSkips:
    study_task_id: int
    task: str
    task_name: str
    total: int
    by_reason: dict[str, int]  # SkipReason label -> count, in the order of Assignment.SkipReason


@dataclass(frozen=True)
class StudySkips:
    tasks: list[TaskSkips]
    skips: list[Skip]  # newest first


def study_skips(*, study: Study) -> StudySkips:
    """What the study's annotators could not judge: counts per task and reason, and each skip (one query)."""
    labels = dict(Assignment.SkipReason.choices)
    rows = (
        Assignment.objects.filter(item__study_task__study=study, status=Assignment.Status.SKIPPED)
        .order_by("-skipped_at", "-pk")
        .values_list(
            "pk",
            "item_id",
            "item__study_task_id",
            "item__study_task__task",
            "annotator__username",
            "item__summary__document__external_id",
            "item__summary_id",
            "item__summary__system",
            "skip_reason",
            "skip_note",
            "skipped_at",
        )
    )
    skips = [
        Skip(*row[:8], reason=row[8], reason_label=labels.get(row[8], row[8]), note=row[9], skipped_at=row[10])
        for row in rows
    ]
    counts: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    for skip in skips:
        counts[skip.study_task_id, skip.task][skip.reason] += 1
    tasks = [
        TaskSkips(
            study_task_id=task_id,
            task=task,
            task_name=get_task(task).name,
            total=sum(counter.values()),
            by_reason={label: counter[value] for value, label in labels.items() if counter[value]},
        )
        for (task_id, task), counter in sorted(counts.items(), key=lambda entry: entry[0][1])
    ]
    return StudySkips(tasks=tasks, skips=skips)


def study_items(*, study: Study) -> QuerySet[StudyItem]:
    """The study's items by task and position, with their summary's names (not its text)."""
    return (
        StudyItem.objects.filter(study_task__study=study)
        .select_related("study_task", "summary__document")
        .only(
            "pk",
            "position",
            "params",
            "explanation_id",
            "study_task__task",
            "summary__external_id",
            "summary__system",
            "summary__document__external_id",
        )
        .order_by("study_task__task", "position", "pk")
    )


def study_assignments(*, study: Study) -> QuerySet[Assignment]:
    """Every assignment of the study (reclaimed ones too: they show where work moved)."""
    return (
        Assignment.objects.filter(item__study_task__study=study)
        .select_related("annotator", "item__study_task")
        .defer("draft", "item__params")
        .order_by("item__study_task__task", "item__position", "annotator__username", "pk")
    )


def study_judgements_in_order(*, study: Study) -> QuerySet[Judgement]:
    """Every judgement of the study by task, item, annotator and unit: the order of the judgement export."""
    return Judgement.objects.filter(assignment__item__study_task__study=study).order_by(
        "assignment__item__study_task__task",
        "assignment__item__position",
        "assignment__annotator__username",
        "unit_index",
    )


def study_skips_in_order(*, study: Study) -> QuerySet[Assignment]:
    """The study's items marked "cannot judge", in the judgement export's order (task, item, annotator)."""
    return Assignment.objects.filter(item__study_task__study=study, status=Assignment.Status.SKIPPED).order_by(
        "item__study_task__task", "item__position", "annotator__username", "pk"
    )


def study_judgements(*, study: Study) -> QuerySet[Judgement]:
    """Every judgement of the study, in the order of the judgement export, with what a list shows of it."""
    return (
        study_judgements_in_order(study=study)
        .select_related("assignment__annotator", "assignment__item__study_task")
        .only(
            *(f.name for f in Judgement._meta.concrete_fields),
            "assignment__guidelines_version",
            "assignment__item_id",
            "assignment__annotator__username",
            "assignment__item__summary_id",
            "assignment__item__study_task__task",
        )
    )


@dataclass(frozen=True)
class ConditionRow:
    """One condition of a study as its page lists it: who works in it and how much work it holds."""

    condition: StudyCondition
    annotators: int  # between: the annotators in it; within: those with work in it
    assignments: int  # live (not reclaimed)
    done: int  # submitted
    guidelines_tasks: list[str]  # the tasks whose guidelines it replaces


def study_conditions(*, study: Study) -> list[ConditionRow]:
    """The study's conditions in order, with their annotators and assignments (three queries, whatever the
    number of conditions and assignments)."""
    conditions = list(study.conditions.all())
    if not conditions:
        return []
    live = Assignment.objects.filter(item__study_task__study=study, condition__isnull=False).exclude(
        status=Assignment.Status.RECLAIMED
    )
    work: dict[int, dict[str, Any]] = {
        row["condition"]: dict(row)
        for row in live.values("condition").annotate(
            n=Count("id"),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            annotators=Count("annotator", distinct=True),
        )
    }
    members = dict(
        Participation.objects.filter(study=study, condition__isnull=False)
        .values("condition")
        .annotate(n=Count("id"))
        .values_list("condition", "n")
    )
    between = study.condition_design == Study.ConditionDesign.BETWEEN
    rows = []
    for condition in conditions:
        counts: dict[str, Any] = work.get(condition.pk, {})
        rows.append(
            ConditionRow(
                condition=condition,
                annotators=members.get(condition.pk, 0) if between else counts.get("annotators", 0),
                assignments=counts.get("n", 0),
                done=counts.get("done", 0),
                guidelines_tasks=[get_task(task).name for task in sorted(condition.guidelines) if task in STUDY_TASKS],
            )
        )
    return rows
