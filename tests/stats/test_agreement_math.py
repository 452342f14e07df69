"""Krippendorff's alpha, percent agreement and the per-item and per-annotator tables (no database)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from stats.agreement import (
    CodedLabels,
    add_outcomes,
    agreement,
    agreement_by_group,
    agreement_interval,
    annotator_agreement_rows,
    annotator_agreements,
    annotator_outcomes,
    bin_scores,
    brennan_prediger,
    coded_annotator_outcomes,
    coded_fleiss_kappa,
    fleiss_kappa,
    gwet_ac,
    item_agreements,
    krippendorff_alpha,
    majority_label,
    metric_as_rater,
    percent_agreement,
)
from tests.conftest import DATA

PUBLISHED = DATA / "published"


def krippendorff_units() -> dict[str, list[float | None]]:
    with (PUBLISHED / "krippendorff_2011_reliability.csv").open() as handle:
        observers = [row for row in csv.DictReader(handle)]
    units = [key for key in observers[0] if key != "observer"]
    return {unit: [float(row[unit]) if row[unit] else None for row in observers] for unit in units}


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 x 12 example with missing data.
@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_it_reproduces_krippendorffs_worked_example(level: str, published: float) -> None:
    result = krippendorff_alpha(krippendorff_units(), level)
    assert result.value == pytest.approx(published, abs=5e-4)
    # Unit 12 holds one value: it cannot be paired and is dropped; 40 pairable values remain.
    assert (result.n_items, result.n_dropped, result.n_values) == (11, 1, 40)


def test_it_equals_fleiss_kappa_corrected_for_small_samples_on_complete_nominal_data() -> None:
    # On complete nominal data the two differ only by alpha's small-sample correction:
    # alpha = 1 - (N - 1) / N * (1 - P_o) / (1 - P_e), with N = all values and P_o, P_e Fleiss' agreements.
    with (PUBLISHED / "fleiss_1971_diagnoses.csv").open() as handle:
        ratings = {row.pop("patient"): list(row.values()) for row in csv.DictReader(handle)}
    kappa = fleiss_kappa(ratings)
    alpha = krippendorff_alpha(ratings, "nominal")
    assert kappa.value == pytest.approx(0.430, abs=5e-4)  # Fleiss (1971)
    total = 30 * 6
    expected = 1 - (total - 1) / total * (1 - kappa.observed_agreement) / (1 - kappa.chance_agreement)
    assert alpha.value == pytest.approx(expected)
    assert alpha.value != pytest.approx(kappa.value)


def test_it_is_one_for_perfect_agreement_and_undefined_for_a_single_value() -> None:
    assert krippendorff_alpha({1: ["a", "a"], 2: ["b", "b", None]}).value == pytest.approx(1.0)
    single = krippendorff_alpha({1: ["a", "a"], 2: ["a", "a", "a"]})
    assert single.value is None and "one value in use" in single.reason
    alone = krippendorff_alpha({1: ["a"], 2: [None, "b"]})
    assert alone.value is None and alone.n_dropped == 2


def test_it_refuses_labels_on_a_numeric_level_and_unknown_levels() -> None:
    with pytest.raises(ValueError, match="needs numbers"):
        krippendorff_alpha({1: ["a", "b"]}, "interval")
    with pytest.raises(ValueError, match="unknown level"):
        krippendorff_alpha({1: [1, 2]}, "circular")


def test_it_computes_feqa_percent_agreement() -> None:
    # 3 of 3, 2 of 3 and 3 of 5 agree with their majority: (1 + 2/3 + 3/5) / 3.
    result = percent_agreement({1: ["y", "y", "y"], 2: ["y", "n", "y"], 3: ["a", "b", "a", "a", "c"], 4: ["y"]})
    assert result.value == pytest.approx(100 * (1 + 2 / 3 + 3 / 5) / 3)
    assert (result.n_items, result.n_dropped) == (3, 1)
    assert percent_agreement({1: ["y"]}).value is None


def test_it_lists_items_most_disagreed_first_with_their_spread() -> None:
    numbers = {"none": 0.0, "few": 0.25, "some": 0.5, "most": 0.75, "all": 1.0}
    labelled = {
        "agreed": {"ann": "all", "bob": "all", "cid": "all"},
        "split": {"ann": "few", "bob": "some", "cid": "most"},
        "two-one": {"ann": "none", "bob": "none", "cid": "most"},
    }
    rows = item_agreements(labelled, numbers.get)
    assert [row.item for row in rows] == ["split", "two-one", "agreed"]
    split, two_one, agreed = rows
    assert split.majority is None and split.spread == pytest.approx(0.5)
    assert two_one.majority == "none" and two_one.spread == pytest.approx(0.75)
    assert agreed.agreement == 1.0 and agreed.spread == 0.0


def test_it_scores_each_annotator_against_the_majority() -> None:
    labelled = {
        1: {"ann": "y", "bob": "y", "cid": "n"},
        2: {"ann": "n", "bob": "n", "cid": "n"},
        3: {"ann": "y", "bob": "n"},  # a tie: no majority, not compared
        4: {"ann": "y"},  # one label: nothing to compare
    }
    rows = {row.annotator: row for row in annotator_agreements(labelled)}
    assert (rows["ann"].n_judgements, rows["ann"].n_compared, rows["ann"].agreement_with_majority) == (4, 2, 1.0)
    assert rows["cid"].agreement_with_majority == pytest.approx(0.5)
    assert majority_label(["y", "n"]) is None and majority_label([]) is None


def test_it_scores_each_annotator_against_the_majority_of_the_others() -> None:
    labelled = {
        1: {"ann": "y", "bob": "y", "cid": "n", "dan": "y"},  # ann's others: y, n, y -> y; cid's: y, y, y
        2: {"ann": "n", "bob": "n", "cid": "y"},  # ann's others: n, y -> tie; cid's: n, n -> n
        3: {"ann": "y", "bob": "y"},  # one other rater: too few
        4: {"ann": "y", "bob": None, "cid": "y"},  # a missing label is no rater: too few
    }
    rows = {row.annotator: row for row in annotator_agreements(labelled, others_only=True, min_others=2)}
    ann = rows["ann"]
    assert (ann.n_judgements, ann.n_compared, ann.agreement_with_majority) == (4, 1, 1.0)
    assert (ann.n_too_few, ann.n_ties) == (2, 1)
    assert ann.reason == "2 units with fewer than 2 other raters; 1 unit on which the other raters tie"
    assert (rows["cid"].n_compared, rows["cid"].agreement_with_majority) == (2, 0.0)
    # dan's only unit: the others (y, y, n) have majority y, which dan chose
    assert (rows["dan"].n_compared, rows["dan"].agreement_with_majority) == (1, 1.0)
    # With the own vote in (the default) ann is compared on every unit, her own label counting for herself.
    default = {row.annotator: row for row in annotator_agreements(labelled)}
    assert (default["ann"].n_compared, default["ann"].n_too_few, default["ann"].reason) == (4, 0, "")


def test_it_says_why_an_annotator_has_no_agreement_with_the_others() -> None:
    labelled = {1: {"ann": "y", "bob": "n"}, 2: {"ann": "y", "bob": "y"}}
    (ann, _) = annotator_agreements(labelled, others_only=True, min_others=2)
    assert ann.agreement_with_majority is None and ann.n_compared == 0
    assert ann.reason == "2 units with fewer than 2 other raters"
    # One other rater is enough when asked: then bob's single label is the others' majority.
    (ann, _) = annotator_agreements(labelled, others_only=True, min_others=1)
    assert (ann.n_compared, ann.agreement_with_majority, ann.reason) == (2, 0.5, "")


def test_it_leaves_the_own_vote_out_of_the_majority_and_agrees_with_the_slow_definition() -> None:
    """Against a direct computation: for each label, majority_label of the unit's other labels."""
    import random

    rng = random.Random(3)
    labelled = {
        unit: {name: rng.choice(["a", "b", "c", None]) for name in rng.sample("pqrst", rng.randint(1, 5))}
        for unit in range(400)
    }
    rows = {row.annotator: row for row in annotator_agreements(labelled, others_only=True, min_others=2)}
    for name, row in rows.items():
        compared = agreed = 0
        for by_annotator in labelled.values():
            own = by_annotator.get(name)
            others = [label for other, label in by_annotator.items() if other != name and label is not None]
            if own is None or len(others) < 2 or majority_label(others) is None:
                continue
            compared += 1
            agreed += own == majority_label(others)
        assert row.n_compared == compared and compared > 0
        assert row.agreement_with_majority == pytest.approx(agreed / compared)


