"""What each worker of a study is paid, from the researcher's rules, and the files the platforms' bulk tools
take (issue 14, point 8). No Django here; every amount is a Decimal with two decimal places, never a float.

The rules: an amount per item done, an amount per accepted item (the worker is neither excluded nor
rejected), and a bonus for gold accuracy (at least `gold_min_percent` of the graded check items passed); the
researcher's own bonus for the worker is added. A rejected or excluded worker gets the per-item amount only
(what the researcher promised for any work) and no bonus.

Files (rows here; the caller writes them with common.exports, every cell through csv_cell, and leaves out
the workers whose id a spreadsheet would run: review.selectors.quality, docs/CROWD_CHECKS.md):
- Prolific, bulk approve / bulk reject: one participant id per line (the submissions page's "Bulk approve");
- Prolific, bulk bonus: one "participant_id,amount" line per worker with an amount above zero (the
  submissions page's "Bulk bonus payment"); Prolific pays the study's reward on approval, so the bonus file
  carries everything the rules add;
- MTurk: rows of WorkerId, AssignmentId (when known), Approve ("x"), Reject (the reason) and Bonus, the
  columns of MTurk's batch results file that its "upload results" reads, plus the bonus.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
APPROVED = "approved"
REJECTED = "rejected"
PENDING = "pending"


def _amount(value: Decimal, name: str) -> Decimal:
    if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
        raise ValueError(f"{name}: a finite Decimal of at least 0 (got {value!r})")
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True, slots=True)
class PaymentRules:
    per_item: Decimal = ZERO
    per_accepted_item: Decimal = ZERO
    gold_bonus: Decimal = ZERO
    gold_min_percent: int = 100  # the share of graded check items passed that earns the gold bonus
    currency: str = "GBP"

    def __post_init__(self) -> None:
        for name in ("per_item", "per_accepted_item", "gold_bonus"):
            _amount(getattr(self, name), name)
        percent = self.gold_min_percent
        if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
            raise ValueError(f"gold_min_percent: a whole number from 0 to 100 (got {percent!r})")


@dataclass(frozen=True, slots=True)
class WorkerWork:
    """One worker's standing and work in a study."""

    worker: str  # the account's username
    platform: str  # internal, prolific, mturk or generic
    external_id: str  # the platform's worker id ("" for internal accounts)
    items_done: int
    review: str = PENDING  # pending, approved or rejected
    excluded: bool = False
    exclusion_reason: str = ""
    checks_passed: int | None = None  # graded check items passed (None: no check outcome stored)
    checks_graded: int | None = None
    bonus: Decimal = ZERO  # the researcher's own bonus
    assignment_id: str = ""  # MTurk's assignment id, when known


@dataclass(frozen=True, slots=True)
class Payment:
    work: WorkerWork
    accepted: bool  # neither excluded nor rejected
    base: Decimal  # per item done
    accepted_pay: Decimal  # per accepted item
    gold_bonus: Decimal
    bonus: Decimal  # the researcher's own
    gold_reason: str  # why the gold bonus is (not) paid

    @property
    def total(self) -> Decimal:
        return self.base + self.accepted_pay + self.gold_bonus + self.bonus


def payment_of(work: WorkerWork, rules: PaymentRules) -> Payment:
    if isinstance(work.items_done, bool) or not isinstance(work.items_done, int) or work.items_done < 0:
        raise ValueError(f"items_done: a whole number of at least 0 (got {work.items_done!r})")
    accepted = not work.excluded and work.review != REJECTED
    base = _amount(rules.per_item * work.items_done, "per_item")
    accepted_pay = _amount(rules.per_accepted_item * work.items_done, "per_accepted_item") if accepted else ZERO
    gold, reason = ZERO, "no gold bonus set"
    if rules.gold_bonus > 0:
        if not accepted:
            reason = "not accepted"
        elif not work.checks_graded:
            reason = "no graded check items"
        else:
            percent = Decimal(work.checks_passed or 0) * 100 / Decimal(work.checks_graded)
            if percent >= rules.gold_min_percent:
                gold, reason = _amount(rules.gold_bonus, "gold_bonus"), f"{percent:.0f}% of checks passed"
            else:
                reason = f"{percent:.0f}% of checks passed; the bonus needs {rules.gold_min_percent}%"
    bonus = _amount(work.bonus, "bonus") if accepted else ZERO
    return Payment(work, accepted, base, accepted_pay, gold, bonus, reason)


def payments(works: Iterable[WorkerWork], rules: PaymentRules) -> list[Payment]:
    return [payment_of(work, rules) for work in works]


def cost(rows: Iterable[Payment]) -> Decimal:
    return sum((row.total for row in rows), ZERO)


# --- the files --------------------------------------------------------------------------------------


def _platform(rows: Sequence[Payment], platform: str) -> list[Payment]:
    return [row for row in rows if row.work.platform == platform and row.work.external_id]


def prolific_ids(rows: Sequence[Payment], review: str) -> list[tuple[str]]:
    """The participant ids of the Prolific workers with that review, one a row (bulk approve/reject)."""
    return [(row.work.external_id,) for row in _platform(rows, "prolific") if row.work.review == review]


def prolific_bonuses(rows: Sequence[Payment]) -> list[tuple[str, str]]:
    """(participant_id, amount) of the Prolific workers whose payment from the rules is above zero, for the
    bulk bonus payment (amounts in the study's currency, two decimal places)."""
    return [(row.work.external_id, str(row.total)) for row in _platform(rows, "prolific") if row.total > 0]


MTURK_COLUMNS = ("WorkerId", "AssignmentId", "Approve", "Reject", "Bonus")


def mturk_rows(rows: Sequence[Payment]) -> list[dict[str, str]]:
    """The MTurk workers as rows of MTURK_COLUMNS: Approve is "x" when approved, Reject the reason when
    rejected, Bonus the payment from the rules."""
    table = []
    for row in _platform(rows, "mturk"):
        work = row.work
        reject = (work.exclusion_reason or "Rejected by the researcher") if work.review == REJECTED else ""
        table.append(
            {
                "WorkerId": work.external_id,
                "AssignmentId": work.assignment_id,
                "Approve": "x" if work.review == APPROVED else "",
                "Reject": " ".join(reject.split()),
                "Bonus": str(row.total),
            }
        )
    return table
