"""Krippendorff's alpha for unitized data (alpha_U): agreement on where spans begin and end. No Django here.

Span agreement measured on labels (spans.py: each word hallucinated or not) ignores boundaries inside a
word and treats words as independent. alpha_U compares the spans themselves on the continuum of a
summary's characters (Krippendorff 1995, "On the reliability of unitizing continuous data", Sociological
Methodology 25; Krippendorff 2004, "Content Analysis", 2nd ed., 251-256), as DKPro Statistics'
KrippendorffAlphaUnitizingAgreement computes it and INCEpTION reports it:

- per category c, each annotator's record of a summary is a sequence of segments: their spans of c
  ("units") and the stretches between them ("gaps", which include spans of other categories);
- observed disagreement: over every pair of annotators and every pair of overlapping segments, two
  overlapping units cost the squared differences of their starts and of their ends, a unit lying inside
  the other's gap costs its squared length, anything else nothing; summed, times 2 / (m (m - 1) L^2);
- expected disagreement: the same cost averaged over every position the units could take among all
  units and gaps (Krippendorff 2004, eq. on p. 254, with DKPro's 2 / L normalisation);
- with several categories (intrinsic / extrinsic), alpha = 1 - sum_c D_o(c) / sum_c D_e(c).

All summaries form one continuum (their lengths add up) but a span never crosses from one summary into
the next, so gaps end at summary boundaries. Every annotator is assumed to have read the whole summary:
an annotator who marked nothing contributes one gap. The formula takes the same number m of annotators
on every summary; summaries with another number (the modal one is used) are dropped and counted, as
Fleiss' kappa drops incomplete items. For m > 2 this is DKPro's generalisation; Krippendorff et al. (2016,
Quality & Quantity 50) later revised the coefficient for more than two observers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stats.agreement import (
    GroupedAgreement,
    MetricAsRater,
    RaterComparison,
    group_codes,
    grouped_agreement,
)
from stats.resampling import BootstrapInterval, batch_sizes, bootstrap_interval, resample_counts
from stats.spans import Span, majority_characters

TypedSpan = tuple[int, int, str]
Marked = Mapping[Hashable, Sequence[Span | TypedSpan]]  # annotator -> spans
Summaries = Mapping[Hashable, tuple[str, Marked]]  # summary -> (text, annotator -> spans)
UNTYPED = "span"
# Rows of resample or group weights are handled this many cells (rows x units or gaps) at a time.
BATCH_CELLS = 2_000_000


@dataclass(frozen=True)
class CategoryAlpha:
    category: str
    value: float | None
    observed_disagreement: float | None
    expected_disagreement: float | None
    n_units: int
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "category": self.category,
            "value": self.value,
            "observed_disagreement": self.observed_disagreement,
            "expected_disagreement": self.expected_disagreement,
            "n_units": self.n_units,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class UnitizingAlpha:
    """alpha_U over the summaries (`n_items`) that have the modal number of annotators (`observers`)."""

    value: float | None
    typed: bool
    n_items: int
    n_dropped: int
    observers: int
    length: int  # characters of the continuum
    observed_disagreement: float | None = None
    expected_disagreement: float | None = None
    categories: tuple[CategoryAlpha, ...] = ()
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": "alpha_u",
            "typed": self.typed,
            "value": self.value,
            "n_items": self.n_items,
            "n_dropped": self.n_dropped,
            "observers": self.observers,
            "length": self.length,
            "observed_disagreement": self.observed_disagreement,
            "expected_disagreement": self.expected_disagreement,
            "categories": [category.as_dict() for category in self.categories],
            "reason": self.reason,
        }


# --- segments ---------------------------------------------------------------------------------------


def _checked(summary: Hashable, annotator: Hashable, span: Sequence[object], length: int, typed: bool) -> TypedSpan:
    where = f"summary {summary!r}, annotator {annotator!r}, span {tuple(span)!r}"
    if len(span) not in (2, 3) or (typed and len(span) != 3):
        raise ValueError(f"{where}: a span is (start, end){' and a type' if typed else ''}")
    start, end = span[0], span[1]
    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
        raise ValueError(f"{where}: offsets must be whole numbers")
    if not 0 <= start < end <= length:
        raise ValueError(f"{where}: needs 0 <= start < end <= {length} (the summary's length)")
    category = str(span[2]) if typed else UNTYPED
    return start, end, category


def merged_units(spans: Iterable[Span]) -> list[Span]:
    """An annotator's spans of one category with overlapping spans joined (the unitizing model has no
    overlapping units of one category); spans that only touch stay two units."""
    units: list[list[int]] = []
    for start, end in sorted(spans):
        if units and start < units[-1][1]:
            units[-1][1] = max(units[-1][1], end)
        else:
            units.append([start, end])
    return [(start, end) for start, end in units]


def _gaps(units: Sequence[Span], length: int) -> list[int]:
    """The lengths of the stretches between units (and before the first, after the last)."""
    gaps, position = [], 0
    for start, end in units:
        if start > position:
            gaps.append(start - position)
        position = end
    if length > position:
        gaps.append(length - position)
    return gaps


def _pair_cost(first: Sequence[Span], second: Sequence[Span]) -> float:
    """Observed cost of two annotators' units on one summary: overlapping units cost their squared start
    and end differences; a unit that overlaps none of the other's lies inside their gap and costs l^2."""
    cost = 0.0
    hit_first, hit_second = [False] * len(first), [False] * len(second)
    for i, (b1, e1) in enumerate(first):
        for j, (b2, e2) in enumerate(second):
            if b1 < e2 and b2 < e1:
                cost += (b1 - b2) ** 2 + (e1 - e2) ** 2
                hit_first[i] = hit_second[j] = True
    cost += sum((e - b) ** 2 for (b, e), hit in zip(first, hit_first, strict=True) if not hit)
    cost += sum((e - b) ** 2 for (b, e), hit in zip(second, hit_second, strict=True) if not hit)
    return cost