# Gwet (2014), "Handbook of Inter-Rater Reliability", 4th ed.: 4 raters classify 12 subjects into 5
# categories, no rater rates every subject. Re-entered from the irrCAC documentation of its `cac.raw4raters`
# dataset (taken from the handbook), whose printed output gives AC1 0.77544 (p_a 0.81818, p_e 0.19032),
# Brennan-Prediger 0.77273 (p_e 0.2) and Krippendorff's alpha 0.74342.
GWET_RAW_4_RATERS = {
    1: [1, 1, None, 1],
    2: [2, 2, 3, 2],
    3: [3, 3, 3, 3],
    4: [3, 3, 3, 3],
    5: [2, 2, 2, 2],
    6: [1, 2, 3, 4],
    7: [4, 4, 4, 4],
    8: [1, 1, 2, 1],
    9: [2, 2, 2, 2],
    10: [None, 5, 5, 5],
    11: [None, None, 1, 1],
    12: [None, None, 3, None],
}


def test_it_reproduces_gwets_handbook_example_with_missing_ratings() -> None:
    ac1 = gwet_ac(GWET_RAW_4_RATERS)
    assert ac1.value == pytest.approx(0.77544, abs=5e-6) and ac1.name == "AC1"
    assert ac1.observed_agreement == pytest.approx(0.81818, abs=5e-6)
    assert ac1.chance_agreement == pytest.approx(0.19032, abs=5e-6)
    assert (ac1.n_items, ac1.n_dropped, ac1.n_categories) == (11, 1, 5)
    bp = brennan_prediger(GWET_RAW_4_RATERS)
    assert bp.value == pytest.approx(0.77273, abs=5e-6) and bp.chance_agreement == pytest.approx(0.2)
    assert krippendorff_alpha(GWET_RAW_4_RATERS).value == pytest.approx(0.74342, abs=5e-6)


