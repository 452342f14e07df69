"""A study's workers at a glance for the researcher (issue 14, points 7, 8 and 9): per annotator the work
done, time per item, agreement with the majority, a crowd-kit competence estimate, flags, standing and
payment; the study's live progress and cost so far.

Competence and agreement are computed over every submitted judgement (excluded annotators too: the page is
where exclusions are decided and undone); the analyses read accepted work only (studies.selectors.
participation). The math is in stats.crowd_quality, protocols.timing and protocols.payments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, F, Max, Q
from django.utils import timezone

from analysis.selectors.analysis import task_labels
from common.aggregates import Median
from common.exports import FORMULA_TRIGGERS, csv_plain
from crowd.models import CrowdItemRecord, CrowdWorker
from protocols.payments import Payment, PaymentRules, WorkerWork, cost, payments
from protocols.platform_status import STATUS_NAMES
from protocols.tasks import get_task
from protocols.timing import FAST, ItemWork, TimeRules, item_flags
from stats.crowd_quality import COMPETENCE, MAJORITY, MAX_REQUEST_JUDGEMENTS, CrowdJudgement, labels_aggregate
from studies.models import Assignment, Participation, Study, StudyItem
from studies.models import PaymentRules as PaymentRulesRow
from studies.selectors.participation import ACCEPTED, ALL, counted
from studies.selectors.studies import TIMED, AnnotatorProgress, recent_work, study_progress

# The default competence model: one skill per worker, robust with few judgements per worker.
DEFAULT_METHOD = "one_coin_dawid_skene"
# A crowd model over more judgements than this would hold a web worker for minutes (GLAD: 36 s for 3,000 on
# the loaded 2-core machine, docs/PERFORMANCE.md); beyond it the page and the API answer with the majority
# and say so, and `agreement --aggregation` has no limit.
MAX_MODELLED_JUDGEMENTS = MAX_REQUEST_JUDGEMENTS
# "Active now": worked on an item within this many minutes (the page's choice, 1 minute to 1 day).
DEFAULT_ACTIVE_MINUTES = 15
MAX_ACTIVE_MINUTES = 24 * 60
# The throughput the projection extrapolates: submissions within this window.
THROUGHPUT_WINDOW = timedelta(hours=1)
# The per-task minimum active seconds a crowd study may set (StudyTask.options); otherwise the page's.
MIN_SECONDS_OPTION = "min_seconds"


@dataclass(frozen=True)
class CrowdChecks:
    """What the crowd checks recorded of one worker (crowd.models.CrowdItemRecord)."""

    graded: int  # attention-check items graded
    passed: int
    pasted: int  # items with text pasted into an explanation
    platform_session: str  # the platform's session id (MTurk: the assignment id)


def _crowd_checks(study: Study) -> dict[int, CrowdChecks]:
    """annotator id -> their check outcomes, for a public (crowd) study; empty for others, whose annotators
    meet no checks (the page shows "—")."""
    if not study.pull_based:
        return {}
    records = (
        CrowdItemRecord.objects.filter(worker__crowd_study__study=study)
        .order_by()
        .values("worker__user_id")
        .annotate(
            graded=Count("pk", filter=Q(check_passed__isnull=False)),
            passed=Count("pk", filter=Q(check_passed=True)),
            pasted=Count("pk", filter=Q(paste_events__gt=0)),
        )
    )
    counts = {row["worker__user_id"]: row for row in records}
    no_records: dict[str, int] = {}  # a worker without item records
    return {
        user_id: CrowdChecks(
            graded=counts.get(user_id, no_records).get("graded", 0),
            passed=counts.get(user_id, no_records).get("passed", 0),
            pasted=counts.get(user_id, no_records).get("pasted", 0),
            platform_session=session,
        )
        for user_id, session in CrowdWorker.objects.filter(crowd_study__study=study).values_list(
            "user_id", "platform_session_id"
        )
    }


@dataclass(frozen=True)
class WorkerRow:
    user_id: int
    username: str
    platform: str
    platform_name: str
    external_id: str
    excluded: bool
    excluded_reason: str
    review: str
    review_name: str
    bonus: Decimal
    done: int
    median_seconds: float | None
    timed_items: int  # submitted items with recorded active time (what the fast flag judges)
    fast_items: int  # of those, done faster than the minimum
    agreement_with_majority: float | None
    n_compared: int
    competence: float | None
    checks_passed: int | None  # None: no check outcome stored for this worker
    checks_graded: int | None
    pasted_items: int | None  # None: paste events are not stored
    last_active: datetime | None
    payment: Payment | None = None
    platform_status: str = ""  # what the crowd platform last said (protocols.platform_status; "": nothing)

    @property
    def platform_status_name(self) -> str:
        return STATUS_NAMES.get(self.platform_status, self.platform_status)

    @property
    def check_pass_rate(self) -> float | None:
        return (self.checks_passed or 0) / self.checks_graded if self.checks_graded else None

    @property
    def failed_checks(self) -> int | None:
        return None if self.checks_graded is None else self.checks_graded - (self.checks_passed or 0)


@dataclass(frozen=True)
class LiveProgress:
    active_minutes: int
    active_now: int
    items: int
    items_at_k: int  # items with k accepted submitted judgements
    judgements_to_k: int  # accepted judgements still missing for every item to reach k
    per_hour: float  # submissions in the last THROUGHPUT_WINDOW, per hour
    projected_completion: datetime | None  # None: nothing missing, or no recent throughput
    median_seconds: float | None
    fast_share: float | None  # share of timed submitted items done faster than the minimum
    check_failure_rate: float | None  # None: no check outcome stored
    cost: Decimal
    currency: str

    @property
    def complete(self) -> bool:
        return self.judgements_to_k == 0


@dataclass(frozen=True)
class StudyQuality:
    study: Study
    method: str
    method_used: str  # the method asked for, or the majority when the study is too large for a model
    competence_meaning: str
    note: str
    min_seconds: float
    workers: list[WorkerRow]
    rules: PaymentRules
    live: LiveProgress
    n_judgements: int = 0
    methods: tuple[str, ...] = field(default_factory=tuple)

    @property
    def payment_ids_left_out(self) -> list[str]:
        """The workers' ids the payment files leave out (payment_id_left_out)."""
        return [w.external_id for w in self.workers if w.external_id and payment_id_left_out(w.external_id)]


