"""Attention checks generated from the document, the researcher's check file, and the warn/block decisions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from protocols.attention import (
    ENTITY_SWAP,
    FUSION,
    GENERATED_KINDS,
    NUMBER_SWAP,
    VERBATIM,
    CheckFileError,
    CheckResult,
    Mention,
    attention_checks,
    attention_decisions,
    check_pass_rates,
    number_value,
    researcher_checks,
)
from protocols.decisions import BLOCK, OK, WARN, Thresholds
from protocols.tasks import FAITHFUL, UNFAITHFUL, CheckOutcome, Submission, get_task

TEXT = (
    "Emma Morano, the oldest person in the world, died in Verbania on Saturday at the age of 117. "
    "She was born in Civiasco in 1899, the eldest of eight children. "
    "Morano lived through two world wars and more than 90 Italian governments. "
    "Her doctor, Carlo Bava, said she ate three eggs a day for most of her life. "
    "The record now passes to Violet Brown of Jamaica, who is 116 years old."
)
SENTENCES = [[m.start(), m.end()] for m in re.finditer(r"[^ .][^.]*\.", TEXT)]
ENTITIES = [
    ("Emma Morano", "PERSON"),
    ("Verbania", "GPE"),
    ("Saturday", "DATE"),
    ("117", "CARDINAL"),
    ("Civiasco", "GPE"),
    ("1899", "DATE"),
    ("eight", "CARDINAL"),
    ("two", "CARDINAL"),
    ("more than 90", "CARDINAL"),
    ("Italian", "NORP"),
    ("Carlo Bava", "PERSON"),
    ("three", "CARDINAL"),
    ("Violet Brown", "PERSON"),
    ("Jamaica", "GPE"),
]
MENTIONS = [Mention(TEXT.index(text), TEXT.index(text) + len(text), label) for text, label in ENTITIES]


def sentences_of_text() -> list[str]:
    return [TEXT[start:end] for start, end in SENTENCES]


def test_it_copies_a_document_sentence_verbatim_as_the_positive_control() -> None:
    checks = attention_checks(text=TEXT, sentences=SENTENCES, mentions=MENTIONS, seed=3, kinds=[VERBATIM], per_kind=5)
    assert len(checks) == 5 == len({check.summary_text for check in checks})
    for check in checks:
        assert check.expected == FAITHFUL and check.span is None
        assert check.summary_text == sentences_of_text()[check.source_sentences[0]]
        assert check.summary_sentences == [[0, len(check.summary_text)]]


def test_it_fuses_two_sentences_into_a_summary_the_document_does_not_say() -> None:
    checks = attention_checks(text=TEXT, sentences=SENTENCES, seed=1, kinds=[FUSION], per_kind=2)
    assert len(checks) == 2
    for check in checks:
        first, second = (sentences_of_text()[index] for index in check.source_sentences)
        assert check.expected == UNFAITHFUL and check.source_sentences[0] != check.source_sentences[1]
        assert check.summary_text not in TEXT
        head = check.summary_text[: check.span[0]].strip()
        tail = check.summary_text[check.span[0] : check.span[1]]
        assert first.startswith(head) and second.endswith(tail) and head and tail
    used = [index for check in checks for index in check.source_sentences]
    assert len(used) == len(set(used))  # each sentence goes into one fusion at most


def test_it_swaps_an_entity_for_another_of_the_same_type_from_elsewhere_in_the_document() -> None:
    for seed in range(10):
        (check,) = attention_checks(text=TEXT, sentences=SENTENCES, mentions=MENTIONS, seed=seed, kinds=[ENTITY_SWAP])
        source = sentences_of_text()[check.source_sentences[0]]
        start, end = check.span
        assert check.summary_text[start:end] == check.inserted
        assert check.summary_text[:start] + check.replaced + check.summary_text[end:] == source
        types = {text: label for text, label in ENTITIES}
        assert types[check.replaced] == types[check.inserted] and types[check.inserted] not in {"CARDINAL"}
        assert check.inserted not in source and check.summary_text not in TEXT
        assert check.expected == UNFAITHFUL


def test_it_swaps_a_number_only_for_one_of_a_different_value() -> None:
    text = "The firm paid $5 million in 2019. A rival paid 5 million dollars. It later paid $7 million again."
    sentences = [[m.start(), m.end()] for m in re.finditer(r"[^ .][^.]*\.", text)]
    money = ["$5 million", "5 million dollars", "$7 million"]
    mentions = [Mention(text.index(m), text.index(m) + len(m), "MONEY") for m in money]
    seen = set()
    for seed in range(20):
        for check in attention_checks(
            text=text, sentences=sentences, mentions=mentions, seed=seed, kinds=[NUMBER_SWAP], per_kind=3
        ):
            assert number_value(check.replaced) != number_value(check.inserted)
            seen.add((check.replaced, check.inserted))
    # $5 million and 5 million dollars have the same value: never swapped for each other
    assert ("$5 million", "5 million dollars") not in seen and ("5 million dollars", "$5 million") not in seen
    assert ("$5 million", "$7 million") in seen and ("$7 million", "5 million dollars") in seen


def test_it_never_swaps_an_entity_for_another_name_of_the_same_thing() -> None:
    text = "Barack Obama spoke in Ohio on Monday. Later that day Obama flew to Texas with his staff. Joe Biden stayed."
    sentences = [[m.start(), m.end()] for m in re.finditer(r"[^ .][^.]*\.", text)]
    mentions = [Mention(at, at + len(name), "PERSON") for name, at in [("Barack Obama", 0), ("Obama", 53)]]
    assert [text[m.start : m.end] for m in mentions] == ["Barack Obama", "Obama"]
    assert attention_checks(text=text, sentences=sentences, mentions=mentions, kinds=[ENTITY_SWAP]) == []
    mentions.append(Mention(text.index("Joe Biden"), text.index("Joe Biden") + 9, "PERSON"))
    swaps = {
        (check.replaced, check.inserted)
        for seed in range(10)
        for check in attention_checks(
            text=text, sentences=sentences, mentions=mentions, seed=seed, kinds=[ENTITY_SWAP], per_kind=2
        )
    }
    assert swaps == {("Barack Obama", "Joe Biden"), ("Obama", "Joe Biden")}


def test_it_reads_the_value_of_number_entities() -> None:
    assert number_value("$3.5 million") == (3_500_000.0,)
    assert number_value("twenty-five") == (25.0,)
    assert number_value("one hundred and five") == (105.0,)
    assert number_value("between 5 and 7") == (5.0, 7.0)
    assert number_value("2,000 people") == (2000.0,)
    assert number_value("a few") is None


def test_it_gives_the_same_checks_for_the_same_seed_and_others_for_another() -> None:
    def made(seed: int) -> list[dict]:
        return [
            check.as_dict()
            for check in attention_checks(text=TEXT, sentences=SENTENCES, mentions=MENTIONS, seed=seed, per_kind=3)
        ]

    assert made(7) == made(7)
    assert {check["kind"] for check in made(7)} == set(GENERATED_KINDS)
    assert any(made(seed) != made(7) for seed in range(3))


def test_it_makes_no_check_from_sentences_too_short_repeated_or_outside_the_text() -> None:
    text = "Yes. Yes. Short one here. The committee met in the capital on a rainy Tuesday morning."
    sentences = [[0, 4], [5, 9], [10, 25], [26, len(text)], [80, 400], [3]]
    checks = attention_checks(text=text, sentences=sentences, kinds=[VERBATIM, FUSION], per_kind=5)
    assert [(check.kind, check.source_sentences) for check in checks] == [(VERBATIM, (3,))]
    with pytest.raises(ValueError, match="unknown check kind"):
        attention_checks(text=text, sentences=sentences, kinds=["typo"])


# --- the researcher's own checks ------------------------------------------------------------------------


def test_it_reads_the_researchers_checks_from_json_lines() -> None:
    lines = [
        {"document": "doc-1", "summary": "Morano died at 117.", "expected": "faithful"},
        {"document": 42, "summary": "Morano died at 118.", "expected": "unfaithful", "span": [15, 18]},
    ]
    content = "\n".join(json.dumps(line) for line in lines[:1]) + "\n\n" + json.dumps(lines[1]) + "\n"
    first, second = researcher_checks(content.encode("utf-8"))
    assert (first.line, first.document, first.expected, first.span) == (1, "doc-1", FAITHFUL, None)
    assert (second.line, second.document, second.span) == (3, "42", (15, 18))
    assert second.target.summary_text[15:18] == "118"


def test_it_names_the_line_and_field_of_every_problem_in_a_check_file() -> None:
    content = "\n".join(
        [
            '{"document": "d", "summary": "ok", "expected": "faithful"}',
            "not json",
            '["a list"]',
            '{"document": "", "summary": "x", "expected": "yes", "lable": 1}',
            '{"document": "d", "summary": "short", "expected": "unfaithful", "span": [3, 9]}',
            '{"document": "d", "summary": "a b", "expected": "unfaithful", "span": [1, 2]}',
            '{"document": "d", "summary": "abc", "expected": "faithful", "span": [0, 1]}',
            '{"document": "d", "summary": "a\\u0000b", "expected": "faithful"}',
            '{"document": "d", "summary": "\\ud800", "expected": "faithful"}',
            '{"document": "d", "summary": "abc", "expected": "unfaithful", "span": [true, 2]}',
        ]
    )
    with pytest.raises(CheckFileError) as caught:
        researcher_checks(content)
    messages = caught.value.messages
    assert messages[0].startswith("line 2: not a JSON object")
    assert messages[1] == "line 3: not a JSON object"
    assert any(m.startswith("line 4, field 'lable': unknown field") for m in messages)
    assert any(m.startswith("line 4, field 'document'") for m in messages)
    assert any(m.startswith("line 4, field 'expected': 'yes' is not one of faithful, unfaithful") for m in messages)
    assert "line 5, field 'span': 3-9 is not inside the summary (0-5)" in messages
    assert "line 6, field 'span': 1-2 marks only white space" in messages
    assert any(m.startswith("line 7, field 'span': a faithful check has nothing to mark") for m in messages)
    assert any(m.startswith("line 8, field 'summary'") for m in messages)
    assert any(m.startswith("line 9, field 'summary'") for m in messages)
    assert any(m.startswith("line 10, field 'span': [start, end]") for m in messages)
    assert not any(m.startswith(("line 1:", "line 1,")) for m in messages)


def test_it_refuses_an_empty_or_undecodable_check_file() -> None:
    with pytest.raises(CheckFileError, match="no checks"):
        researcher_checks("\n  \n")
    with pytest.raises(CheckFileError, match="not UTF-8"):
        researcher_checks(b'{"document": "\xff"}')


# --- decisions ------------------------------------------------------------------------------------------


def test_it_warns_after_one_failed_check_and_blocks_after_two_by_default() -> None:
    fail, ok, unknown = CheckOutcome(False, "judged faithful"), CheckOutcome(True, "ok"), CheckOutcome(None, "n/a")
    results = [
        CheckResult("careful", 1, ok),
        CheckResult("careful", 2, unknown),
        CheckResult("sloppy", 1, fail),
        CheckResult("sloppy", 2, ok),
        CheckResult("spammer", 1, fail),
        CheckResult("spammer", 1, fail),  # the same item twice counts once
        CheckResult("spammer", 3, fail),
    ]
    decisions = {decision.worker: decision for decision in attention_decisions(results)}
    assert decisions["careful"].action == OK and decisions["careful"].reasons == ()
    assert decisions["sloppy"].action == WARN and decisions["sloppy"].reasons == ("warn: 1 failed attention check(s)",)
    assert decisions["spammer"].action == BLOCK and decisions["spammer"].reasons == (
        "block: 2 failed attention check(s)",
    )
    assert [flag.reason for flag in decisions["sloppy"].flags] == ["judged faithful"]
    assert attention_decisions(results, Thresholds(warn_at=None, block_at=None))[2].action == OK
    assert check_pass_rates(results) == {"careful": (1, 1), "sloppy": (1, 2), "spammer": (0, 3)}


def test_it_refuses_thresholds_that_make_no_sense() -> None:
    for bad in ({"warn_at": 0}, {"warn_at": 3, "block_at": 2}, {"block_at": True}, {"warn_at": 1.5}):
        with pytest.raises(ValueError):
            Thresholds(**bad)


# --- with the real spaCy pipeline -------------------------------------------------------------------------


def test_it_makes_checks_from_spacy_sentences_and_entities_that_the_tasks_grade(nlp: Any) -> None:
    """The way a worker or command feeds it: the stored sentence offsets and spaCy's entities as mentions."""
    from corpus.nlp import phrases, sentence_spans

    text = (
        "Apple opened a new office in Berlin on Monday, hiring 300 engineers. "
        "The company said the site would cost 45 million euros over five years. "
        "Microsoft announced a similar plan for Paris last spring with 120 staff. "
        "Analysts in London expect both firms to grow their teams again next year."
    )
    (sentences,) = sentence_spans(nlp, [text])
    (found,) = phrases(nlp, [text], noun_chunks=False)
    mentions = [Mention(phrase.start, phrase.end, phrase.type) for phrase in found]
    checks = attention_checks(text=text, sentences=sentences, mentions=mentions, seed=5)
    kinds = {check.kind: check for check in checks}
    assert set(kinds) == set(GENERATED_KINDS)
    for kind in (ENTITY_SWAP, NUMBER_SWAP):
        check = kinds[kind]
        assert check.summary_text not in text and check.replaced in text and check.inserted in text
    assert number_value(kinds[NUMBER_SWAP].replaced) != number_value(kinds[NUMBER_SWAP].inserted)
    task = get_task("hallucination_spans")
    swap = kinds[ENTITY_SWAP]
    marked = [{"start": swap.span[0], "end": swap.span[1], "label": "intrinsic"}]
    judgements = task.clean(Submission(spans=marked), units=[], summary_text=swap.summary_text)
    assert task.check_outcome(swap.target, judgements=judgements).passed is True
    assert task.check_outcome(kinds[VERBATIM].target, judgements=judgements).passed is False
