"""Krippendorff's alpha for unitized data (alpha_U) over character spans, and a metric's flagged spans on the
same scale (no database)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from stats.unitizing import (
    SpanMajority,
    flagged_spans,
    majority_spans,
    merged_units,
    metric_span_agreement,
    typed_majority_spans,
    unitizing_alpha,
    unitizing_alpha_by_group,
    unitizing_alpha_interval,
)

# Krippendorff (1995), "On the reliability of unitizing continuous data", Sociological Methodology 25, p. 57:
# four pairs of observers unitize a continuum of 24 positions; 1 is inside a unit, 0 outside, | separates
# segments. Re-entered from the figure as DKPro Statistics' Krippendorff1995Test reproduces it, with the
# published values: D_o of A-D and alpha_U A 0.553, B -0.926, C 0.679, D 0.066, for a continuous continuum.
KRIPPENDORFF_1995 = {
    "A": ("0 0|1 1 1 1 1 1 1 1|0 0 0 0|1 1 1 1 1 1|0 0 0 0", "0 0 0 0|1 1 1 1|0 0 0 0 0 0 0|1 1|0 0 0 0 0 0 0"),
    "B": ("1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1|0 0 0 0 0 0", "1 1|1|1|1|1|1 1 1|1|0 0 0 0 0 0 0 0 0 0 0 0 0 0"),
    "C": ("0 0|1 1 1 1 1 1|0 0|1 1|0 0|1 1 1 1|0 0|1 1|0 0", "1 1|0 0|1 1 1 1|0 0|1 1 1 1|0 0|1 1|0 0|1 1|0 0"),
    "D": ("1 1|1 1 1 1 1 1 1 1|1 1 1 1|1 1 1 1 1 1|1 1 1 1", "1 1 1 1|1 1 1 1|1 1 1 1 1 1 1|1 1|1 1 1 1 1 1 1"),
}
PUBLISHED_1995 = {"A": (0.03125, 0.553), "B": (2.26736, -0.926), "C": (0.02777, 0.679), "D": (0.38715, 0.066)}


def figure_units(record: str, stretch: int) -> list[tuple[int, int]]:
    """The units (runs of 1) of one observer's line of the figure, positions multiplied by `stretch`."""
    units, position = [], 0
    for segment in record.split("|"):
        size = len(segment.split())
        if segment.split()[0] == "1":
            units.append((position * stretch, (position + size) * stretch))
        position += size
    assert position == 24
    return units


def figure(pair: str, stretch: int = 1) -> dict[str, tuple[str, dict[str, list[tuple[int, int]]]]]:
    first, second = KRIPPENDORFF_1995[pair]
    return {
        pair: ("x" * (24 * stretch), {"first": figure_units(first, stretch), "second": figure_units(second, stretch)})
    }


@pytest.mark.parametrize("pair", list(KRIPPENDORFF_1995))
def test_it_reproduces_krippendorffs_1995_unitizing_example(pair: str) -> None:
    observed, published = PUBLISHED_1995[pair]
    exact = unitizing_alpha(figure(pair))
    assert exact.observed_disagreement == pytest.approx(observed, abs=1e-5)
    assert (exact.n_items, exact.observers, exact.length) == (1, 2, 24)
    # The paper integrates over a continuous continuum; the discrete formula approaches it as positions
    # get finer. The published D_e of C carries a small error (DKPro's test notes it), hence the tolerance.
    continuous = unitizing_alpha(figure(pair, stretch=50_000))
    assert continuous.observed_disagreement == pytest.approx(observed, abs=1e-5)
    assert continuous.value == pytest.approx(published, abs=0.02)


def test_it_reproduces_krippendorffs_2004_example_with_two_categories() -> None:
    # Krippendorff (2004), "Content Analysis", 2nd ed., p. 254: a continuum from 150 to 450, two observers,
    # categories c and k (shifted here to start at 0), re-entered with the values DKPro Statistics'
    # Krippendorff2004Test takes from the book: alpha_U 0.8591 (+-0.0005); for c D_o 0.0144, D_e 0.0532,
    # alpha 0.7286; for k D_o 0, D_e 0.0490, alpha 1.
    def span(begin: int, length: int, category: str) -> tuple[int, int, str]:
        return begin - 150, begin - 150 + length, category

    first = [span(225, 70, "c"), span(370, 30, "c"), span(180, 60, "k"), span(300, 50, "k")]
    second = [span(220, 80, "c"), span(355, 20, "c"), span(400, 20, "c"), span(180, 60, "k"), span(300, 50, "k")]
    result = unitizing_alpha({"s": ("x" * 300, {"i": first, "j": second})}, typed=True)
    c, k = result.categories
    assert (c.category, k.category) == ("c", "k")
    assert c.observed_disagreement == pytest.approx(0.0144, abs=5e-5)
    assert c.expected_disagreement == pytest.approx(0.0532, abs=5e-5)
    assert c.value == pytest.approx(0.7286, abs=5e-5)
    assert (k.observed_disagreement, k.value) == (0.0, 1.0) and k.expected_disagreement == pytest.approx(
        0.0490, abs=5e-5
    )
    assert result.value == pytest.approx(0.8591, abs=5e-4)
    # Without the types, both categories are one: the k units coincide with c's gaps no longer.
    untyped = unitizing_alpha({"s": ("x" * 300, {"i": first, "j": second})})
    assert untyped.value != pytest.approx(result.value) and [c.category for c in untyped.categories] == ["span"]


