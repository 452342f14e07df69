"""Comparing conditions (stats.conditions): checked against scipy (chi-square, permutation tests), the
`krippendorff` package in a plain bootstrap loop, and by hand; undefined cases give a reason, never a number."""

from __future__ import annotations

import math
from collections.abc import Mapping

import krippendorff
import numpy as np
import pytest
from scipy import stats

from stats.conditions import (
    BETWEEN,
    WITHIN,
    ConditionLabels,
    Unit,
    compare_conditions,
    equal_raters_fleiss,
    gold_agreement,
    gold_permutation_test,
    homogeneity_test,
    label_distribution,
    permutation_p_value,
    time_per_item,
)
from stats.resampling import batch_sizes, percentile_interval

Labels = dict[Unit, dict[str, str]]


def random_labels(rng: np.random.Generator, items: range, annotators: list[str], bias: float) -> Labels:
    """Each annotator labels each item yes with probability depending on the item and `bias`."""
    labels: Labels = {}
    for item in items:
        truth = item % 3 != 0
        labels[(item, 0)] = {
            name: ("yes" if (rng.random() < (0.85 if truth else 0.2) + bias) else "no") for name in annotators
        }
    return labels


def test_it_counts_the_label_distribution_and_tests_homogeneity_like_scipy() -> None:
    first = label_distribution({(1, 0): {"a": "yes", "b": "no"}, (2, 0): {"a": "yes", "b": "yes"}})
    second = label_distribution({(1, 0): {"c": "no", "d": "no"}, (2, 0): {"c": "maybe", "d": "yes"}})
    assert first.counts == {"no": 1, "yes": 3} and first.proportions == {"no": 0.25, "yes": 0.75}
    assert second.n_judgements == 4
    result = homogeneity_test(first, second)
    reference = stats.chi2_contingency([[0, 1, 3], [1, 2, 1]], correction=False)
    assert result.statistic == pytest.approx(reference.statistic)
    assert result.p_value == pytest.approx(reference.pvalue)
    assert result.dof == 2
    assert "expected count" in result.note


def test_it_says_why_homogeneity_is_undefined() -> None:
    some = label_distribution({(1, 0): {"a": "yes"}})
    none = label_distribution({})
    assert homogeneity_test(some, none).statistic is None
    assert homogeneity_test(some, none).reason == "a condition has no judgements"
    single = homogeneity_test(some, label_distribution({(2, 0): {"b": "yes"}}))
    assert single.p_value is None and "'yes'" in single.reason


def test_it_summarises_time_per_item_over_recorded_times() -> None:
    times = time_per_item({(1, "a"): 10.0, (2, "a"): 20.0, (3, "b"): 60.0, (4, "b"): 0.0})
    assert (times.n, times.median, times.mean) == (3, 20.0, 30.0)
    empty = time_per_item({(1, "a"): 0.0})
    assert (empty.median, empty.mean, empty.reason) == (None, None, "no time recorded")


def test_it_computes_fleiss_only_when_every_unit_has_as_many_raters() -> None:
    equal = equal_raters_fleiss({(1, 0): {"a": "yes", "b": "yes"}, (2, 0): {"a": "no", "b": "yes"}})
    assert equal.value is not None and equal.raters_per_item == 2
    unequal = equal_raters_fleiss({(1, 0): {"a": "yes", "b": "yes"}, (2, 0): {"a": "no"}})
    assert unequal.value is None and "different numbers of raters (1, 2)" in unequal.reason


def test_it_measures_agreement_with_the_final_labels() -> None:
    labels = {(1, 0): {"a": "yes", "b": "no"}, (2, 0): {"a": "no"}, (3, 0): {"a": "yes"}}
    result = gold_agreement(labels, {(1, 0): "yes", (2, 0): "no", (3, 0): None})
    assert (result.n_judgements, result.n_equal, result.proportion) == (3, 2, pytest.approx(2 / 3))
    assert gold_agreement(labels, {}).proportion is None
    assert "no final labels" in gold_agreement(labels, {(1, 0): None}).reason
    elsewhere = gold_agreement(labels, {(9, 0): "yes"})
    assert elsewhere.proportion is None and "no judgement of this condition" in elsewhere.reason


def between_blocks(rng: np.random.Generator) -> tuple[Labels, Labels, dict[Unit, str | None]]:
    """Three annotators per condition over the same ten items, one item without a final label."""
    gold: dict[Unit, str | None] = {(item, 0): "yes" if item % 3 else "no" for item in range(10)}
    gold[(9, 0)] = None
    return (
        random_labels(rng, range(10), ["a", "b", "c"], 0.0),
        random_labels(rng, range(10), ["d", "e", "f"], -0.15),
        gold,
    )


def shares(labels: Labels, gold: Mapping[Unit, str | None]) -> dict[str, tuple[int, int]]:
    """annotator -> (judgements equal to the final label, judgements on units with one)."""
    out: dict[str, tuple[int, int]] = {}
    for unit, by_annotator in labels.items():
        if gold[unit] is None:
            continue
        for name, label in by_annotator.items():
            equal, total = out.get(name, (0, 0))
            out[name] = (equal + (label == gold[unit]), total + 1)
    return out