# irrCAC's `distrib.6raters` (Gwet 2014): 6 raters sort 15 subjects into 5 diagnoses, given as counts per
# category; the documentation prints AC1 0.4448007, Fleiss 0.4139265, Krippendorff 0.4204384, BP 0.4388889.
SIX_RATERS = [
    (0, 0, 0, 6, 0), (0, 3, 0, 0, 3), (0, 1, 4, 0, 1), (0, 0, 0, 0, 6), (0, 3, 0, 3, 0),
    (2, 0, 4, 0, 0), (0, 0, 4, 0, 2), (2, 0, 3, 1, 0), (2, 0, 0, 4, 0), (0, 0, 0, 0, 6),
    (1, 0, 0, 5, 0), (1, 1, 0, 4, 0), (0, 3, 3, 0, 0), (1, 0, 0, 5, 0), (0, 2, 0, 3, 1),
]  # fmt: skip


def test_it_reproduces_gwets_six_rater_distribution_example() -> None:
    names = ["depression", "personality", "schizophrenia", "neurosis", "other"]
    ratings = {
        i: [name for name, n in zip(names, row, strict=True) for _ in range(n)] for i, row in enumerate(SIX_RATERS)
    }
    assert gwet_ac(ratings).value == pytest.approx(0.4448007, abs=5e-8)
    assert fleiss_kappa(ratings).value == pytest.approx(0.4139265, abs=5e-8)
    assert krippendorff_alpha(ratings).value == pytest.approx(0.4204384, abs=5e-8)
    assert brennan_prediger(ratings).value == pytest.approx(0.4388889, abs=5e-8)


