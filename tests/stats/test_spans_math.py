"""Span markings as word and summary labels, and BERTScore as a highlighter (no database)."""

from __future__ import annotations

import pytest

from stats.spans import (
    THRESHOLDS,
    HighlightSummary,
    highlighter_scores,
    majority_characters,
    summary_labels,
    word_labels,
)

TEXT = "Albert Einstein was born in England"


def test_it_takes_the_thesis_example_majority_per_character() -> None:
    england = (TEXT.index("England"), len(TEXT))
    in_england = (TEXT.index("in England"), len(TEXT))
    truth = majority_characters(TEXT, [[england], [england], [in_england]])
    assert "".join(c for c, flag in zip(TEXT, truth, strict=True) if flag) == "England"


def test_it_labels_words_and_summaries_per_annotator() -> None:
    markings = {"s1": (TEXT, {"ann": [(TEXT.index("England"), len(TEXT))], "bob": []})}
    words = word_labels(markings)
    assert len(words) == 6
    assert words[("s1", 5)] == {"ann": "hallucinated", "bob": "faithful"}
    assert words[("s1", 0)] == {"ann": "faithful", "bob": "faithful"}
    assert summary_labels(markings) == {"s1": {"ann": "any span", "bob": "no span"}}


def test_it_scores_flagged_tokens_per_character_over_thresholds() -> None:
    england = (TEXT.index("England"), len(TEXT))
    tokens = [
        (0, 6, 0.97),
        (7, 15, 0.95),
        (16, 19, 0.99),
        (20, 24, 0.85),
        (25, 27, 0.99),
        (england[0], england[1], 0.83),
    ]
    summary = HighlightSummary(TEXT, tokens, [[england], [england], []])
    scores = {row.threshold: row for row in highlighter_scores([summary])}
    assert list(scores) == list(THRESHOLDS) and THRESHOLDS[0] == 0.8 and THRESHOLDS[-1] == 0.99
    low = scores[0.8]  # nothing flagged
    assert (low.true_positives, low.false_positives, low.precision, low.recall) == (0, 0, None, 0.0)
    hit = scores[0.84]  # only "England": all 7 hallucinated characters, nothing else
    assert (hit.precision, hit.recall, hit.f1) == (1.0, 1.0, 1.0)
    assert hit.accuracy == 1.0 and hit.true_negatives == len(TEXT.replace(" ", "")) - 7
    wide = scores[0.86]  # "born" (4 characters) joins: precision 7/11
    assert wide.precision == pytest.approx(7 / 11) and wide.recall == 1.0
