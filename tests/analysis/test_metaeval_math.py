"""Consistency, ROC AUC and ranking accuracy on faithful/unfaithful pairs (no database)."""

from __future__ import annotations

import pytest
from scipy import stats

from annotations.analysis.metaeval import PairGroup, meta_evaluate, meta_evaluate_by_type

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
