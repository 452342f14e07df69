"""Payments from the researcher's rules and the platforms' files (protocols/payments.py): exact decimals."""

from __future__ import annotations

from decimal import Decimal

import pytest

from common.validation import InputError, money
from protocols.payments import (
    PaymentRules,
    WorkerWork,
    cost,
    mturk_rows,
    payment_of,
    payments,
    prolific_bonuses,
    prolific_ids,
)

RULES = PaymentRules(
    per_item=Decimal("0.10"), per_accepted_item=Decimal("0.05"), gold_bonus=Decimal("1.00"), gold_min_percent=80
)


def work(**changes: object) -> WorkerWork:
    values: dict[str, object] = {"worker": "w", "platform": "prolific", "external_id": "P1", "items_done": 3}
    return WorkerWork(**{**values, **changes})  # type: ignore[arg-type]


def test_it_pays_per_item_per_accepted_item_gold_and_the_researchers_bonus_exactly() -> None:
    paid = payment_of(work(checks_passed=4, checks_graded=5, bonus=Decimal("0.33")), RULES)
    assert (paid.base, paid.accepted_pay, paid.gold_bonus, paid.bonus) == (
        Decimal("0.30"),
        Decimal("0.15"),
        Decimal("1.00"),
        Decimal("0.33"),
    )
    assert paid.total == Decimal("1.78") and isinstance(paid.total, Decimal)
    assert payment_of(work(checks_passed=3, checks_graded=5), RULES).gold_bonus == 0  # 60% < 80%
    assert "no graded check items" in payment_of(work(), RULES).gold_reason


def test_it_pays_a_rejected_or_excluded_worker_the_per_item_amount_only() -> None:
    for standing in ({"review": "rejected"}, {"excluded": True}):
        paid = payment_of(work(checks_passed=5, checks_graded=5, bonus=Decimal("2.00"), **standing), RULES)
        assert not paid.accepted and paid.total == Decimal("0.30")


def test_it_refuses_rules_that_are_no_amounts() -> None:
    for bad in (Decimal("NaN"), Decimal("-0.01"), Decimal("Infinity")):
        with pytest.raises(ValueError, match="per_item"):
            PaymentRules(per_item=bad)
    with pytest.raises(ValueError, match="gold_min_percent"):
        PaymentRules(gold_min_percent=101)
    with pytest.raises(ValueError, match="per_item"):
        PaymentRules(per_item=0.1)  # type: ignore[arg-type]  # a float is refused


def test_it_writes_prolifics_bulk_lists_and_the_mturk_rows() -> None:
    rows = payments(
        [
            work(worker="a", external_id="P-A", review="approved"),
            work(worker="b", external_id="P-B", review="rejected"),
            work(worker="c", external_id="", review="approved"),  # no platform id: in no file
            work(worker="d", platform="mturk", external_id="A1", review="rejected", exclusion_reason="fast\nand bad"),
            work(worker="e", platform="internal", external_id="", items_done=0),
        ],
        RULES,
    )
    assert prolific_ids(rows, "approved") == [("P-A",)]
    assert prolific_ids(rows, "rejected") == [("P-B",)]
    assert prolific_bonuses(rows) == [("P-A", "0.45"), ("P-B", "0.30")]
    assert mturk_rows(rows) == [
        {"WorkerId": "A1", "AssignmentId": "", "Approve": "", "Reject": "fast and bad", "Bonus": "0.30"}
    ]
    assert cost(rows) == Decimal("0.45") + Decimal("0.30") + Decimal("0.45") + Decimal("0.30")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1.5", Decimal("1.50")),
        ("0", Decimal("0.00")),
        (2, Decimal("2.00")),
        (0.1, Decimal("0.10")),
        ("+3.25", Decimal("3.25")),
    ],
)
def test_money_reads_amounts_as_decimals(raw: object, expected: Decimal) -> None:
    assert money(raw, field="amount", maximum=Decimal("10")) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "nan",
        "inf",
        "-1",
        "1e2",
        "10.01",
        "1.005",
        "",
        " ",
        "1,5",
        "\u0661",
        True,
        None,
        float("nan"),
        float("inf"),
        [1],
    ],
)
def test_money_refuses_what_is_no_amount(raw: object) -> None:
    with pytest.raises(InputError) as caught:
        money(raw, field="amount", maximum=Decimal("10"))
    assert caught.value.field == "amount" and "amount" in caught.value.message
