"""Time, explanation-length and paste checks: flags per item, warn/block per worker."""

from __future__ import annotations

import math

import pytest

from protocols.attention import CheckResult, attention_decisions
from protocols.decisions import BLOCK, OK, WARN, Thresholds, decisions_merge
from protocols.tasks import CheckOutcome
from protocols.timing import FAST, PASTE, SHORT_EXPLANATION, ItemWork, TimeRules, item_flags, time_decisions

RULES = TimeRules(min_seconds={"sentence_consistency": 20.0}, default_min_seconds=5.0, min_explanation_chars=15)


def test_it_flags_an_item_below_its_tasks_minimum_active_time() -> None:
    fast = item_flags(ItemWork("w", 1, "sentence_consistency", 12.0, ("a reason long enough",)), RULES)
    assert [(flag.kind, flag.reason) for flag in fast] == [(FAST, "12.0 s of active work; the minimum is 20 s")]
    assert item_flags(ItemWork("w", 1, "sentence_consistency", 20.0, ("a reason long enough",)), RULES) == []
    # tasks without a floor of their own take the default
    assert [flag.kind for flag in item_flags(ItemWork("w", 2, "factuality", 4.9), RULES)] == [FAST]
    assert item_flags(ItemWork("w", 2, "factuality", 5.0), RULES) == []


def test_it_flags_short_explanations_only_where_the_task_asks_for_them() -> None:
    short = ItemWork("w", 1, "sentence_consistency", 60.0, ("ok", "   fine  ", "the article says so"))
    assert [(f.kind, f.reason) for f in item_flags(short, RULES)] == [
        (SHORT_EXPLANATION, "2 explanation(s) shorter than 15 characters")
    ]
    # the factuality task asks for no explanation: an optional short note is no problem
    assert item_flags(ItemWork("w", 1, "factuality", 60.0, ("ok",)), RULES) == []


def test_it_flags_every_item_with_pasted_explanations() -> None:
    pasted = ItemWork("w", 1, "sentence_consistency", 60.0, ("the article says so",), paste_events=2)
    assert [(f.kind, f.reason) for f in item_flags(pasted, RULES)] == [
        (PASTE, "text pasted into an explanation 2 time(s)")
    ]


def test_it_warns_and_blocks_workers_by_the_number_of_flagged_items() -> None:
    rules = TimeRules(default_min_seconds=10.0, fast=Thresholds(warn_at=2, block_at=3))
    works = [ItemWork("steady", item, "factuality", 30.0) for item in range(5)]
    works += [ItemWork("hasty", item, "factuality", 8.0 if item < 2 else 30.0) for item in range(5)]
    works += [ItemWork("clicker", item, "factuality", 1.0) for item in range(5)]
    works += [ItemWork("paster", 1, "factuality", 30.0, paste_events=1)]
    decisions = {decision.worker: decision for decision in time_decisions(works, rules)}
    assert [decisions[w].action for w in ("steady", "hasty", "clicker", "paster")] == [OK, WARN, BLOCK, WARN]
    assert decisions["clicker"].reasons == ("block: 5 item(s) done faster than the minimum active time",)
    assert decisions["paster"].reasons == ("warn: 1 item(s) with text pasted into an explanation",)
    assert len(decisions["clicker"].flags) == 5
    assert decisions["hasty"].as_dict()["flags"][0] == {
        "kind": FAST,
        "item": 0,
        "reason": "8.0 s of active work; the minimum is 10 s",
    }


def test_it_merges_attention_and_time_decisions_into_the_most_severe_per_worker() -> None:
    attention = attention_decisions(
        [CheckResult("a", 1, CheckOutcome(False, "x")), CheckResult("b", 1, CheckOutcome(True, "y"))]
    )
    timing = time_decisions([ItemWork("a", 2, "factuality", 1.0), ItemWork("c", 2, "factuality", 1.0)], RULES)
    merged = {decision.worker: decision for decision in decisions_merge(attention, timing)}
    assert sorted(merged) == ["a", "b", "c"]
    assert merged["a"].action == WARN and len(merged["a"].reasons) == 2 and len(merged["a"].flags) == 2
    assert merged["b"].action == OK and merged["c"].action == WARN


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -1.0, "12", True])
def test_it_refuses_seconds_that_are_not_finite_non_negative_numbers(seconds: object) -> None:
    with pytest.raises(ValueError, match="active_seconds"):
        item_flags(ItemWork("w", 1, "factuality", seconds), RULES)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_seconds"):
        TimeRules(min_seconds={"factuality": seconds})  # type: ignore[dict-item]


def test_it_refuses_rules_for_a_task_that_does_not_exist() -> None:
    with pytest.raises(KeyError, match="unknown task 'factuallity'"):
        TimeRules(min_seconds={"factuallity": 10.0})
    with pytest.raises(ValueError, match="min_explanation_chars"):
        TimeRules(min_explanation_chars=2.5)  # type: ignore[arg-type]