def test_it_permutes_whole_annotators_in_a_between_design_like_scipy() -> None:
    reference, other, gold = between_blocks(np.random.default_rng(3))
    result = gold_permutation_test(reference, other, gold, design=BETWEEN, permutations=20000, seed=5)
    blocks = [*shares(reference, gold).values(), *shares(other, gold).values()]
    equal = np.array([block[0] for block in blocks], dtype=float)
    total = np.array([block[1] for block in blocks], dtype=float)

    def difference(x: np.ndarray, y: np.ndarray) -> float:
        return float(abs(equal[x].sum() / total[x].sum() - equal[y].sum() / total[y].sum()))

    # Six annotators in two blocks of three: scipy enumerates all 20 splits (an exact test).
    exact = stats.permutation_test(
        (np.arange(3), np.arange(3, 6)), difference, permutation_type="independent", alternative="greater"
    )
    assert result.randomized == "annotator" and result.n_permutations == 20000
    assert result.difference is not None and abs(result.difference) == pytest.approx(exact.statistic)
    assert result.p_value == pytest.approx(exact.pvalue, abs=0.01)
    assert result.p_value == (result.n_extreme + 1) / (result.n_permutations + 1)


def test_it_permutes_assignments_within_each_annotator_like_scipy() -> None:
    # Each annotator judged one item in each condition: shuffling within the annotator swaps the pair.
    rng = np.random.default_rng(11)
    reference: Labels = {}
    other: Labels = {}
    gold: dict[Unit, str | None] = {}
    for number in range(7):
        name = f"annotator{number}"
        for labels, item, bias in ((reference, 2 * number, 0.0), (other, 2 * number + 1, -0.3)):
            gold[(item, 0)] = "yes"
            gold[(item, 1)] = "no"
            labels[(item, 0)] = {name: "yes" if rng.random() < 0.8 + bias else "no"}
            labels[(item, 1)] = {name: "no" if rng.random() < 0.7 + bias else "yes"}
    result = gold_permutation_test(reference, other, gold, design=WITHIN, permutations=20000, seed=2)
    equal_ref = np.array(
        [sum(reference[(2 * n, u)][f"annotator{n}"] == gold[(2 * n, u)] for u in (0, 1)) for n in range(7)]
    )
    equal_other = np.array(
        [sum(other[(2 * n + 1, u)][f"annotator{n}"] == gold[(2 * n + 1, u)] for u in (0, 1)) for n in range(7)]
    )

    def difference(x: np.ndarray, y: np.ndarray) -> float:
        return float(abs(x.sum() / (2 * x.size) - y.sum() / (2 * y.size)))

    # 2^7 = 128 swaps: scipy enumerates them all.
    exact = stats.permutation_test(
        (equal_ref, equal_other), difference, permutation_type="samples", alternative="greater"
    )
    assert result.randomized == "assignment within annotator"
    assert result.difference is not None and abs(result.difference) == pytest.approx(exact.statistic)
    assert result.p_value == pytest.approx(exact.pvalue, abs=0.01)


def test_it_keeps_each_stratum_intact_when_permuting() -> None:
    # Stratum 0 holds only treated units, stratum 1 only others: no shuffle within a stratum changes anything.
    correct = np.array([3.0, 4.0, 0.0, 1.0])
    total = np.array([4.0, 4.0, 4.0, 4.0])
    treated = np.array([True, True, False, False])
    observed, p_value, extreme = permutation_p_value(
        correct, total, treated, np.array([0, 0, 1, 1]), permutations=99, seed=0
    )
    assert observed == pytest.approx(7 / 8 - 1 / 8)
    assert (extreme, p_value) == (99, 1.0)


def test_it_reports_undefined_gold_comparisons_with_a_reason() -> None:
    labels: Labels = {(1, 0): {"a": "yes"}}
    no_gold = gold_permutation_test(labels, {(2, 0): {"b": "no"}}, {}, design=BETWEEN, permutations=10, seed=0)
    assert no_gold.p_value is None and no_gold.difference is None and "no final labels" in no_gold.reason
    empty = gold_permutation_test(labels, {}, {(1, 0): "yes"}, design=BETWEEN, permutations=10, seed=0)
    assert empty.p_value is None and "no judgement on a unit with a final label" in empty.reason
    apart = gold_permutation_test(
        labels, {(2, 0): {"b": "no"}}, {(1, 0): "yes", (2, 0): "yes"}, design=WITHIN, permutations=10, seed=0
    )
    assert apart.p_value is None and "no annotator has judgements in both conditions" in apart.reason


