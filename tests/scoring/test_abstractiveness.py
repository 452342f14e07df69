"""Abstractiveness (FEQA section 2.1): extraction types and novel n-grams."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.explainers.abstractiveness import AbstractivenessExplainer, Piece, classify
from tests.scoring.inputs import explainer_inputs

SOURCES = [
    sentence.split()
    for sentence in (
        "capybara joejoe lives in las vegas",
        "he has almost 60,000 followers on instagram",
        "the plane was coming back from the ncaa final according to spokesman john twork",
    )
]


@pytest.mark.parametrize(
    ("summary", "expected_type", "k"),
    [
        ("capybara joejoe lives in las vegas", "sentence_extraction", 1),
        ("the plane was coming back from the ncaa final", "span_extraction", 1),
        ("the plane was coming from the final", "word_extraction", 1),
        ("capybara joejoe lives in las vegas he has almost 60,000 followers", "perfect_fusion", 2),
        ("he has almost 60,000 followers in las vegas", "none", None),  # pieces out of source order
        ("a completely new sentence", "none", None),
    ],
)
def test_it_labels_each_summary_sentence_with_the_first_type_that_fits(
    summary: str, expected_type: str, k: int | None
) -> None:
    extraction = classify(summary.split(), SOURCES)
    assert extraction.type == expected_type
    assert extraction.k == k


def test_it_finds_the_fewest_pieces_of_a_fusion() -> None:
    sources = [["a", "b", "c"], ["c", "d"], ["d", "e", "f"]]
    extraction = classify(["a", "b", "c", "d", "e", "f"], sources)
    assert extraction.type == "perfect_fusion"
    # a b c | d e f (two pieces) beats a b | c d | e f (three).
    assert extraction.pieces == (Piece(0, 0, 3), Piece(2, 0, 3))


DOCUMENT = (
    "Capybara Joejoe lives in Las Vegas. He has almost 60,000 followers on Instagram. "
    "The plane was coming back from the NCAA final, according to spokesman John Twork."
)


def explain(nlp: Any, summary: str) -> Any:
    [[result]] = AbstractivenessExplainer(nlp).explain_batch(*explainer_inputs(nlp, DOCUMENT, [summary]))
    return result


def test_it_stores_types_source_offsets_and_novel_words(nlp: Any) -> None:
    summary = "The plane was coming back from the NCAA final. Joejoe owns a yacht."
    result = explain(nlp, summary)
    first, second = result.payload["sentences"]
    assert first["type"] == "span_extraction"
    [piece] = first["source"]
    assert DOCUMENT[piece["start"] : piece["end"]] == "The plane was coming back from the NCAA final"
    assert first["novel"] == {"1": 0.0, "2": 0.0, "3": 0.0}
    assert second["type"] == "none"
    assert [summary[s:e] for s, e in second["novel_words"]] == ["owns", "a", "yacht"]
    # Words: the, plane, was, coming, back, from, the, ncaa, final | joejoe, owns, a, yacht.
    assert result.scores["novel_1"] == pytest.approx(3 / 13)
    assert result.scores["novel_3"] == pytest.approx(2 / (7 + 2))  # "joejoe owns a", "owns a yacht"
    assert result.score == result.scores["novel_3"]
    assert result.payload["types"] == {"span_extraction": 1, "none": 1}


def test_it_leaves_the_score_undefined_without_trigrams(nlp: Any) -> None:
    result = explain(nlp, "Las Vegas.")
    assert result.score is None and "fewer than three words" in result.error
    assert result.scores["novel_1"] == 0.0
    assert explain(nlp, "   ").error == "the summary is empty"
