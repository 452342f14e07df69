"""The word-level view of BERTScore's token alignments (protocols.alignment): whole source words per
summary word, each piece's similarity, the word's score (its lowest piece), and clear degradation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from protocols.alignment import NO_DOCUMENT, NO_WORDS, SourceWord, alignment_state, word_alignment
from protocols.tasks import bertscore_units, get_task

DOCUMENT = "Measles spread fast. Doctors said measles, not flu, hit the firm's staff."


def at(text: str, word: str, occurrence: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(word, start + 1)
    return start, start + len(word)


def token(
    summary: str, piece: str, aligned: tuple[int, int] | None, similarity: Any, word: int | None, after: int = 0
) -> dict[str, Any]:
    start = summary.index(piece, after)
    return {
        "start": start,
        "end": start + len(piece),
        "text": piece,
        "similarity": similarity,
        "aligned": None if aligned is None else list(aligned),
        "aligned_text": "" if aligned is None else DOCUMENT[aligned[0] : aligned[1]],
        "weight": 1.0,
        "word": word,
    }


def payload_for(summary: str, words: list[tuple[str, bool, bool, list[int]]], tokens: list[dict[str, Any]]) -> dict:
    stored, position = [], 0
    for text, stopword, punct, members in words:
        start = summary.index(text, position)
        position = start + len(text)
        similarities = [tokens[t]["similarity"] for t in members]
        stored.append(
            {
                "start": start,
                "end": position,
                "text": text,
                "stopword": stopword,
                "punct": punct,
                "tokens": members,
                "similarity": min(similarities) if similarities else None,
            }
        )
    return {
        "tokens": tokens,
        "words": stored,
        "source_token_count": 20,
        "truncated": {"summary": False, "source": False},
    }


SUMMARY = "The measles rose."


def measles_payload(first: tuple[int, int], second: tuple[int, int], third: tuple[int, int]) -> dict[str, Any]:
    tokens = [
        token(SUMMARY, "The", at(DOCUMENT, "the"), 0.97, 0),
        token(SUMMARY, "me", first, 0.88, 1),
        token(SUMMARY, "as", second, 0.93, 1, after=5),
        token(SUMMARY, "les", third, 0.92, 1),
        token(SUMMARY, "rose", at(DOCUMENT, "spread"), 0.61, 2),
        token(SUMMARY, ".", at(DOCUMENT, "."), 0.99, 3),
    ]
    words = [
        ("The", True, False, [0]),
        ("measles", False, False, [1, 2, 3]),
        ("rose", False, False, [4]),
        (".", False, True, [5]),
    ]
    return payload_for(SUMMARY, words, tokens)


def test_it_lights_the_whole_source_word_when_every_piece_lies_inside_it() -> None:
    start, end = at(DOCUMENT, "measles")  # the second, lower-case occurrence
    payload = measles_payload((start, start + 2), (start + 2, start + 4), (start + 4, end))
    alignment = word_alignment(payload, summary_text=SUMMARY, document_text=DOCUMENT)
    measles = alignment.words[1]
    assert alignment.notes == ()
    assert measles.sources == (SourceWord(start, end, "measles"),)
    assert [piece.source for piece in measles.pieces] == [SourceWord(start, end, "measles")] * 3
    assert [(piece.text, piece.similarity) for piece in measles.pieces] == [("me", 0.88), ("as", 0.93), ("les", 0.92)]
    assert measles.score == 0.88  # the lowest piece, as the stored words[].similarity
    assert measles.score == payload["words"][1]["similarity"]
    assert measles.source_text == "measles"
    assert [word.text for word in alignment.important] == ["measles", "rose"]


def test_it_names_both_occurrences_when_pieces_align_into_two_of_them() -> None:
    # The case the issue saw: "me" lit inside one occurrence, "asles" inside another.
    first_start, first_end = at(DOCUMENT, "Measles")
    second_start, second_end = at(DOCUMENT, "measles")
    payload = measles_payload(
        (first_start, first_start + 2), (second_start + 2, second_end), (second_start + 2, second_end)
    )
    measles = word_alignment(payload, document_text=DOCUMENT).words[1]
    assert measles.sources == (
        SourceWord(first_start, first_end, "Measles"),
        SourceWord(second_start, second_end, "measles"),
    )
    assert measles.pieces[1].source == measles.pieces[2].source  # one source word, listed once
    assert measles.source_text == "Measles, measles"
    state = alignment_state(measles)
    assert state["sources"] == [[first_start, first_end, "Measles"], [second_start, second_end, "measles"]]
    assert [piece["similarity"] for piece in state["pieces"]] == [0.88, 0.93, 0.92]


def test_it_keeps_punctuation_a_word_of_its_own_and_joins_a_token_that_spans_two_words() -> None:
    comma = at(DOCUMENT, ",")
    apostrophe_s = at(DOCUMENT, "'s")  # RoBERTa's "'s": the word tokenizer's "'" and "s"
    summary = "The firm's, staff"
    tokens = [
        token(summary, "The", at(DOCUMENT, "the"), 0.9, 0),
        token(summary, "firm", at(DOCUMENT, "firm"), 0.95, 1),
        token(summary, "'s", apostrophe_s, 0.9, 2),
        token(summary, ",", comma, 0.8, 3),
        token(summary, "staff", (apostrophe_s[0] + 1, apostrophe_s[1] + 3), 0.7, 4),  # "s st", across a space
    ]
    words = [
        ("The", True, False, [0]),
        ("firm", False, False, [1]),
        ("'s", False, False, [2]),
        (",", False, True, [3]),
        ("staff", False, False, [4]),
    ]
    alignment = word_alignment(payload_for(summary, words, tokens), document_text=DOCUMENT)
    assert alignment.words[2].sources == (SourceWord(*apostrophe_s, "'s"),)
    assert alignment.words[3].sources == (SourceWord(*comma, ","),)
    assert not alignment.words[3].important
    # A token reaching into the next word lights both whole words.
    staff_start, staff_end = at(DOCUMENT, "staff")
    assert alignment.words[4].sources == (SourceWord(apostrophe_s[1] - 1, staff_end, "s staff"),)
    assert staff_start > apostrophe_s[1]


def test_it_says_a_special_token_and_leaves_bad_similarities_out_of_the_score() -> None:
    summary = "Measles rose"
    tokens = [
        token(summary, "Measles", None, 0.5, 0),  # aligned to [CLS] (special_tokens = "package")
        token(summary, "rose", at(DOCUMENT, "spread"), math.nan, 1),
    ]
    alignment = word_alignment(
        payload_for(summary, [("Measles", False, False, [0]), ("rose", False, False, [1])], tokens),
        document_text=DOCUMENT,
    )
    measles, rose = alignment.words
    assert measles.sources == () and measles.source_text == "a special token"
    assert measles.pieces[0].source is None and measles.pieces[0].aligned is None
    assert measles.score == 0.5
    assert rose.pieces[0].similarity is None and rose.score is None
    assert rose.sources == (SourceWord(*at(DOCUMENT, "spread"), "spread"),)


def test_it_derives_nothing_from_an_empty_payload_and_says_what_is_missing() -> None:
    empty = word_alignment({}, summary_text="", document_text=DOCUMENT)
    assert empty.words == () and empty.notes == (NO_WORDS,)
    assert word_alignment({"tokens": [], "words": []}, document_text=DOCUMENT).words == ()
    assert word_alignment({"tokens": [], "words": []}).notes == (NO_DOCUMENT,)
    assert bertscore_units({}) == []


def test_it_falls_back_to_the_word_tokenizer_and_to_aligned_tokens_when_fields_or_the_document_are_missing() -> None:
    start, end = at(DOCUMENT, "measles")
    payload = measles_payload((start, start + 2), (start + 2, start + 4), (start + 4, end))
    without_words = {"tokens": payload["tokens"]}
    alignment = word_alignment(without_words, summary_text=SUMMARY, document_text=DOCUMENT)
    assert alignment.notes == (NO_WORDS,)
    assert [word.text for word in alignment.words] == ["The", "measles", "rose", "."]
    assert [word.punct for word in alignment.words] == [False, False, False, True]
    assert alignment.words[1].sources == (SourceWord(start, end, "measles"),)
    # Without the document a piece's source is its aligned token; the unit indexes stay the same.
    bare = word_alignment(payload)
    assert bare.notes == (NO_DOCUMENT,)
    assert [source.text for source in bare.words[1].sources] == ["me", "as", "les"]
    assert (
        [u.index for u in bertscore_units(payload)] == [u.index for u in bertscore_units(payload, DOCUMENT)] == [1, 2]
    )
    # Token indexes out of range and tokens without offsets are left out, not an error.
    tokens = payload["tokens"]
    broken = {
        "tokens": [tokens[0], {"text": "x"}, *tokens[2:]],
        "words": [{**payload["words"][1], "tokens": [1, 2, 99, -1]}],
    }
    assert [piece.text for piece in word_alignment(broken).words[0].pieces] == ["as"]
    damaged = {**payload, "words": [{"text": "The"}, "x", *payload["words"][1:]]}
    assert [word.index for word in word_alignment(damaged).words] == [2, 3, 4]
    assert [u.index for u in bertscore_units(damaged)] == [2, 3]


def test_it_gives_the_task_view_whole_source_words_per_unit() -> None:
    first_start = at(DOCUMENT, "Measles")[0]
    second_start, second_end = at(DOCUMENT, "measles")
    payload = measles_payload(
        (first_start, first_start + 2), (second_start + 2, second_end), (second_start + 2, second_end)
    )
    units = get_task("bertscore").units(summary_text=SUMMARY, payload=payload, document_text=DOCUMENT)
    measles = units[0]
    assert measles.index == 1 and measles.text == "measles"
    assert measles.extra["aligned"] == [[first_start, first_start + 7], [second_start, second_end]]
    assert measles.extra["aligned_text"] == "Measles, measles"
    assert measles.extra["similarity"] == pytest.approx(0.88)
    state = get_task("bertscore").unit_state(measles)
    assert [piece["text"] for piece in state["alignment"]["pieces"]] == ["me", "as", "les"]
