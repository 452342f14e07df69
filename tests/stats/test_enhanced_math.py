"""Human-enhanced metrics as thesis 5.2 "Results" defines them (no database)."""

from __future__ import annotations

import pytest

from stats.enhanced import average_vote, enhanced_score, enhanced_table, majority_vote


def test_it_aggregates_votes_by_majority_and_average() -> None:
    assert majority_vote([1.0, 1.0, 0.0]) == 1.0
    assert majority_vote([0.25, 0.25, 0.75]) == 0.25
    # No majority: the median of the tied values.
    assert majority_vote([0.25, 0.5, 0.75]) == 0.5
    assert majority_vote([1.0, 0.0]) == 0.5
    assert average_vote([0.25, 0.5, 0.75, 1.0]) == pytest.approx(0.625)


def test_it_follows_the_thesis_examples() -> None:
    # BERTScore: three important words labelled 1, 1, 0 give 2/3.
    words = {0: [1.0, 1.0, 1.0], 3: [1.0, 1.0, 0.0], 5: [0.0, 0.0, 1.0]}
    assert enhanced_score("bertscore", words, "majority") == pytest.approx(2 / 3)
    assert enhanced_score("bertscore", words, "average") == pytest.approx((1 + 2 / 3 + 1 / 3) / 3)
    # QGQA: four answers labelled 0, 0, 1, 1 give 2/4; units 2n ("answerable") do not count.
    statements = {0: [0.0] * 3, 1: [0.0] * 3, 2: [1.0] * 3, 3: [0.0] * 3, 4: [0.0] * 3, 5: [1.0] * 3, 7: [1.0] * 3}
    assert enhanced_score("qgqa", statements, "majority") == pytest.approx(0.5)
    # Entailment: the aggregated scale value is the score.
    assert enhanced_score("entailment", {0: [0.75, 0.75, 0.5]}, "majority") == 0.75
    assert enhanced_score("entailment", {0: [0.75, 0.75, 0.5]}, "average") == pytest.approx(2 / 3)


def test_it_has_no_score_without_labels_and_refuses_other_tasks() -> None:
    assert enhanced_score("bertscore", {0: []}, "majority") is None
    with pytest.raises(ValueError, match="no human-enhanced metric"):
        enhanced_score("factuality", {0: [1.0]}, "majority")


def test_it_lays_out_table_5_6_with_the_relative_improvement_of_pearson() -> None:
    human = [0.1, 0.4, 0.35, 0.8, 0.9, 0.2]
    original = [0.5, 0.45, 0.6, 0.55, 0.7, 0.6]
    enhanced = {"majority": [0.0, 0.5, 0.5, 1.0, 1.0, 0.0], "average": [0.1, 0.4, 0.5, 0.7, 1.0, 0.2]}
    rows = enhanced_table("entailment", human, original, enhanced, bootstrap=50)
    assert [row.method for row in rows] == ["entailment_original", "entailment_enhanced_maj", "entailment_enhanced_avg"]
    original_row, majority_row, average_row = rows
    assert original_row.relative_improvement is None
    for row in (majority_row, average_row):
        assert row.relative_improvement == pytest.approx(
            (row.pearson.r - original_row.pearson.r) / abs(original_row.pearson.r)
        )
    assert majority_row.pearson.r > original_row.pearson.r and majority_row.spearman.r is not None