def payment_rules_of(*, study: Study) -> PaymentRules:
    """The study's payment rules (nothing paid until the researcher sets them)."""
    row = PaymentRulesRow.objects.filter(study=study).first()
    if row is None:
        return PaymentRules()
    return PaymentRules(
        per_item=row.per_item,
        per_accepted_item=row.per_accepted_item,
        gold_bonus=row.gold_bonus,
        gold_min_percent=row.gold_min_percent,
        currency=row.currency,
    )


def payment_id_left_out(external_id: str) -> bool:
    """Whether a worker id stays out of the payment files: one beginning like a formula (=, +, -, @, tab,
    carriage return: a spreadsheet runs it, or reads "+1" as the number 1) or needing CSV quotes is no genuine
    platform id (Prolific's are 24 hexadecimal characters, MTurk's capital letters and digits), and
    neutralised it would name another worker, so it is listed, never written."""
    return external_id.startswith(FORMULA_TRIGGERS) or not csv_plain(external_id)


@dataclass(frozen=True)
class StudyPayments:
    rules: PaymentRules
    rows: list[Payment]  # one per annotator with work or standing in the study, by username

    @property
    def cost(self) -> Decimal:
        return cost(self.rows)

    @property
    def payable(self) -> list[Payment]:
        """The rows the payment files may hold (their worker id is written as it is)."""
        return [row for row in self.rows if not payment_id_left_out(row.work.external_id)]

    @property
    def left_out(self) -> list[str]:
        """The worker ids kept out of the payment files (payment_id_left_out), for a warning."""
        return [row.work.external_id for row in self.rows if payment_id_left_out(row.work.external_id)]


def _works(
    study: Study,
    progress: list[AnnotatorProgress],
    standing: dict[int, Participation],
    checks: dict[int, CrowdChecks],
) -> list[WorkerWork]:
    works = []
    for row in progress:
        part = standing.get(row.user_id)
        if not row.done and not row.member and part is None:
            continue
        works.append(
            WorkerWork(
                worker=row.username,
                platform=part.platform if part else Participation.Platform.INTERNAL,
                external_id=part.external_id if part else "",
                items_done=row.done,
                review=part.review if part else Participation.Review.PENDING,
                excluded=bool(part and part.excluded),
                exclusion_reason=part.excluded_reason if part else "",
                bonus=part.bonus if part else Decimal("0.00"),
                checks_passed=checks[row.user_id].passed if row.user_id in checks else None,
                checks_graded=checks[row.user_id].graded if row.user_id in checks else None,
                assignment_id=(
                    checks[row.user_id].platform_session
                    if row.user_id in checks and part is not None and part.platform == Participation.Platform.MTURK
                    else ""
                ),
            )
        )
    return works