def test_it_keeps_ac1_defined_when_everyone_agrees_on_one_of_the_scales_categories() -> None:
    # The prevalence paradox: kappa and alpha are undefined when every label is "faithful"; AC1 and BP
    # are 1 once they know the scale has two categories, and say why they cannot tell without it.
    ratings = {i: ["faithful", "faithful", "faithful"] for i in range(20)}
    assert fleiss_kappa(ratings).value is None and krippendorff_alpha(ratings).value is None
    assert gwet_ac(ratings, categories=["faithful", "unfaithful"]).value == pytest.approx(1.0)
    assert brennan_prediger(ratings, categories=["faithful", "unfaithful"]).value == pytest.approx(1.0)
    unknown = gwet_ac(ratings)
    assert unknown.value is None and "pass the scale's categories" in unknown.reason
    skewed = {i: ["faithful"] * 3 for i in range(18)}
    skewed |= {18: ["faithful", "faithful", "unfaithful"], 19: ["unfaithful"] * 3}
    kappa, ac1 = fleiss_kappa(skewed).value, gwet_ac(skewed).value
    assert kappa is not None and ac1 is not None and ac1 > kappa
    with pytest.raises(ValueError, match="not one of the categories"):
        gwet_ac(skewed, categories=["faithful"])
    with pytest.raises(ValueError, match="quadratic weights needs numbers"):
        gwet_ac(skewed, weights="quadratic")


def test_it_computes_every_coefficient_per_group_as_on_the_groups_alone() -> None:
    rows = {i: row for i, row in enumerate(krippendorff_units().values())}
    groups = {i: "even" if i % 2 == 0 else "odd" for i in rows}
    for coefficient, options in [
        ("percent", {}),
        ("fleiss", {}),
        ("krippendorff", {"level": "interval"}),
        # The scale's categories (q) are those of all groups; alone, a group would only see its own.
        ("gwet", {"weights": "linear", "categories": [1, 2, 3, 4, 5]}),
        ("brennan_prediger", {"categories": [1, 2, 3, 4, 5]}),
    ]:
        grouped = agreement_by_group(rows, groups, coefficient, **options)
        assert [g.group for g in grouped.groups] == ["even", "odd"] and grouped.n_groups == 2
        for group in grouped.groups:
            alone = agreement({i: r for i, r in rows.items() if groups[i] == group.group}, coefficient, **options)
            assert group.result == alone
        defined = [g.result.value for g in grouped.groups if g.result.value is not None]
        assert grouped.mean == pytest.approx(sum(defined) / len(defined))


def test_it_reports_a_group_with_one_rater_as_undefined_and_refuses_items_without_a_group() -> None:
    ratings = {1: ["y", "y"], 2: ["n", "y"], 3: ["n", "n"], 4: ["y"], 5: ["n"]}
    groups = {1: "batch-1", 2: "batch-1", 3: "batch-1", 4: "batch-2", 5: "batch-2"}
    result = agreement_by_group(ratings, groups, "krippendorff")
    lonely = result.groups[1]
    assert lonely.group == "batch-2" and lonely.result.value is None and lonely.result.n_dropped == 2
    assert (result.n_groups, result.n_undefined) == (2, 1) and result.mean == result.groups[0].result.value
    assert result.as_dict()["groups"][1] == {
        "group": "batch-2",
        "value": None,
        "n_items": 0,
        "n_dropped": 2,
        "reason": "no unit has two or more values, so nothing can be compared",
    }
    assert "two raters" in agreement_by_group(ratings, groups, "fleiss").groups[1].result.reason
    with pytest.raises(ValueError, match=r"1 item\(s\) have no group, for example \[5\]"):
        agreement_by_group(ratings, {k: v for k, v in groups.items() if k != 5}, "percent")