def alpha_of(labels: Labels, keys: list[Unit]) -> float:
    """The `krippendorff` package's nominal alpha of the units `keys` (repeats allowed), NaN when undefined."""
    annotators = sorted({name for by_annotator in labels.values() for name in by_annotator})
    codes = {"no": 0.0, "yes": 1.0}
    data = np.full((len(annotators), len(keys)), np.nan)
    for column, unit in enumerate(keys):
        for name, label in labels.get(unit, {}).items():
            data[annotators.index(name), column] = codes[label]
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:  # nothing pairable, or one value: undefined
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_it_bootstraps_alpha_and_its_difference_like_a_plain_loop() -> None:
    rng = np.random.default_rng(7)
    reference = random_labels(rng, range(12), ["a", "b", "c"], 0.0)
    other = random_labels(rng, range(4, 16), ["d", "e"], 0.2)  # items 4..11 shared, 12..15 only here
    resamples, seed = 150, 9
    result = compare_conditions(
        [ConditionLabels("shown", reference, {}), ConditionLabels("hidden", other, {})],
        resamples=resamples,
        seed=seed,
    )
    # The loop: the same draws of items (the union, in first-seen order), each condition's alpha recomputed
    # by the krippendorff package on the units of the drawn items, repeats kept.
    items = list(dict.fromkeys([unit[0] for unit in reference] + [unit[0] for unit in other]))
    draw = np.random.default_rng(seed)
    first, second = [], []
    for size in batch_sizes(resamples, len(items)):
        for row in draw.integers(0, len(items), size=(size, len(items))):
            drawn = [items[index] for index in row]
            first.append(alpha_of(reference, [(item, 0) for item in drawn if (item, 0) in reference]))
            second.append(alpha_of(other, [(item, 0) for item in drawn if (item, 0) in other]))
    first_values, second_values = np.array(first), np.array(second)
    shown, hidden = result.conditions
    low, high, used = percentile_interval(first_values)
    assert (shown.alpha_interval.low, shown.alpha_interval.high) == (pytest.approx(low), pytest.approx(high))
    assert shown.alpha_interval.n_undefined == resamples - used
    low, high, used = percentile_interval(second_values - first_values)
    (contrast,) = result.contrasts
    interval = contrast.alpha.interval
    assert interval is not None
    assert (interval.low, interval.high) == (pytest.approx(low), pytest.approx(high))
    assert interval.n_undefined == resamples - used and interval.seed == seed
    assert shown.alpha.value is not None and hidden.alpha.value is not None
    assert contrast.alpha.value == pytest.approx(hidden.alpha.value - shown.alpha.value)
    assert hidden.n_items == 12 and hidden.n_annotators == 2


def test_it_compares_every_condition_with_the_first() -> None:
    rng = np.random.default_rng(1)
    conditions = [
        ConditionLabels(name, random_labels(rng, range(8), [f"{name}{n}" for n in range(3)], bias), seconds)
        for name, bias, seconds in (
            ("shown", 0.0, {(1, "shown0"): 10.0, (2, "shown1"): 30.0}),
            ("hidden", 0.1, {(1, "hidden0"): 25.0}),
            ("shuffled", -0.1, {}),
        )
    ]
    gold: dict[Unit, str | None] = {(item, 0): "yes" for item in range(8)}
    result = compare_conditions(conditions, gold=gold, resamples=50, seed=4)
    assert result.reference == "shown" and [c.name for c in result.contrasts] == ["hidden", "shuffled"]
    hidden, shuffled = result.contrasts
    assert hidden.time_median.value == pytest.approx(25.0 - 20.0)
    assert shuffled.time_median.value is None
    assert shuffled.time_median.reason == "the time per item of shuffled is undefined"
    assert hidden.gold.p_value is not None and hidden.gold.n_permutations == 50
    assert result.as_dict()["randomized"] == "annotator"


def test_it_says_why_when_a_condition_is_empty_or_has_one_rater() -> None:
    reference = ConditionLabels("shown", {(1, 0): {"a": "yes", "b": "no"}, (2, 0): {"a": "no", "b": "no"}}, {})
    single = ConditionLabels("hidden", {(1, 0): {"c": "yes"}, (2, 0): {"c": "no"}}, {})
    empty = ConditionLabels("shuffled", {}, {})
    result = compare_conditions([reference, single, empty], gold={}, resamples=20, seed=0)
    _, one_rater, nothing = result.conditions
    assert one_rater.alpha.value is None and one_rater.alpha.reason
    assert one_rater.alpha_interval.low is None and "alpha is undefined" in one_rater.alpha_interval.reason
    assert one_rater.fleiss.value is None and one_rater.fleiss.reason
    assert nothing.distribution.n_judgements == 0 and nothing.alpha.value is None
    with_single, with_empty = result.contrasts
    assert with_single.alpha.value is None and with_single.alpha.interval is None and with_single.alpha.reason
    assert with_empty.homogeneity.p_value is None and with_empty.homogeneity.reason == "a condition has no judgements"
    assert with_single.gold.p_value is None and "no final labels" in with_single.gold.reason
    assert not result.has_gold
    lonely = compare_conditions([reference], resamples=20)
    assert lonely.contrasts == [] and lonely.reason == "fewer than two conditions"


def test_it_refuses_an_unknown_design() -> None:
    with pytest.raises(ValueError, match="unknown design"):
        compare_conditions([], design="diagonal")