def study_payments(*, study: Study) -> StudyPayments:
    """What every annotator of the study is paid under its rules (the payment files and the cost so far)."""
    standing = {row.annotator_id: row for row in Participation.objects.filter(study=study)}
    rules = payment_rules_of(study=study)
    works = _works(study, study_progress(study=study), standing, _crowd_checks(study))
    return StudyPayments(rules, payments(works, rules))


def _labels(study: Study) -> list[CrowdJudgement]:
    """Every submitted label of the study's tasks where labels compare (span tasks per summary: any span or
    none; BUMP's edits left out), pooled with units keyed by task."""
    judgements = []
    for study_task in study.tasks.all():
        if get_task(study_task.task).edit:
            continue
        task, labels = task_labels(study_task=study_task, span_units=("summary",), judgements=ALL)
        for unit, by_annotator in (labels["summary"] if task.spans else labels["unit"]).items():
            judgements += [
                CrowdJudgement(name, (study_task.pk, unit), label)
                for name, label in by_annotator.items()
                if label is not None
            ]
    return judgements


def _fast_counts(study: Study, rules: TimeRules) -> dict[int, tuple[int, int]]:
    """annotator id -> (timed submitted items, of which too fast)."""
    counts: dict[int, tuple[int, int]] = {}
    rows = (
        Assignment.objects.filter(item__study_task__study=study)
        .filter(TIMED)
        .values_list("annotator_id", "item_id", "item__study_task__task", "time_spent")
    )
    for annotator, item, task, seconds in rows.iterator(chunk_size=10000):
        flags = item_flags(ItemWork(str(annotator), item, task, seconds), rules)
        timed, fast = counts.get(annotator, (0, 0))
        counts[annotator] = (timed + 1, fast + any(flag.kind == FAST for flag in flags))
    return counts


def _live(study: Study, now: datetime, active_minutes: int) -> tuple[int, int, int, int, float, datetime | None]:
    """Annotators active within `active_minutes`, items, items at k, accepted judgements missing to k,
    submissions per hour recently and the completion time that rate projects."""
    since = now - timedelta(minutes=active_minutes)
    study_assignments = Assignment.objects.filter(item__study_task__study=study)
    activity = study_assignments.aggregate(
        active=Count("annotator", distinct=True, filter=recent_work(since)),
        recent=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED, submitted_at__gte=now - THROUGHPUT_WINDOW)),
    )
    accepted = counted(study_assignments.filter(status=Assignment.Status.SUBMITTED), judgements=ACCEPTED)
    per_item = dict(accepted.order_by().values("item").annotate(n=Count("pk")).values_list("item", "n"))
    item_ids = list(StudyItem.objects.filter(study_task__study=study).values_list("pk", flat=True))
    k = study.annotators_per_item
    missing = sum(max(0, k - per_item.get(item, 0)) for item in item_ids)
    at_k = sum(per_item.get(item, 0) >= k for item in item_ids)
    per_hour = activity["recent"] / (THROUGHPUT_WINDOW / timedelta(hours=1))
    projected = now + timedelta(hours=missing / per_hour) if missing and per_hour else None
    return activity["active"], len(item_ids), at_k, missing, per_hour, projected


def _failure_rate(checks: Iterable[CrowdChecks]) -> float | None:
    """The share of graded check items failed, over every worker; None when none was graded."""
    graded = passed = 0
    for row in checks:
        graded, passed = graded + row.graded, passed + row.passed
    return (graded - passed) / graded if graded else None