@pytest.mark.parametrize("coefficient", ["percent", "fleiss", "krippendorff", "gwet", "brennan_prediger"])
def test_it_bootstraps_every_coefficient_over_items_with_a_seed(coefficient: str) -> None:
    ratings = krippendorff_units()
    level = "ordinal" if coefficient == "krippendorff" else "nominal"
    value = agreement(ratings, coefficient, level=level).value
    first = agreement_interval(ratings, coefficient, level=level, resamples=300, seed=3)
    again = agreement_interval(ratings, coefficient, level=level, resamples=300, seed=3)
    other = agreement_interval(ratings, coefficient, level=level, resamples=300, seed=4)
    assert first == again and (other.low, other.high) != (first.low, first.high)
    assert first.low < value < first.high and first.n_resamples == 300


def test_it_counts_the_resamples_where_the_coefficient_is_undefined() -> None:
    # Drawing the same item twice leaves one label in use: kappa is undefined in about half the resamples.
    interval = agreement_interval({1: ["a", "a"], 2: ["b", "b"]}, "fleiss", resamples=400, seed=0)
    assert 120 < interval.n_undefined < 280
    assert interval.as_dict()["n_undefined"] == interval.n_undefined and interval.low == interval.high == 1.0
    nothing = agreement_interval({1: ["a"]}, "krippendorff", resamples=50)
    assert nothing.low is None and nothing.n_undefined == 50 and nothing.reason


def test_it_bins_a_metric_into_the_tasks_labels() -> None:
    scores = {"s1": 0.2, "s2": 0.5, "s3": 0.79, "s4": 0.8, "s5": None, "s6": float("nan"), "s7": float("inf")}
    labels, missing = bin_scores(scores, [0.5, 0.8], ["unfaithful", "partly", "faithful"])
    assert labels == {"s1": "unfaithful", "s2": "partly", "s3": "partly", "s4": "faithful"}
    assert missing == ["s5", "s6", "s7"]
    with pytest.raises(ValueError, match=r"threshold 2 \(0.5\) is not above threshold 1 \(0.8\)"):
        bin_scores(scores, [0.8, 0.5], ["unfaithful", "partly", "faithful"])
    with pytest.raises(ValueError, match="3 labels need 2 thresholds, got 1"):
        bin_scores(scores, [0.5], ["unfaithful", "partly", "faithful"])
    with pytest.raises(ValueError, match="threshold 1 must be a finite number"):
        bin_scores(scores, [float("nan")], ["unfaithful", "faithful"])


def test_it_adds_a_metric_as_one_more_rater() -> None:
    labelled = {
        1: {"alice": "y", "bob": "y", "carol": "n"},
        2: {"alice": "n", "bob": "n", "carol": "n"},
        3: {"alice": "y", "bob": "n"},  # a tie: no majority
        4: {"alice": "y", "bob": "y", "carol": "y"},
        5: {"alice": "n", "bob": "y", "carol": "n"},
        6: {"alice": "y", "bob": "y"},  # the metric has no score here
    }
    metric = {1: "y", 2: "n", 3: "y", 4: "y", 5: "n"}
    report = metric_as_rater(labelled, metric, "krippendorff", metric="bertscore")
    items = [1, 2, 3, 4, 5]
    assert (report.n_items, report.n_missing) == (5, 1)
    assert report.humans == krippendorff_alpha({i: list(labelled[i].values()) for i in items})
    assert report.with_metric == krippendorff_alpha({i: [*labelled[i].values(), metric[i]] for i in items})
    # The metric equals the majority wherever there is one: full agreement on those 4 items.
    assert (report.majority.n_items, report.majority.agreement) == (4, 1.0)
    rows = {row.rater: row for row in report.annotators}
    assert rows["carol"].n_items == 4 and rows["carol"].agreement == pytest.approx(3 / 4)
    assert rows["bob"].agreement == pytest.approx(3 / 5)
    assert report.as_dict()["annotators"][0]["rater"] == "alice"


