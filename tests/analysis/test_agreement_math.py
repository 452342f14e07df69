"""Krippendorff's alpha, percent agreement and the per-item and per-annotator tables (no database)."""

from __future__ import annotations

import csv

import pytest

from annotations.analysis.agreement import (
    annotator_agreements,
    fleiss_kappa,
    item_agreements,
    krippendorff_alpha,
    majority_label,
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