def test_it_matches_dkpro_on_a_unit_against_three_small_ones() -> None:
    # DKPro Statistics' UnitizingAgreementTest: "-11111111-" against "--1-1-1---".
    result = unitizing_alpha({"s": ("x" * 10, {"r0": [(1, 9)], "r1": [(2, 3), (4, 5), (6, 7)]})})
    assert result.observed_disagreement == pytest.approx(0.91)
    assert result.expected_disagreement == pytest.approx(0.5351, abs=1e-4)
    assert result.value == pytest.approx(-0.7003, abs=1e-4)


TEXT = "Albert Einstein was born in England in 1879"


def test_it_pools_summaries_into_one_continuum_and_drops_the_odd_ones() -> None:
    england = (TEXT.index("England"), TEXT.index("England") + 7)
    year = (TEXT.index("1879"), len(TEXT))
    summaries = {
        "s1": (TEXT, {"alice": [england], "bob": [england], "carol": [england, year]}),
        "s2": (TEXT, {"alice": [], "bob": [year], "carol": [year]}),
        "s3": (TEXT, {"alice": [england], "bob": []}),  # two annotators where the others have three
    }
    result = unitizing_alpha(summaries)
    assert (result.n_items, result.n_dropped, result.observers, result.length) == (2, 1, 3, 2 * len(TEXT))
    assert 0 < result.value < 1
    perfect = unitizing_alpha({"s1": (TEXT, {"alice": [england], "bob": [england]})})
    assert perfect.value == 1.0 and perfect.observed_disagreement == 0.0
    # Overlapping spans of one annotator are one unit; touching spans stay two.
    assert merged_units([(5, 9), (0, 3), (2, 4), (9, 12)]) == [(0, 4), (5, 9), (9, 12)]


def test_it_explains_undefined_values_and_refuses_broken_spans() -> None:
    nobody = unitizing_alpha({"s": (TEXT, {"alice": [], "bob": []})})
    assert nobody.value is None and "nobody marked any span" in nobody.reason
    alone = unitizing_alpha({"s": (TEXT, {"alice": [(0, 6)]})})
    assert alone.value is None and alone.n_items == 0 and "two or more annotators" in alone.reason
    with pytest.raises(ValueError, match=r"summary 's', annotator 'bob', span \(3, 99\): needs 0 <= start < end"):
        unitizing_alpha({"s": (TEXT, {"alice": [], "bob": [(3, 99)]})})
    with pytest.raises(ValueError, match="a span is \\(start, end\\) and a type"):
        unitizing_alpha({"s": (TEXT, {"alice": [(0, 6)], "bob": []})}, typed=True)
    with pytest.raises(ValueError, match="offsets must be whole numbers"):
        unitizing_alpha({"s": (TEXT, {"alice": [(0.5, 6)], "bob": []})})  # type: ignore[list-item]


def test_it_computes_alpha_u_per_group_as_on_each_group_alone() -> None:
    england = (TEXT.index("England"), TEXT.index("England") + 7)
    born = (TEXT.index("born"), TEXT.index("born") + 4)
    summaries = {
        "a1": (TEXT, {"alice": [england], "bob": [england]}),
        "a2": (TEXT, {"alice": [born], "bob": [england]}),
        "b1": (TEXT, {"alice": [(0, 6)], "bob": [(0, 15)]}),
        "b2": (TEXT, {"alice": [], "bob": [born]}),
        "b3": (TEXT, {"alice": [born]}),  # dropped: one annotator
    }
    groups = {key: key[0] for key in summaries}
    grouped = unitizing_alpha_by_group(summaries, groups)
    assert [g.group for g in grouped.groups] == ["a", "b"]
    for group in grouped.groups:
        alone = unitizing_alpha({k: v for k, v in summaries.items() if groups[k] == group.group})
        assert group.result.value == pytest.approx(alone.value)
        assert group.result.n_items == alone.n_items
    assert grouped.groups[1].result.n_dropped == 1 and grouped.groups[0].result.n_dropped == 0
    assert grouped.mean == pytest.approx((grouped.groups[0].result.value + grouped.groups[1].result.value) / 2)


