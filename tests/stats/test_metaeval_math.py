"""Consistency, ROC AUC and ranking accuracy on faithful/unfaithful pairs (no database)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stats.metaeval import (
    PairGroup,
    balanced_accuracy,
    best_threshold,
    binary_labels,
    binary_roc_auc,
    meta_evaluate,
    meta_evaluate_by_type,
)

PAIRS = [
    PairGroup(0.9, [0.5], "Entity"),
    PairGroup(0.6, [0.6], "Entity"),  # a tie: not consistent
    PairGroup(0.4, [0.7], "Predicate"),
    PairGroup(0.8, [0.1], "Predicate"),
    PairGroup(None, [0.3], "Predicate"),  # missing: dropped and counted
]


def test_it_counts_strictly_lower_unfaithful_scores_as_consistent() -> None:
    result = meta_evaluate("consistency", PAIRS)
    assert result.value == pytest.approx(50.0) and (result.n, result.n_missing) == (4, 1)


def test_it_computes_roc_auc_with_ties_as_one_half() -> None:
    result = meta_evaluate("roc_auc", PAIRS)
    faithful, unfaithful = [0.9, 0.6, 0.4, 0.8], [0.5, 0.6, 0.7, 0.1]
    u = stats.mannwhitneyu(faithful, unfaithful).statistic
    assert result.value == pytest.approx(100 * u / 16)


def test_it_counts_ties_as_wrong_in_ranking_accuracy_and_equals_consistency_on_pairs() -> None:
    assert meta_evaluate("ranking", PAIRS).value == meta_evaluate("consistency", PAIRS).value
    groups = [PairGroup(0.9, [0.5, 0.8]), PairGroup(0.7, [0.2, 0.7]), PairGroup(0.3, [0.4, 0.1])]
    assert meta_evaluate("ranking", groups).value == pytest.approx(100 / 3)


def test_it_reports_overall_and_each_error_type() -> None:
    rows = meta_evaluate_by_type("consistency", PAIRS)
    assert [(row.group, row.value, row.n) for row in rows] == [
        ("overall", 50.0, 4),
        ("Entity", 50.0, 2),
        ("Predicate", 50.0, 2),
    ]
    empty = meta_evaluate("roc_auc", [PairGroup(None, [0.1])])
    assert empty.value is None and empty.reason


def test_it_turns_a_human_score_into_a_binary_label() -> None:
    assert binary_labels([0.2, 0.5, 0.9, None, float("nan")], 0.5) == [0, 1, 1, None, None]
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        binary_labels([0.2], float("inf"))


def test_it_tunes_the_threshold_between_distinct_scores_with_ties_on_one_side() -> None:
    assert best_threshold(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.3, 0.4])) == (pytest.approx(0.25), 1.0)
    # Three summaries tie at 0.5: they are predicted alike, so the best cut lies above them.
    threshold, accuracy = best_threshold(np.array([0, 1, 0, 1]), np.array([0.5, 0.5, 0.5, 0.9]))
    assert threshold == pytest.approx(0.7) and accuracy == pytest.approx(0.75)
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, size=60)
    scores = np.round(labels * 0.3 + rng.random(60), 1)  # rounded: many ties

    def accuracy_at(t: float) -> float:
        predicted = scores >= t
        return (np.mean(predicted[labels == 1]) + np.mean(~predicted[labels == 0])) / 2

    threshold, accuracy = best_threshold(labels, scores)
    assert accuracy == pytest.approx(accuracy_at(threshold))
    assert accuracy >= max(accuracy_at(t) for t in np.linspace(-0.1, 1.4, 301)) - 1e-12


def split_sample(n: int = 300, seed: int = 6) -> tuple[list[int | None], list[float | None], list[str | None]]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    scores = (0.8 * labels + rng.normal(scale=0.6, size=n)).tolist()
    splits: list[str | None] = ["val" if i % 3 == 0 else "test" for i in range(n)]
    out: list[int | None] = labels.tolist()
    out[0], scores[1], splits[2] = None, None, "train"  # a missing label, a missing score, another split
    return out, scores, splits


def test_it_applies_the_threshold_tuned_on_validation_to_the_test_split() -> None:
    labels, scores, splits = split_sample()
    result = balanced_accuracy(labels, scores, splits=splits, bootstrap=300, seed=2)
    val = [i for i in range(300) if splits[i] == "val" and labels[i] is not None and scores[i] is not None]
    test = [i for i in range(300) if splits[i] == "test" and labels[i] is not None and scores[i] is not None]
    threshold, _ = best_threshold(np.array([labels[i] for i in val]), np.array([scores[i] for i in val]))
    y = np.array([labels[i] for i in test])
    predicted = np.array([scores[i] for i in test]) >= threshold
    expected = 50 * (np.mean(predicted[y == 1]) + np.mean(~predicted[y == 0]))
    assert result.threshold == threshold and result.value == pytest.approx(expected)
    assert (result.n_tune, result.n_test, result.n_missing, result.n_other) == (len(val), len(test), 2, 1)
    assert result.ci_low < result.value < result.ci_high and result.n_bootstrap == 300
    auc = binary_roc_auc([labels[i] for i in test], [scores[i] for i in test])
    assert result.roc_auc == pytest.approx(auc.value)
    assert result.as_dict()["protocol"] == "balanced_accuracy" and result.as_dict()["tuning"] == "split"


def test_it_refuses_a_split_key_without_a_validation_split() -> None:
    labels, scores, _ = split_sample(30)
    with pytest.raises(ValueError, match=r"no summary is in the validation split 'val' \(splits present: dev, test\)"):
        balanced_accuracy(labels, scores, splits=["dev" if i % 2 else "test" for i in range(30)])
    with pytest.raises(ValueError, match="no summary is in the test split 'test'"):
        balanced_accuracy(labels, scores, splits=["val"] * 30)
    one_class = balanced_accuracy([1, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], splits=["val", "val", "test", "test"])
    assert one_class.value is None and "validation split 'val' needs faithful and unfaithful" in one_class.reason


def test_it_cross_validates_the_threshold_without_a_split() -> None:
    labels, scores, _ = split_sample()
    result = balanced_accuracy(labels, scores, folds=5, seed=9, bootstrap=200)
    assert result.protocol == "cross_validation" and (result.folds, result.seed) == (5, 9)
    assert len(result.fold_thresholds) == 5 and result.n_test == 298 and result.n_missing == 2
    assert result == balanced_accuracy(labels, scores, folds=5, seed=9, bootstrap=200)
    assert (
        result.threshold
        == best_threshold(
            np.array(
                [label for label, score in zip(labels, scores, strict=True) if label is not None and score is not None]
            ),
            np.array(
                [score for label, score in zip(labels, scores, strict=True) if label is not None and score is not None]
            ),
        )[0]
    )
    assert 60 < result.value < 90 and result.ci_low < result.value < result.ci_high
    separable = balanced_accuracy([0, 0, 0, 1, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.8, 0.9], folds=5, bootstrap=100)
    assert separable.value == 100.0 and separable.folds == 3  # no more folds than the smaller class has summaries
    assert separable.n_bootstrap + separable.n_bootstrap_undefined == 100 and separable.n_bootstrap_undefined > 0
    too_few = balanced_accuracy([0, 1, 1, None], [0.1, 0.5, 0.9, 0.3])
    assert too_few.value is None and "at least 2 faithful and 2 unfaithful" in too_few.reason


def test_it_computes_roc_auc_on_any_binary_labelled_data() -> None:
    labels = [1, 0, 1, 1, 0, 0, None, 1]
    scores = [0.9, 0.4, 0.4, 0.7, 0.2, 0.8, 0.5, float("nan")]
    result = binary_roc_auc(labels, scores)
    u = stats.mannwhitneyu([0.9, 0.4, 0.7], [0.4, 0.2, 0.8]).statistic
    assert result.value == pytest.approx(100 * u / 9) and (result.n, result.n_missing) == (6, 2)
    assert binary_roc_auc([1, 1], [0.2, 0.3]).value is None
    with pytest.raises(ValueError, match="a label is 1 \\(faithful\\), 0 \\(unfaithful\\) or None"):
        binary_roc_auc([2, 0], [0.2, 0.3])
