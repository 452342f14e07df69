"""Property-based: any document, sentence offsets and mentions give checks that keep their promises, and any
check file either parses or is refused with CheckFileError. Bounded and derandomized."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.attention import (
    NUMBER_SWAP,
    CheckFileError,
    Mention,
    attention_checks,
    number_value,
    researcher_checks,
)
from protocols.tasks import FAITHFUL, UNFAITHFUL

WORDS = st.sampled_from(["Paris", "London", "the", "bank", "3", "five", "$2 million", "said", "on", "Monday", ","])
SENTENCE = st.lists(WORDS, min_size=1, max_size=14).map(lambda words: " ".join(words) + ".")
TYPES = st.sampled_from(["GPE", "DATE", "CARDINAL", "MONEY", "PERSON", ""])


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list, list[Mention]]:
    sentences = draw(st.lists(SENTENCE, min_size=0, max_size=6))
    text = " ".join(sentences)
    offsets: list = []
    position = 0
    for sentence in sentences:
        offsets.append([position, position + len(sentence)])
        position += len(sentence) + 1
    # hostile offsets: out of range, reversed, not numbers, wrong length
    offsets += draw(st.lists(st.one_of(st.lists(st.integers(-5, 400), max_size=3), st.just(["a", 1])), max_size=2))
    mentions = [
        Mention(start, end, draw(TYPES))
        for start, end in draw(st.lists(st.tuples(st.integers(-2, len(text) + 2), st.integers(-2, len(text) + 2))))
    ]
    return text, offsets, mentions


@settings(max_examples=150, deadline=None, derandomize=True)
@given(documents(), st.integers(0, 3))
def test_it_only_makes_checks_that_keep_their_promises(document: tuple, seed: int) -> None:
    text, offsets, mentions = document
    checks = attention_checks(text=text, sentences=offsets, mentions=mentions, seed=seed, per_kind=2)
    assert checks == attention_checks(text=text, sentences=offsets, mentions=mentions, seed=seed, per_kind=2)
    folded = " ".join(text.casefold().split())
    for check in checks:
        assert check.expected in (FAITHFUL, UNFAITHFUL)
        if check.expected == FAITHFUL:
            assert check.span is None and check.summary_text in text
            continue
        start, end = check.span
        assert 0 <= start < end <= len(check.summary_text)
        assert " ".join(check.summary_text.casefold().split()) not in folded
        if check.kind == NUMBER_SWAP:
            assert number_value(check.replaced) != number_value(check.inserted)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            st.fixed_dictionaries(
                {},
                optional={
                    "document": st.one_of(st.text(max_size=5), st.integers(), st.none(), st.booleans()),
                    "summary": st.one_of(st.text(max_size=20), st.integers(), st.lists(st.text(max_size=2))),
                    "expected": st.sampled_from(["faithful", "unfaithful", "yes", 1]),
                    "span": st.one_of(st.lists(st.integers(-3, 25), max_size=3), st.text(max_size=3), st.none()),
                    "extra": st.integers(),
                },
            ).map(json.dumps),
        ),
        max_size=5,
    )
)
def test_it_parses_or_refuses_any_check_file_naming_lines(lines: list[str]) -> None:
    try:
        checks = researcher_checks("\n".join(lines))
    except CheckFileError as refused:
        assert refused.messages and all(m.startswith(("line ", "the file")) for m in refused.messages)
        return
    for check in checks:
        assert check.expected in (FAITHFUL, UNFAITHFUL) and check.summary_text.strip() and check.document.strip()
        if check.span is not None:
            assert check.expected == UNFAITHFUL and 0 <= check.span[0] < check.span[1] <= len(check.summary_text)