def test_it_bootstraps_alpha_u_over_summaries_with_a_seed() -> None:
    summaries = {}
    for n in range(12):
        start = TEXT.index("England")
        summaries[n] = (TEXT, {"alice": [(start, start + 7)], "bob": [(start - 3 * (n % 3), start + 7)]})
    first = unitizing_alpha_interval(summaries, resamples=200, seed=1)
    assert first == unitizing_alpha_interval(summaries, resamples=200, seed=1)
    value = unitizing_alpha(summaries).value
    assert first.low <= value <= first.high and first.n_resamples == 200 and first.n_undefined == 0


def test_it_turns_flagged_tokens_into_spans_and_scores_them_against_the_annotators() -> None:
    tokens = [(0, 6, 0.97), (7, 15, 0.95), (16, 19, 0.99), (20, 24, 0.9), (25, 27, 0.83), (28, 35, 0.81)]
    # "in" and "England" are separated only by a space: one span, as an annotator would mark it.
    assert flagged_spans(TEXT, tokens, 0.85) == [(25, 35)]
    assert flagged_spans(TEXT, tokens, 0.92) == [(20, 35)]
    assert flagged_spans(TEXT, tokens, 0.5) == []
    england = (28, 35)
    summaries = {
        "s1": (TEXT, {"alice": [england], "bob": [england], "carol": [(25, 35)]}),
        "s2": (TEXT, {"alice": [], "bob": [], "carol": [(0, 6)]}),
        "s3": (TEXT, {"alice": [england], "bob": [england], "carol": [england]}),
    }
    assert majority_spans(TEXT, [[england], [england], [(25, 35)]]) == [england]
    report = metric_span_agreement(summaries, {"s1": [(25, 35)], "s2": []}, metric="bertscore")
    assert (report.n_items, report.n_missing) == (2, 1)
    used = {key: summaries[key] for key in ("s1", "s2")}
    assert report.humans == unitizing_alpha(used)
    assert report.with_metric.observers == 4 and report.with_metric.n_items == 2
    # Against the majority (England on s1, nothing on s2) the metric is 3 characters wider on s1.
    assert report.majority.n_items == 2 * len(TEXT)
    assert report.majority.agreement == pytest.approx(1 - 3 / (2 * len(TEXT)))
    rows = {row.rater: row for row in report.annotators}
    assert rows["carol"].agreement == pytest.approx(1 - 6 / (2 * len(TEXT)))
    alone = unitizing_alpha({"s1": (TEXT, {"a": [england], "m": [(25, 35)]}), "s2": (TEXT, {"a": [], "m": []})})
    assert rows["alice"].coefficient == alone


# --- the majority an adjudicator can accept (review.services.adjudication) -----------------------------


def _independent_majority(text: str, annotators: list[list[tuple[int, int, str]]], types: list[str]) -> list[Any]:
    """The same definition written another way: a numpy vote matrix, runs from its row sums."""
    votes = np.zeros((len(annotators), len(text)), dtype=int)
    for row, spans in enumerate(annotators):
        for start, end, _ in spans:
            votes[row, start:end] = 1
    inside = votes.sum(axis=0) * 2 > len(annotators)
    found = []
    position = 0
    while position < len(text):
        if not inside[position]:
            position += 1
            continue
        end = position
        while end < len(text) and inside[end]:
            end += 1
        chunk = text[position:end]
        start, stop = position + len(chunk) - len(chunk.lstrip()), end - (len(chunk) - len(chunk.rstrip()))
        if start < stop:
            per_type = {name: 0 for name in types}
            for spans in annotators:
                for s, e, name in spans:
                    per_type[name] += len(set(range(s, e)) & set(range(start, stop)))
            best = max(per_type.values())
            found.append((start, stop, next(name for name in types if per_type[name] == best)))
        position = end
    return found


def test_it_takes_the_character_majority_of_typed_spans_as_an_independent_count_does() -> None:
    text = "The mayor of Cardiff said on Monday that the bridge will reopen in May."
    rng = np.random.default_rng(7)
    types = ["intrinsic", "extrinsic"]
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    for _ in range(200):
        annotators = []
        for _ in range(int(rng.integers(1, 6))):
            spans, position = [], 0
            while position < len(words):
                length = int(rng.integers(1, 4))
                if rng.random() < 0.3:
                    last = min(len(words), position + length) - 1
                    spans.append((words[position][0], words[last][1], types[int(rng.integers(0, 2))]))
                position += length + 1
            annotators.append(spans)
        assert typed_majority_spans(text, annotators, types).spans == _independent_majority(text, annotators, types)


def test_it_counts_the_characters_where_the_annotators_tie() -> None:
    text = "Rain in Paris today."
    paris = (8, 13, "extrinsic")
    assert typed_majority_spans(text, [[paris], []], ["intrinsic", "extrinsic"]) == SpanMajority([], 5)
    three = typed_majority_spans(
        text, [[paris], [(8, 13, "intrinsic")], [(0, 13, "intrinsic")]], ["intrinsic", "extrinsic"]
    )
    # "Paris": three votes, two intrinsic (one vote per character); "Rain in" only one of three: no span.
    assert three == SpanMajority([(8, 13, "intrinsic")], 0)
