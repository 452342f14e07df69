from __future__ import annotations

from typing import Any

from corpus.nlp import sentence_spans, word_spans


def test_it_splits_sentences_with_character_offsets(nlp: Any) -> None:
    text = "  Mr. Smith went to Washington. He arrived on 5 May!\nThen he left.  "
    [spans] = sentence_spans(nlp, [text])
    assert [text[s:e] for s, e in spans] == [
        "Mr. Smith went to Washington.",
        "He arrived on 5 May!",
        "Then he left.",
    ]


def test_it_gives_no_sentences_for_empty_text(nlp: Any) -> None:
    assert sentence_spans(nlp, ["", "   "]) == [[], []]


def test_it_marks_stopwords_and_punctuation(nlp: Any) -> None:
    [words] = word_spans(nlp, ["The cat, however, sat."])
    flags = {("The cat, however, sat."[w.start : w.end]): (w.is_stop, w.is_punct) for w in words}
    assert flags["The"] == (True, False)
    assert flags["cat"] == (False, False)
    assert flags[","] == (False, True)
    assert flags["however"][0] is True