@dataclass(frozen=True)
class _Category:
    unit_summary: np.ndarray
    unit_length: np.ndarray
    gap_summary: np.ndarray
    gap_length: np.ndarray
    observed: np.ndarray  # per summary: cost summed over unordered annotator pairs


@dataclass(frozen=True)
class UnitizedData:
    """The summaries that enter alpha_U, as arrays per category."""

    keys: list[Hashable]
    lengths: np.ndarray
    observers: int
    categories: dict[str, _Category]
    dropped: list[Hashable]
    typed: bool


def unitized_data(summaries: Summaries, *, typed: bool = False) -> UnitizedData:
    """Check and segment the spans. `typed`: spans are (start, end, type) and each type is a category;
    otherwise every span is one category and a third element, if any, is ignored."""
    sizes = Counter(len(marked) for _, marked in summaries.values() if marked)
    observers = max(sizes, key=lambda n: (sizes[n], n)) if sizes else 0
    keys = [key for key, (_, marked) in summaries.items() if len(marked) == observers and observers >= 2]
    dropped = [key for key in summaries if key not in set(keys)]
    records: list[list[dict[str, list[Span]]]] = []  # summary -> annotator -> category -> units
    names: set[str] = set()
    for key in keys:
        text, marked = summaries[key]
        per_annotator = []
        for annotator, spans in marked.items():
            by_category: dict[str, list[Span]] = {}
            for span in spans:
                start, end, category = _checked(key, annotator, span, len(text), typed)
                by_category.setdefault(category, []).append((start, end))
            names.update(by_category)
            per_annotator.append({category: merged_units(units) for category, units in by_category.items()})
        records.append(per_annotator)
    lengths = np.array([len(summaries[key][0]) for key in keys], dtype=float)
    categories = {}
    for name in sorted(names):
        unit_summary, unit_length, gap_summary, gap_length = [], [], [], []
        observed = np.zeros(len(keys))
        for index, per_annotator in enumerate(records):
            units = [annotator.get(name, []) for annotator in per_annotator]
            for own in units:
                unit_summary += [index] * len(own)
                unit_length += [end - start for start, end in own]
                gaps = _gaps(own, int(lengths[index]))
                gap_summary += [index] * len(gaps)
                gap_length += gaps
            observed[index] = sum(
                _pair_cost(units[i], units[j]) for i in range(len(units)) for j in range(i + 1, len(units))
            )
        categories[name] = _Category(
            np.array(unit_summary, dtype=np.int64),
            np.array(unit_length, dtype=float),
            np.array(gap_summary, dtype=np.int64),
            np.array(gap_length, dtype=float),
            observed,
        )
    return UnitizedData(keys, lengths, observers, categories, dropped, typed)


