"""One word tokenisation (protocols.words) for span selection and the minimal-edit check."""

from __future__ import annotations

from protocols.minimal_edit import edit_diff
from protocols.tasks import word_spans
from protocols.words import word_tokens

TEXT = "The firm's $105 million deal, signed in Zürich, fell through."


def test_it_splits_words_and_single_punctuation_marks() -> None:
    assert [word for word, _, _ in word_tokens(TEXT)][:7] == ["The", "firm", "'", "s", "$", "105", "million"]
    assert all(TEXT[start:end] == word for word, start, end in word_tokens(TEXT))
    assert "Zürich" in [word for word, _, _ in word_tokens(TEXT)]


def test_it_snaps_spans_to_the_words_the_minimal_edit_check_counts() -> None:
    assert word_spans(TEXT) == [[start, end] for _, start, end in word_tokens(TEXT)]
    # A changed punctuation mark is one changed word for the check, as it is one unit for span selection.
    diff = edit_diff(TEXT, TEXT.replace("deal,", "deal;"))
    assert diff.changed_words == 1
    assert [(c.old, c.new) for c in diff.changes] == [(",", ";")]
