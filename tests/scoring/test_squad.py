"""SQuAD v2 answer comparison (QAGS's answer similarity)."""

from __future__ import annotations

import pytest

from scoring.explainers.squad import exact_match, normalize_answer, token_f1


def test_it_normalises_like_the_squad_script() -> None:
    assert normalize_answer("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"
    assert normalize_answer("  ") == ""


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Barack Obama", "Obama", 2 * 0.5 * 1.0 / 1.5),
        ("the cat", "a cat", 1.0),
        ("Emma Morano", "Italy", 0.0),
        ("", "", 1.0),  # both unanswerable: they agree
        ("", "Italy", 0.0),  # one unanswerable: they do not
        ("the", "a", 1.0),  # both empty after normalisation
        ("red red blue", "red blue blue", 2 / 3),
    ],
)
def test_it_computes_token_f1(a: str, b: str, expected: float) -> None:
    assert token_f1(a, b) == pytest.approx(expected)
    assert token_f1(b, a) == pytest.approx(expected)


def test_it_matches_exactly_after_normalisation() -> None:
    assert exact_match("The Queen.", "queen") == 1.0
    assert exact_match("Queen Elizabeth", "queen") == 0.0