# --- alpha_U for rows of summary weights ------------------------------------------------------------


def _suffix_sums(matrix: np.ndarray) -> np.ndarray:
    """Per row, the sum from each column to the end, with a zero column appended."""
    sums = np.cumsum(matrix[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([sums, np.zeros((matrix.shape[0], 1))], axis=1)


def _disagreements(data: UnitizedData, weights: np.ndarray, category: _Category) -> tuple[np.ndarray, ...]:
    """Observed and expected disagreement of one category for each row of summary weights."""
    m = data.observers
    length = weights @ data.lengths
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = 2.0 * (weights @ category.observed) / (m * (m - 1) * length**2)
    units = weights[:, category.unit_summary]
    size = category.unit_length
    n_units = units.sum(axis=1)
    shapes = units @ ((2.0 * size**3 - 3.0 * size**2 + size) / 3.0)
    self_pairs = units @ (size * (size - 1.0))
    # A unit of length l fits into a gap of length g at g - l + 1 positions, if g >= l.
    order = np.argsort(category.gap_length, kind="stable")
    gap_sizes = category.gap_length[order]
    gap_weights = weights[:, category.gap_summary[order]]
    first_fit = np.searchsorted(gap_sizes, size, side="left")
    fitting = (
        _suffix_sums(gap_weights * gap_sizes)[:, first_fit] - (size - 1.0) * _suffix_sums(gap_weights)[:, first_fit]
    )
    fits = (units * size**2 * fitting).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (2.0 / length) * ((n_units - 1.0) * shapes + fits) / (m * length * (m * length - 1.0) - self_pairs)
    return observed, expected, n_units


def _alpha_rows(data: UnitizedData, weights: np.ndarray) -> list[UnitizingAlpha]:
    rows = weights.shape[0]
    per_category = {name: _disagreements(data, weights, category) for name, category in data.categories.items()}
    n_items = weights @ np.ones(len(data.keys))
    length = weights @ data.lengths
    results = []
    for r in range(rows):
        base: dict[str, Any] = {"typed": data.typed, "observers": data.observers, "n_dropped": len(data.dropped)}
        if n_items[r] == 0:
            reason = "no summary has two or more annotators" if data.observers < 2 else "no summary to compare"
            results.append(UnitizingAlpha(None, n_items=0, length=0, reason=reason, **base))
            continue
        base |= {"n_items": round(n_items[r]), "length": round(length[r])}
        if length[r] == 0:
            results.append(UnitizingAlpha(None, reason="the summaries are empty", **base))
            continue
        categories = []
        observed_sum = expected_sum = 0.0
        for name, (observed, expected, n_units) in per_category.items():
            if n_units[r] == 0:
                categories.append(CategoryAlpha(name, None, 0.0, 0.0, 0, reason=f"nobody marked a {name} span"))
                continue
            observed_sum += observed[r]
            expected_sum += expected[r]
            value = float(1.0 - observed[r] / expected[r]) if expected[r] > 0 else None
            reason = "" if value is not None else "no expected disagreement"
            categories.append(
                CategoryAlpha(name, value, float(observed[r]), float(expected[r]), round(n_units[r]), reason)
            )
        if expected_sum <= 0 or not math.isfinite(expected_sum):
            reason = "nobody marked any span, so there is nothing to agree or disagree on"
            results.append(UnitizingAlpha(None, categories=tuple(categories), reason=reason, **base))
            continue
        results.append(
            UnitizingAlpha(
                float(1.0 - observed_sum / expected_sum),
                observed_disagreement=float(observed_sum),
                expected_disagreement=float(expected_sum),
                categories=tuple(categories),
                **base,
            )
        )
    return results


def _batched(data: UnitizedData, weights: Iterable[np.ndarray]) -> list[UnitizingAlpha]:
    results = []
    for block in weights:
        results += _alpha_rows(data, block)
    return results


def _row_block(data: UnitizedData) -> int:
    cells = len(data.keys) + sum(c.unit_length.size + c.gap_length.size for c in data.categories.values())
    return max(1, BATCH_CELLS // max(cells, 1))


def unitizing_alpha(summaries: Summaries, *, typed: bool = False) -> UnitizingAlpha:
    """alpha_U over `summaries` (summary -> (text, annotator -> spans)); `typed` compares the span types
    (intrinsic / extrinsic) as categories, otherwise only where spans are."""
    data = unitized_data(summaries, typed=typed)
    return _alpha_rows(data, np.ones((1, len(data.keys))))[0]


def unitizing_alpha_by_group(
    summaries: Summaries, groups: Mapping[Hashable, Hashable], *, typed: bool = False
) -> GroupedAgreement:
    """alpha_U within each group of summaries (e.g. per system), and the mean over groups."""
    data = unitized_data(summaries, typed=typed)
    order, codes = group_codes(list(summaries), groups)
    position = {key: index for index, key in enumerate(summaries)}
    used = codes[[position[key] for key in data.keys]] if data.keys else np.zeros(0, dtype=np.int64)
    indicator = np.zeros((len(order), len(data.keys)))
    indicator[used, np.arange(len(data.keys))] = 1.0
    block = _row_block(data)
    results = _batched(data, (indicator[start : start + block] for start in range(0, len(order), block)))
    dropped = Counter(codes[position[key]] for key in data.dropped)
    rows = []
    for index, result in enumerate(results):
        # Each group counts only its own dropped summaries.
        rows.append((order[index], _with_dropped(result, dropped[index])))
    return grouped_agreement("alpha_u", rows)


def _with_dropped(result: UnitizingAlpha, n_dropped: int) -> UnitizingAlpha:
    return UnitizingAlpha(**{**vars(result), "n_dropped": n_dropped})


def unitizing_alpha_interval(
    summaries: Summaries, *, typed: bool = False, resamples: int = 1000, seed: int = 0
) -> BootstrapInterval:
    """Percentile bootstrap interval of alpha_U with summaries drawn with replacement (seeded)."""
    data = unitized_data(summaries, typed=typed)
    n = len(data.keys)
    if n == 0 or resamples <= 0:
        return BootstrapInterval(None, None, max(resamples, 0), max(resamples, 0), seed, reason="nothing to resample")
    rng = np.random.default_rng(seed)
    block = _row_block(data)
    values = []
    for size in batch_sizes(resamples, n):
        for start in range(0, size, block):
            rows = min(block, size - start)
            weights = resample_counts(n, rows, rng)
            values += [math.nan if r.value is None else r.value for r in _alpha_rows(data, weights)]
    return bootstrap_interval(np.array(values), resamples, seed, what="resamples of summaries")


# --- a metric's flagged tokens on the same scale ----------------------------------------------------


def flagged_spans(text: str, tokens: Sequence[tuple[int, int, float]], threshold: float) -> list[Span]:
    """The character spans of the tokens whose similarity is below `threshold` (BERTScore as a highlighter,
    spans.highlighter_scores). Flagged tokens that overlap, touch or are separated only by whitespace form
    one span, as an annotator marks "in England" rather than "in" and "England"."""
    flagged = sorted((max(0, start), min(end, len(text))) for start, end, score in tokens if score < threshold)
    spans: list[list[int]] = []
    for start, end in flagged:
        if start >= end:
            continue
        if spans and (start <= spans[-1][1] or not text[spans[-1][1] : start].strip()):
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [(start, end) for start, end in spans]


def majority_spans(text: str, annotator_spans: Sequence[Sequence[Span]]) -> list[Span]:
    """The runs of characters inside the spans of more than half of the annotators."""
    spans: list[Span] = []
    start = None
    for position, inside in enumerate([*majority_characters(text, annotator_spans), False]):
        if inside and start is None:
            start = position
        elif not inside and start is not None:
            spans.append((start, position))
            start = None
    return spans


@dataclass(frozen=True)
class SpanMajority:
    """The spans an adjudicator can accept as the annotators' majority (review.services.adjudication).

    spans: the runs of characters inside the spans of more than half of the annotators (majority_spans;
    an annotator who marked nothing counts, with no span), trimmed of white space at either end, each typed
    with the type most of the covering votes gave (one vote per annotator per character of the run; a tie
    goes to the type listed first in `types`); tied: non-space characters exactly half of the annotators
    marked (their majority is undecided: such an item is left unresolved until someone decides)."""

    spans: list[TypedSpan]
    tied: int


def typed_majority_spans(
    text: str, annotator_spans: Sequence[Sequence[TypedSpan]], types: Sequence[str]
) -> SpanMajority:
    """The character-level majority of typed spans (SpanMajority)."""
    runs = majority_spans(text, [[(start, end) for start, end, _ in spans] for spans in annotator_spans])
    order = {name: position for position, name in enumerate(types)}
    typed: list[TypedSpan] = []
    for run_start, run_end in runs:
        start, end = run_start, run_end
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        votes: Counter[str] = Counter()
        for spans in annotator_spans:
            for span_start, span_end, label in spans:
                votes[label] += max(0, min(end, span_end) - max(start, span_start))
        label = min(votes, key=lambda name: (-votes[name], order.get(name, len(order)), name))
        typed.append((start, end, label))
    half = len(annotator_spans) / 2
    counts = [0] * len(text)
    for spans in annotator_spans:
        covered: set[int] = set()
        for start, end, _ in spans:
            covered.update(range(max(0, start), min(end, len(text))))
        for position in covered:
            counts[position] += 1
    tied = sum(1 for position, count in enumerate(counts) if count and count == half and not text[position].isspace())
    return SpanMajority(typed, tied)


def _character_agreement(pairs: Sequence[tuple[str, Sequence[Span], Sequence[Span]]]) -> tuple[int, float | None]:
    """Characters compared, and the share where both records say the same (inside a span or not)."""
    same = total = 0
    for text, first, second in pairs:
        a = majority_characters(text, [first])
        b = majority_characters(text, [second])
        same += sum(x == y for x, y in zip(a, b, strict=True))
        total += len(text)
    return total, (same / total if total else None)


def metric_span_agreement(
    summaries: Summaries, metric_spans: Mapping[Hashable, Sequence[Span]], *, metric: str = "metric"
) -> MetricAsRater:
    """The metric's flagged spans as one more annotator, on alpha_U's scale (untyped): alpha_U among the
    humans; with the metric added; the metric against the majority spans; the metric against each
    annotator. Summaries without metric spans are left out of every row and counted (`n_missing`).
    The `agreement` of each comparison is the share of characters both mark alike."""
    used = {key: summaries[key] for key in summaries if key in metric_spans}
    machine = object()  # an observer key no annotator can have
    humans = unitizing_alpha(used)
    with_metric = unitizing_alpha(
        {key: (text, {**marked, machine: metric_spans[key]}) for key, (text, marked) in used.items()}
    )

    def compare(name: Hashable, references: Mapping[Hashable, tuple[str, Sequence[Span]]]) -> RaterComparison:
        pairs = {key: (text, {machine: metric_spans[key], name: spans}) for key, (text, spans) in references.items()}
        n, share = _character_agreement([(text, metric_spans[key], spans) for key, (text, spans) in references.items()])
        return RaterComparison(str(name), n, share, unitizing_alpha(pairs))

    majority = {
        key: (text, majority_spans(text, [[(s[0], s[1]) for s in spans] for spans in marked.values()]))
        for key, (text, marked) in used.items()
    }
    annotators = sorted({name for _, marked in used.values() for name in marked}, key=str)
    per_annotator = [
        compare(
            name,
            {
                key: (text, [(s[0], s[1]) for s in marked[name]])
                for key, (text, marked) in used.items()
                if name in marked
            },
        )
        for name in annotators
    ]
    return MetricAsRater(
        metric=metric,
        humans=humans,
        with_metric=with_metric,
        majority=compare("majority", majority),
        annotators=per_annotator,
        n_items=len(used),
        n_missing=len(summaries) - len(used),
    )
