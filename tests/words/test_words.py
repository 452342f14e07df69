"""One word tokenisation (words) for span selection, the minimal-edit check and the span analysis."""

from __future__ import annotations

from protocols.minimal_edit import edit_diff
from protocols.tasks import word_spans
from stats.spans import word_offsets
from words import is_punctuation, word_tokens

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


def test_it_labels_for_span_analysis_the_same_words_without_punctuation_marks() -> None:
    tokens = word_tokens(TEXT)
    assert word_offsets(TEXT) == [(start, end) for word, start, end in tokens if not is_punctuation(word)]
    assert [TEXT[start:end] for start, end in word_offsets(TEXT)][:5] == ["The", "firm", "s", "105", "million"]
    assert [word for word, _, _ in tokens if is_punctuation(word)] == ["'", "$", ",", ",", "."]
    # Every word the analysis labels is a word of the tasks: a span snapped to task words covers whole ones.
    assert set(word_offsets(TEXT)) <= {(start, end) for start, end in map(tuple, word_spans(TEXT))}
    assert not is_punctuation("_id") and not is_punctuation("٣") and is_punctuation("—")