def test_it_treats_nan_as_missing_and_refuses_infinite_or_negative_numbers_where_they_break_the_math() -> None:
    nan = float("nan")
    with_nan = {1: [1.0, 2.0, nan], 2: [3.0, 3.0], 3: [nan, 4.0]}
    without = {1: [1.0, 2.0], 2: [3.0, 3.0], 3: [4.0]}
    assert krippendorff_alpha(with_nan, "interval") == krippendorff_alpha(without, "interval")
    assert krippendorff_alpha({1: [None], 2: []}, "interval").reason.startswith("no unit has two or more values")
    with pytest.raises(ValueError, match="interval level needs finite numbers, got inf"):
        krippendorff_alpha({1: [1.0, float("inf")], 2: [2.0, 2.0]}, "interval")
    with pytest.raises(ValueError, match="ratio level needs non-negative numbers"):
        krippendorff_alpha({1: [1.0, -1.0], 2: [2.0, 2.0]}, "ratio")
    # Any hashable label works at the nominal level, NUL and lone surrogates included.
    odd = {1: ["\x00", "\x00", "\ud800"], 2: ["\ud800", "\ud800", "\x00"], 3: ["a", "a", "a"]}
    assert fleiss_kappa(odd).category_proportions.keys() == {"\x00", "\ud800", "a"}
    with pytest.raises(ValueError, match="unknown coefficient 'kappa'"):
        agreement(odd, "kappa")


def coded(labelled: dict[int, dict[str, str]]) -> CodedLabels:
    """The labels as arrays, units numbered in the mapping's order (as coded_unit_labels numbers them)."""
    judgements = [
        (unit, name, label) for unit, labels in enumerate(labelled.values()) for name, label in labels.items()
    ]
    names = list(dict.fromkeys(name for _, name, _ in judgements))
    values = list(dict.fromkeys(label for _, _, label in judgements))
    return CodedLabels(
        unit=np.array([unit for unit, _, _ in judgements], dtype=np.int64),
        annotator=np.array([names.index(name) for _, name, _ in judgements], dtype=np.int64),
        label=np.array([values.index(label) for _, _, label in judgements], dtype=np.int64),
        n_units=len(labelled),
        annotators=names,
        labels=values,
    )


@pytest.mark.parametrize(("others_only", "min_others"), [(False, 2), (True, 1), (True, 2), (True, 3)])
def test_it_gives_the_same_figures_from_arrays_as_from_mappings(others_only: bool, min_others: int) -> None:
    """The study page's array path (hundreds of thousands of judgements) against the mapping path: equal
    outcomes per annotator, equal rows, and Fleiss' kappa equal to the last bit, ties and lone raters included."""
    import random

    rng = random.Random(11)
    labelled = {
        unit: {name: rng.choice(["yes", "no", "dont_know"]) for name in rng.sample("pqrstu", rng.randint(1, 5))}
        for unit in range(3000)
    }
    arrays = coded(labelled)
    expected = annotator_outcomes(labelled, others_only=others_only, min_others=min_others)
    assert coded_annotator_outcomes(arrays, others_only=others_only, min_others=min_others) == expected
    assert annotator_agreement_rows(expected, others_only=others_only, min_others=min_others) == annotator_agreements(
        labelled, others_only=others_only, min_others=min_others
    )
    assert coded_fleiss_kappa(arrays) == fleiss_kappa(
        {unit: list(labels.values()) for unit, labels in labelled.items()}
    )
    # Two halves pooled are the whole.
    halves = [{u: labels for u, labels in labelled.items() if u % 2 == side} for side in (0, 1)]
    parts = [annotator_outcomes(half, others_only=others_only, min_others=min_others) for half in halves]
    assert add_outcomes(*parts) == expected


def test_it_has_no_figures_from_no_arrays() -> None:
    empty = coded({})
    assert coded_annotator_outcomes(empty, others_only=True) == {}
    assert coded_fleiss_kappa(empty) == fleiss_kappa({})
    assert coded_fleiss_kappa(empty).reason == "no judgements yet"