def study_quality(
    *,
    study: Study,
    method: str = DEFAULT_METHOD,
    min_seconds: float = 0.0,
    active_minutes: int = DEFAULT_ACTIVE_MINUTES,
    now: datetime | None = None,
) -> StudyQuality:
    """Every annotator of the study with their quality, flags, standing and payment; the live progress.
    `min_seconds`: the minimum active seconds per item for tasks whose options set none."""
    if method not in COMPETENCE:
        raise ValueError(f"method must be one of {', '.join(COMPETENCE)}")
    now = now or timezone.now()
    progress = study_progress(study=study)
    standing = {row.annotator_id: row for row in Participation.objects.filter(study=study)}
    judgements = _labels(study)
    method_used, note = method, ""
    if method != MAJORITY and len(judgements) > MAX_MODELLED_JUDGEMENTS:
        method_used = MAJORITY
        note = (
            f"{len(judgements)} judgements are too many for {method} in a page request (at most "
            f"{MAX_MODELLED_JUDGEMENTS}): competence is the majority's; run `manage.py agreement --aggregation "
            f"{method}` for the model."
        )
    quality = {row.worker: row for row in labels_aggregate(judgements=judgements, method=method_used).workers}
    floors = {
        task.task: float(task.options[MIN_SECONDS_OPTION])
        for task in study.tasks.all()
        if isinstance(task.options.get(MIN_SECONDS_OPTION), int | float)
        and not isinstance(task.options.get(MIN_SECONDS_OPTION), bool)
    }
    fast = _fast_counts(study, TimeRules(min_seconds=floors, default_min_seconds=min_seconds))
    last_active = dict(
        Assignment.objects.filter(item__study_task__study=study)
        .filter(touched_at__gt=F("created_at"))
        .order_by()
        .values("annotator")
        .annotate(last=Max("touched_at"))
        .values_list("annotator", "last")
    )
    rules = payment_rules_of(study=study)
    platforms, reviews = dict(Participation.Platform.choices), dict(Participation.Review.choices)
    by_name = {row.username: row for row in progress}
    workers: list[WorkerRow] = []
    checks = _crowd_checks(study)
    for payment in payments(_works(study, progress, standing, checks), rules):
        work, row = payment.work, by_name[payment.work.worker]
        agreement = quality.get(row.username)
        timed, fast_items = fast.get(row.user_id, (0, 0))
        workers.append(
            WorkerRow(
                user_id=row.user_id,
                username=row.username,
                platform=work.platform,
                platform_name=platforms.get(work.platform, work.platform),
                external_id=work.external_id,
                excluded=work.excluded,
                excluded_reason=work.exclusion_reason,
                review=work.review,
                review_name=reviews.get(work.review, work.review),
                bonus=work.bonus,
                done=row.done,
                median_seconds=row.median_seconds,
                timed_items=timed,
                fast_items=fast_items,
                agreement_with_majority=agreement.agreement_with_majority if agreement else None,
                n_compared=agreement.n_compared if agreement else 0,
                competence=agreement.competence if agreement else None,
                checks_passed=work.checks_passed,
                checks_graded=work.checks_graded,
                pasted_items=checks[row.user_id].pasted if row.user_id in checks else None,
                last_active=last_active.get(row.user_id),
                payment=payment,
                platform_status=standing[row.user_id].platform_status if row.user_id in standing else "",
            )
        )
    workers.sort(key=lambda w: (w.competence is None, w.competence or 0.0, w.username))
    paid = [w.payment for w in workers if w.payment is not None]
    timed_total = sum(w.timed_items for w in workers)
    fast_share = sum(w.fast_items for w in workers) / timed_total if timed_total else None
    median = (
        Assignment.objects.filter(item__study_task__study=study)
        .filter(TIMED)
        .aggregate(median=Median("time_spent"))["median"]
    )
    active, items, at_k, missing, per_hour, projected = _live(study, now, active_minutes)
    live = LiveProgress(
        active_minutes=active_minutes,
        active_now=active,
        items=items,
        items_at_k=at_k,
        judgements_to_k=missing,
        per_hour=per_hour,
        projected_completion=projected,
        median_seconds=median,
        fast_share=fast_share,
        check_failure_rate=_failure_rate(checks.values()),
        cost=cost(paid),
        currency=rules.currency,
    )
    return StudyQuality(
        study=study,
        method=method,
        method_used=method_used,
        competence_meaning=COMPETENCE[method_used],
        note=note,
        min_seconds=min_seconds,
        workers=workers,
        rules=rules,
        live=live,
        n_judgements=len(judgements),
        methods=tuple(COMPETENCE),
    )
