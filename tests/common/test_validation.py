"""common.validation, without a database: what it accepts, what it refuses, and which field it names."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from common.validation import (
    INT32_MAX,
    MAX_ID,
    InputError,
    bounded_int,
    finite_number,
    json_check,
    json_parse,
    page_size,
    printable,
    storable_text,
    text_problem,
)


@pytest.mark.parametrize(
    ("raw", "expected"), [(0, 0.0), (12, 12.0), (2.5, 2.5), ("2.5", 2.5), (" 7 ", 7.0), ("1e3", 1000.0), ("-.5", -0.5)]
)
def test_it_reads_finite_numbers(raw: Any, expected: float) -> None:
    assert finite_number(raw, field="seconds") == expected


@pytest.mark.parametrize(
    "raw",
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "1e999",
        "-1e999",
        float("nan"),
        float("inf"),
        float("-inf"),
        json.loads("1e999"),
        10**400,
        "1" * 400,
        "1_000",
        "\u0661",  # ARABIC-INDIC DIGIT ONE: float() reads it, clients do not send it
        "",
        "twelve",
        None,
        True,
        [1],
        {"seconds": 1},
    ],
)
def test_it_refuses_what_is_not_a_finite_number_and_names_the_field(raw: Any) -> None:
    with pytest.raises(InputError) as raised:
        finite_number(raw, field="seconds")
    assert raised.value.field == "seconds"
    assert str(raised.value).startswith("seconds ")


def test_it_refuses_numbers_outside_the_range() -> None:
    assert finite_number(3600, field="seconds", minimum=0, maximum=3600) == 3600
    for raw in (-1, 3601, 1e300, "1e300"):
        with pytest.raises(InputError, match=r"seconds must be at (least|most)"):
            finite_number(raw, field="seconds", minimum=0, maximum=3600)


@pytest.mark.parametrize(("raw", "expected"), [(5, 5), ("5", 5), (" 42 ", 42), ("-3", -3), (INT32_MAX, INT32_MAX)])
def test_it_reads_whole_numbers(raw: Any, expected: int) -> None:
    assert bounded_int(raw, field="k", minimum=-10, maximum=INT32_MAX) == expected


@pytest.mark.parametrize("raw", ["abc", "1.5", "1e3", "²", "\u0663", "", "9" * 5000, 2.0, True, None, "nan", 11, -11])
def test_it_refuses_what_is_not_a_whole_number_in_range(raw: Any) -> None:
    with pytest.raises(InputError) as raised:
        bounded_int(raw, field="remove", minimum=-10, maximum=10)
    assert raised.value.field == "remove"
    assert "remove" in str(raised.value)


def test_it_gives_the_default_page_size_for_a_malformed_one_and_caps_a_large_one() -> None:
    assert page_size("20", default=50, maximum=500) == 20
    assert page_size("100000", default=50, maximum=500) == 500
    assert page_size(str(10**30), default=50, maximum=500) == 500
    for raw in (None, "", "lots", "0", "-5", "nan", "1e999", "2.5"):
        assert page_size(raw, default=50, maximum=500) == 50


@pytest.mark.parametrize(
    ("value", "what", "position"),
    [("a\x00b", "NUL", 1), ("\ud800", "lone surrogate", 0), ("ok \udfff", "lone surrogate", 3), ("\x00", "NUL", 0)],
)
def test_it_refuses_nul_and_lone_surrogates_in_text(value: str, what: str, position: int) -> None:
    problem = text_problem(value)
    assert problem is not None and what in problem and f"position {position}" in problem
    with pytest.raises(InputError) as raised:
        storable_text(value, field="comment")
    assert raised.value.field == "comment" and str(raised.value).startswith("comment contains")
    # The message can be encoded and shown anywhere: the character itself is escaped.
    str(raised.value).encode("utf-8")
    assert "\x00" not in str(raised.value)


def test_it_accepts_other_unusual_text() -> None:
    for value in ("", "plain", "😀 emoji", "\u202eright-to-left", "tab\tand\nnewline", "\ufeffbom", "=1+2", "\x01"):
        assert text_problem(value) is None
        assert storable_text(value, field="comment") == value


def test_it_refuses_text_that_is_too_long_or_not_text() -> None:
    assert storable_text("x" * 10, field="comment", max_chars=10) == "x" * 10
    with pytest.raises(InputError, match="comment has 11 characters; at most 10"):
        storable_text("x" * 11, field="comment", max_chars=10)
    with pytest.raises(InputError, match="comment must be text"):
        storable_text(5, field="comment")


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"notes": {"3": "fine", "4": "bad\x00"}}, "notes.4"),
        ({"draft": {"task": {"edit": {"text": "\ud800"}}}}, "draft.task.edit.text"),
        ({"spans": [{"label": "x"}, {"label": "y\udc00"}]}, "spans.1.label"),
        ({"seconds": float("inf")}, "seconds"),
        ({"scores": [1.0, float("nan")]}, "scores.1"),
        ({"meta": {"ke\x00y": 1}}, "meta.ke\\u0000y"),
    ],
)
def test_it_finds_the_first_bad_value_anywhere_in_json_and_names_its_path(value: Any, path: str) -> None:
    with pytest.raises(InputError) as raised:
        json_check(value)
    assert raised.value.field == path
    assert str(raised.value).startswith(path) or path in str(raised.value)


def test_it_walks_json_of_any_depth_without_recursion() -> None:
    deep: Any = "bad\x00"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InputError) as raised:
        json_check({"draft": deep})
    assert raised.value.field.startswith("draft.0.0.0")
    json_check({"fine": [[[[1, 2.5, "ok", None, True]]]]})


def test_it_parses_json_bodies_strictly() -> None:
    assert json_parse(b'{"seconds": 12.5, "comment": "ok"}') == {"seconds": 12.5, "comment": "ok"}
    cases = {
        b'{"seconds": 1e999}': "seconds",
        b'{"seconds": NaN}': "seconds",
        b'{"scores": [1, -Infinity]}': "scores.1",
        b'{"comment": "a\\u0000b"}': "comment",
        b'{"comment": "\\ud800"}': "comment",
        b"[" * 100_000: "",
        b"{": "",
        b'"\xff"': "",
    }
    for raw, field in cases.items():
        with pytest.raises(InputError) as raised:
            json_parse(raw)
        assert raised.value.field == field, raw[:30]
    # A surrogate pair is one character, not two lone surrogates.
    assert json_parse(b'"\\ud83d\\ude00"') == "😀"


def test_it_escapes_what_it_echoes() -> None:
    assert printable("a\x00b\ud800c") == "a\\u0000b\\ud800c"
    assert printable("plain ümlaut 😀") == "plain ümlaut 😀"
    assert math.isfinite(finite_number(str(MAX_ID), field="x"))
