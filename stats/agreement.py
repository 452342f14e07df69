"""Inter-annotator agreement. Plain Python: ratings in, dataclasses out; no Django here.

Every coefficient is computed by one array engine: the ratings become a table of (item, value, count)
entries, and a sparse matrix of row weights says which items enter each computation. One row of ones is
the ordinary coefficient; one row per group (an indicator of the group's items) gives the coefficient of
every group in the same pass; rows of multiplicities drawn with replacement are bootstrap resamples of
the items. The statistics are sums over items, so each is one sparse product for all rows at once:
1,000,000 judgements in 100 groups cost about what they cost ungrouped (benchmarks/agreement_groups.py).

Coefficients: Fleiss' kappa (Fleiss 1971), Krippendorff's alpha at the nominal, ordinal, interval and
ratio levels (Krippendorff 2011), FEQA's percent agreement, and the prevalence-robust Gwet's AC1 (AC2
with weights) and Brennan-Prediger coefficients for any number of raters with missing ratings (Gwet 2014,
"Handbook of Inter-Rater Reliability", 4th ed., chapters 2-3). Undefined values are None with a reason,
never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, TypeAlias, TypeVar

import numpy as np
from scipy import sparse

from stats.resampling import BootstrapInterval, batch_sizes, bootstrap_interval, resample_rows

LEVELS = ("nominal", "ordinal", "interval", "ratio")
COEFFICIENTS = ("percent", "fleiss", "krippendorff", "gwet", "brennan_prediger")
# Gwet (2014), chapter 3: the weights that turn AC1 into AC2 (and Brennan-Prediger into its weighted form).
WEIGHTS = ("identity", "quadratic", "linear", "ordinal", "radical", "ratio")
Value = Hashable
Label = TypeVar("Label", bound=Hashable)  # one kind of label in a call (the scale's values, or texts)
Ratings = Mapping[Hashable, Sequence[Value | None]]


# --- the table of ratings ---------------------------------------------------------------------------


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _ordered(values: Iterable[Value]) -> list[Value]:
    values = list(values)
    try:
        # Labels are any hashable value; sorted raises TypeError on ones that do not compare, handled below.
        return sorted(values)  # type: ignore[type-var]
    except TypeError:  # labels of mixed types: any fixed order will do for nominal data
        return sorted(values, key=lambda value: (type(value).__name__, repr(value)))


def _check_numbers(values: Iterable[Value], what: str) -> None:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"the {what} needs numbers, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"the {what} needs finite numbers, got {value!r}")


@dataclass(frozen=True)
class RatingTable:
    """Ratings as arrays. Entry e says that item `entry_item[e]` received value `values[entry_code[e]]`
    `entry_count[e]` times; entries are sorted by item. Missing values (None, NaN) are not entries."""

    items: list[Hashable]
    values: list[Value]
    entry_item: np.ndarray
    entry_code: np.ndarray
    entry_count: np.ndarray
    raters: np.ndarray  # per item, how many values it received

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_values(self) -> int:
        return len(self.values)

    def counts(self, items: np.ndarray | None = None) -> sparse.csr_matrix:
        """The (items x values) matrix of counts; only the items where `items` is true, if given."""
        keep = slice(None) if items is None else items[self.entry_item]
        return sparse.csr_matrix(
            (self.entry_count[keep], (self.entry_item[keep], self.entry_code[keep])),
            shape=(self.n_items, max(self.n_values, 1)),
        )

    def pairs(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every ordered pair of entries (a, b) within each selected item, a == b included: the item, both
        value codes and both counts. An item with d distinct values has d * d pairs."""
        chosen = np.flatnonzero(items[self.entry_item])
        item, code, count = self.entry_item[chosen], self.entry_code[chosen], self.entry_count[chosen]
        distinct = np.bincount(item, minlength=self.n_items)
        per_entry = distinct[item]
        first = np.repeat(np.arange(item.size), per_entry)
        item_start = np.cumsum(distinct) - distinct
        block_start = np.repeat(np.cumsum(per_entry) - per_entry, per_entry)
        second = item_start[item[first]] + (np.arange(first.size) - block_start)
        return item[first], code[first], code[second], count[first], count[second]


def rating_table(
    ratings: Ratings, *, numbers: str | None = None, categories: Sequence[Value] | None = None
) -> RatingTable:
    """Encode `ratings` (item -> the values its raters gave; None or NaN is missing).

    `numbers` names what needs numeric values (e.g. "interval level"), so that labels are refused with a
    clear error. `categories` fixes the list of values (a scale's categories, some perhaps unused); a value
    outside it is refused.
    """
    items = list(ratings)
    per_item = list(ratings.values())
    lengths = np.fromiter(map(len, per_item), dtype=np.int64, count=len(per_item))
    flat = list(chain.from_iterable(per_item))
    distinct = dict.fromkeys(flat)
    present = [value for value in distinct if not _is_missing(value)]
    if categories is not None:
        values = list(dict.fromkeys(categories))
        known = set(values)
        for value in present:
            if value not in known:
                raise ValueError(f"value {value!r} is not one of the categories {values!r}")
    else:
        values = _ordered(present)
    if numbers is not None:
        _check_numbers(values, numbers)
    code: dict[Value, int] = {value: index for index, value in enumerate(values)}
    for value in distinct:
        if _is_missing(value):
            code[value] = -1
    codes = np.fromiter(map(code.__getitem__, flat), dtype=np.int64, count=len(flat))
    item_of = np.repeat(np.arange(len(items), dtype=np.int64), lengths)
    keep = codes >= 0
    return _table(items, values, item_of[keep], codes[keep])


def _table(items: list[Hashable], values: list[Value], item_of: np.ndarray, codes: np.ndarray) -> RatingTable:
    """The table of ratings where rating r gave `values[codes[r]]` to `items[item_of[r]]`."""
    width = max(len(values), 1)
    keys, counts = np.unique(item_of * width + codes, return_counts=True)
    return RatingTable(
        items=items,
        values=values,
        entry_item=keys // width,
        entry_code=keys % width,
        entry_count=counts.astype(float),
        raters=np.bincount(item_of, minlength=len(items)).astype(float),
    )


@dataclass(frozen=True)
class CodedLabels:
    """Labels as arrays, for hundreds of thousands of judgements: judgement j gave the label
    `labels[label[j]]` to unit `unit[j]` (units numbered 0..n_units-1), as annotator
    `annotators[annotator[j]]`; an annotator labels a unit at most once. What `Labelled` mappings
    (unit -> annotator -> label) hold, without a Python object per judgement."""

    unit: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    n_units: int
    annotators: list[str]
    labels: list[Value]

    def rating_table(self) -> RatingTable:
        """rating_table of the units' labels (units in their numbering, values ordered as rating_table
        orders them), for the coefficients of Coefficient.rows."""
        values = _ordered(self.labels)
        position = {value: index for index, value in enumerate(values)}
        recode = np.array([position[value] for value in self.labels], dtype=np.int64)
        return _table(list(range(self.n_units)), values, self.unit, recode[self.label])


# Row weights: a (rows x items) sparse matrix (scipy.sparse.csr_matrix; scipy ships no types, so to mypy it is
# Any). Each row is one computation over the items it weights.
Rows: TypeAlias = Any


def all_rows(n_items: int) -> Rows:
    return sparse.csr_matrix(np.ones((1, n_items)))


def group_rows(codes: np.ndarray, n_groups: int) -> Rows:
    """One indicator row per group; `codes[i]` is the group of item i."""
    return sparse.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))), shape=(n_groups, codes.size))


def _row_sums(rows: Rows, per_item: np.ndarray) -> np.ndarray:
    return np.asarray(rows @ per_item, dtype=float).ravel()


def _dense(matrix: Any) -> np.ndarray:
    return matrix.toarray() if sparse.issparse(matrix) else np.asarray(matrix)


# --- Fleiss' kappa ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' kappa over the items rated by the modal number of raters.

    `value` is None when kappa is undefined; `reason` then says why (too few items or raters, or a
    single category used by everyone, where chance agreement is 1 and kappa is 0/0).
    """

    value: float | None
    n_items: int
    n_dropped: int
    raters_per_item: int
    observed_agreement: float | None = None
    chance_agreement: float | None = None
    category_proportions: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": "fleiss",
            "value": self.value,
            "n_items": self.n_items,
            "n_dropped": self.n_dropped,
            "raters_per_item": self.raters_per_item,
            "observed_agreement": self.observed_agreement,
            "chance_agreement": self.chance_agreement,
            "category_proportions": self.category_proportions,
            "reason": self.reason,
        }


def _fleiss_rows(table: RatingTable, rows: Rows) -> list[FleissKappa]:
    raters = table.raters
    rated = np.flatnonzero(raters >= 1)
    sizes = np.unique(raters[rated])
    by_size = sparse.csr_matrix(
        (np.ones(rated.size), (rated, np.searchsorted(sizes, raters[rated]))),
        shape=(table.n_items, max(sizes.size, 1)),
    )
    per_size = _dense(rows @ by_size)  # items of each size in each row
    squares = np.bincount(table.entry_item, weights=table.entry_count**2, minlength=table.n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = np.where(raters >= 2, (squares - raters) / (raters * (raters - 1)), 0.0)
    agreement_per_size = _dense(rows @ by_size.multiply(agreement[:, None]).tocsr())
    totals_all = _row_sums(rows, np.ones(table.n_items))
    # The modal number of raters; on ties the larger one keeps more information per item.
    modal = per_size.shape[1] - 1 - np.argmax(per_size[:, ::-1], axis=1)
    category_totals = np.zeros((rows.shape[0], max(table.n_values, 1)))
    for size_index in np.unique(modal):
        members = np.flatnonzero(modal == size_index)
        if sizes.size:
            chosen = table.counts(raters == sizes[size_index])
            category_totals[members] = _dense(rows[members] @ chosen)
    results = []
    for row in range(rows.shape[0]):
        total = round(totals_all[row])
        if sizes.size == 0 or per_size[row].sum() == 0:
            results.append(FleissKappa(None, 0, total, 0, reason="no judgements yet"))
            continue
        size_index = modal[row]
        n_raters = int(sizes[size_index])
        used = round(per_size[row, size_index])
        dropped = total - used
        if n_raters < 2:
            results.append(FleissKappa(None, used, dropped, n_raters, reason="each item needs at least two raters"))
            continue
        if used < 2:
            results.append(FleissKappa(None, used, dropped, n_raters, reason="at least two complete items are needed"))
            continue
        proportions_array = category_totals[row] / (per_size[row, size_index] * n_raters)
        proportions = {table.values[c]: float(p) for c, p in enumerate(proportions_array) if p > 0}
        observed = float(agreement_per_size[row, size_index] / per_size[row, size_index])
        chance = float(np.sum(proportions_array**2))
        # The categories are the labels, any hashable value; the field says str, what JSON makes of them.
        results.append(fleiss_result(observed, chance, used, dropped, n_raters, proportions))  # type: ignore[arg-type]
    return results


def fleiss_result(
    observed: float, chance: float, used: int, dropped: int, n_raters: int, proportions: dict[str, float]
) -> FleissKappa:
    """Fleiss' kappa from the observed and the chance agreement of `used` units of `n_raters` raters each;
    undefined, saying why, when chance agreement is 1 (every judgement has the same label)."""
    if chance >= 1.0:
        return FleissKappa(
            None,
            used,
            dropped,
            n_raters,
            observed_agreement=observed,
            chance_agreement=chance,
            category_proportions=proportions,
            reason="every judgement has the same label, so agreement beyond chance is undefined",
        )
    return FleissKappa(
        value=(observed - chance) / (1.0 - chance),
        n_items=used,
        n_dropped=dropped,
        raters_per_item=n_raters,
        observed_agreement=observed,
        chance_agreement=chance,
        category_proportions=proportions,
    )


def coded_fleiss_kappa(coded: CodedLabels) -> FleissKappa:
    """fleiss_kappa of labels given as arrays (the same figures as fleiss_kappa of the same units in the
    same order)."""
    table = coded.rating_table()
    return _fleiss_rows(table, all_rows(table.n_items))[0]


def fleiss_kappa(ratings: Ratings) -> FleissKappa:
    """Fleiss (1971) kappa. `ratings` maps each item to the labels its raters gave (one per rater).

    Fleiss' statistic needs the same number of raters n on every item; items with another number of
    labels (an unfinished item, a missing label) are dropped and counted in `n_dropped`.
    """
    # agreement() returns the result type of the coefficient it is asked for: FleissKappa here.
    return agreement(ratings, "fleiss")  # type: ignore[return-value]


# --- Krippendorff's alpha ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KrippendorffAlpha:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").

    Missing data are allowed: a unit counts when it holds at least two values ("pairable"); units with
    fewer are counted in `n_dropped`. `value` is None when alpha is undefined (`reason` says why).
    """

    value: float | None
    level: str
    n_items: int
    n_dropped: int
    n_values: int = 0
    observed_disagreement: float | None = None
    expected_disagreement: float | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": "krippendorff",
            "level": self.level,
            "value": self.value,
            "n_items": self.n_items,
            "n_dropped": self.n_dropped,
            "n_values": self.n_values,
            "observed_disagreement": self.observed_disagreement,
            "expected_disagreement": self.expected_disagreement,
            "reason": self.reason,
        }


def _ratio_differences(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    total = first + second
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(total == 0.0, 0.0, ((first - second) / np.where(total == 0.0, 1.0, total)) ** 2))


def _spread(totals: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """sum_c sum_k n_c n_k (x_c - x_k)^2 per row, as 2 n sum_c n_c (x_c - mean)^2 (no cancellation)."""
    n = totals.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, (totals * positions).sum(axis=1) / np.where(n > 0, n, 1.0), 0.0)
    return np.asarray(2.0 * n * (totals * (positions - mean[:, None]) ** 2).sum(axis=1))


def _ratio_expected(totals: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum_c sum_k n_c n_k delta^2_ratio(c, k) per row, a block of columns at a time (Q x Q can be large)."""
    result = np.zeros(totals.shape[0])
    block = max(1, 2_000_000 // max(values.size, 1))
    for start in range(0, values.size, block):
        differences = _ratio_differences(values[start : start + block, None], values[None, :])
        result += ((totals[:, start : start + block] @ differences) * totals).sum(axis=1)
    return result


def _krippendorff_rows(table: RatingTable, rows: Rows, level: str) -> list[KrippendorffAlpha]:
    width = max(table.n_values, 1)
    pairable = table.raters >= 2
    item, first, second, n_first, n_second = table.pairs(pairable)
    # The coincidence matrix o_ck: every ordered pair of values within a unit, weighted 1 / (m_u - 1).
    weight = (n_first * n_second - np.where(first == second, n_first, 0.0)) / (table.raters[item] - 1.0)
    per_item = sparse.csr_matrix((weight, (item, first * width + second)), shape=(table.n_items, width * width))
    coincidences = sparse.coo_matrix(rows @ per_item)
    row, c, k, o = coincidences.row, coincidences.col // width, coincidences.col % width, coincidences.data
    n_rows = rows.shape[0]
    totals = np.bincount(row * width + c, weights=o, minlength=n_rows * width).reshape(n_rows, width)
    n = totals.sum(axis=1)
    numbers = np.array(table.values, dtype=float) if level != "nominal" and table.values else np.zeros(width)
    if level == "nominal":
        delta = (c != k).astype(float)
        expected_sum = n * n - (totals**2).sum(axis=1)
    elif level == "interval":
        delta = (numbers[c] - numbers[k]) ** 2
        expected_sum = _spread(totals, np.broadcast_to(numbers, totals.shape))
    elif level == "ratio":
        delta = _ratio_differences(numbers[c], numbers[k])
        expected_sum = _ratio_expected(totals, numbers)
    else:
        # Ordinal: the distance between two values counts the values between them by their frequencies,
        # which is the interval distance between their mid-ranks (the row's own marginal totals).
        middles = np.cumsum(totals, axis=1) - totals / 2.0
        delta = (middles[row, c] - middles[row, k]) ** 2
        expected_sum = _spread(totals, middles)
    observed_sum = np.bincount(row, weights=o * delta, minlength=n_rows)
    n_items = _row_sums(rows, pairable.astype(float))
    n_dropped = _row_sums(rows, (~pairable).astype(float))
    results = []
    for r in range(n_rows):
        used, dropped = round(n_items[r]), round(n_dropped[r])
        if used == 0:
            reason = "no unit has two or more values, so nothing can be compared"
            results.append(KrippendorffAlpha(None, level, 0, dropped, reason=reason))
            continue
        in_use = np.flatnonzero(totals[r] > 0)
        if in_use.size < 2:
            reason = (
                f"every value is {table.values[in_use[0]]!r}: with one value in use, agreement beyond chance is "
                "undefined"
            )
            results.append(KrippendorffAlpha(None, level, used, dropped, n_values=round(n[r]), reason=reason))
            continue
        observed = float(observed_sum[r] / n[r])
        expected = float(expected_sum[r] / (n[r] * (n[r] - 1.0)))
        if expected == 0.0:
            results.append(
                KrippendorffAlpha(None, level, used, dropped, n_values=round(n[r]), reason="no expected disagreement")
            )
            continue
        results.append(
            KrippendorffAlpha(
                value=1.0 - observed / expected,
                level=level,
                n_items=used,
                n_dropped=dropped,
                n_values=round(n[r]),
                observed_disagreement=observed,
                expected_disagreement=expected,
            )
        )
    return results


def krippendorff_alpha(ratings: Ratings, level: str = "nominal") -> KrippendorffAlpha:
    """Alpha = 1 - D_o / D_e over the pairable values; `None` values are missing.

    Values of the ordinal, interval and ratio levels must be numbers (ordinal only uses their order; the
    ratio level also needs them non-negative).
    """
    # agreement() returns the result type of the coefficient it is asked for: KrippendorffAlpha here.
    return agreement(ratings, "krippendorff", level=level)  # type: ignore[return-value]


# --- percent agreement (FEQA) -----------------------------------------------------------------------


@dataclass(frozen=True)
class PercentAgreement:
    """FEQA's agreement: per item, the percentage of annotators who chose its majority class, averaged.

    Items with fewer than two labels have nobody to agree with and are counted in `n_dropped`.
    """

    value: float | None
    n_items: int
    n_dropped: int
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": "percent",
            "value": self.value,
            "unit": "percent",
            "n_items": self.n_items,
            "n_dropped": self.n_dropped,
            "reason": self.reason,
        }


def _percent_rows(table: RatingTable, rows: Rows) -> list[PercentAgreement]:
    valid = table.raters >= 2
    largest = np.zeros(table.n_items)
    np.maximum.at(largest, table.entry_item, table.entry_count)
    share = np.where(valid, largest / np.maximum(table.raters, 1.0), 0.0)
    shares, n_items = _row_sums(rows, share), _row_sums(rows, valid.astype(float))
    n_dropped = _row_sums(rows, (~valid).astype(float))
    results = []
    for r in range(rows.shape[0]):
        if n_items[r] == 0:
            results.append(PercentAgreement(None, 0, round(n_dropped[r]), reason="no item has two or more labels"))
        else:
            results.append(
                PercentAgreement(float(100.0 * shares[r] / n_items[r]), round(n_items[r]), round(n_dropped[r]))
            )
    return results


def percent_agreement(ratings: Ratings) -> PercentAgreement:
    # agreement() returns the result type of the coefficient it is asked for: PercentAgreement here.
    return agreement(ratings, "percent")  # type: ignore[return-value]


# --- Gwet's AC1/AC2 and Brennan-Prediger ------------------------------------------------------------


@dataclass(frozen=True)
class ChanceCorrected:
    """Gwet's AC1 (AC2 when weighted) or Brennan-Prediger's coefficient, (p_a - p_e) / (1 - p_e).

    Both share Gwet's (2014) observed agreement for multiple raters with missing ratings: p_a averages,
    over the items with two or more ratings, the share of agreeing rater pairs (weighted agreement for
    AC2). Chance agreement: Brennan-Prediger p_e = T_w / q^2 (uniform categories); AC1/AC2 p_e = T_w /
    (q (q - 1)) * sum_k pi_k (1 - pi_k), pi_k the mean share of category k over the items with a rating.
    q counts the scale's categories (given, else the values in use); T_w is the sum of the weights.
    """

    coefficient: str  # "gwet" or "brennan_prediger"
    value: float | None
    weights: str
    n_items: int
    n_dropped: int
    n_categories: int
    observed_agreement: float | None = None
    chance_agreement: float | None = None
    reason: str = ""

    @property
    def name(self) -> str:
        if self.coefficient == "gwet":
            return "AC1" if self.weights == "identity" else "AC2"
        return "Brennan-Prediger" if self.weights == "identity" else "weighted Brennan-Prediger"

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": self.coefficient,
            "name": self.name,
            "weights": self.weights,
            "value": self.value,
            "n_items": self.n_items,
            "n_dropped": self.n_dropped,
            "n_categories": self.n_categories,
            "observed_agreement": self.observed_agreement,
            "chance_agreement": self.chance_agreement,
            "reason": self.reason,
        }


def category_weights(weights: str, values: Sequence[Value]) -> np.ndarray:
    """Gwet's (2014, chapter 3) weight matrix over the categories `values` (numbers unless identity)."""
    if weights not in WEIGHTS:
        raise ValueError(f"unknown weights {weights!r}; choose one of {', '.join(WEIGHTS)}")
    q = len(values)
    if weights == "identity":
        return np.eye(q)
    x = np.array(values, dtype=float)
    k: np.ndarray = x[:, None]
    l_: np.ndarray = x[None, :]
    spread = float(x.max() - x.min()) if q else 0.0
    if spread == 0.0:
        return np.ones((q, q))
    if weights == "quadratic":
        return np.asarray(1.0 - (k - l_) ** 2 / spread**2)
    if weights == "linear":
        return np.asarray(1.0 - np.abs(k - l_) / spread)
    if weights == "radical":
        return np.asarray(1.0 - np.sqrt(np.abs(k - l_)) / math.sqrt(spread))
    if weights == "ratio":
        if x.min() < 0:
            raise ValueError("ratio weights need non-negative categories")
        largest = (spread / float(x.max() + x.min())) ** 2
        return 1.0 - _ratio_differences(k, l_) / largest
    # Ordinal: by ranks, 1 - C(|rank_k - rank_l| + 1, 2) / C(q, 2).
    ranks = np.argsort(np.argsort(x)).astype(float)
    between = np.abs(ranks[:, None] - ranks[None, :]) + 1.0
    weight: np.ndarray = 1.0 - (between * (between - 1.0) / 2.0) / (q * (q - 1.0) / 2.0)
    np.fill_diagonal(weight, 1.0)
    return weight


def _chance_corrected_rows(table: RatingTable, rows: Rows, coefficient: str, weights: str) -> list[ChanceCorrected]:
    q = table.n_values
    weight = category_weights(weights, table.values)
    raters = table.raters
    valid, rated = raters >= 2, raters >= 1
    if weights == "identity":
        weighted_pairs = np.bincount(table.entry_item, weights=table.entry_count**2, minlength=table.n_items)
    else:
        item, first, second, n_first, n_second = table.pairs(valid)
        weighted_pairs = np.bincount(item, weights=n_first * n_second * weight[first, second], minlength=table.n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_item = np.where(valid, (weighted_pairs - raters) / (raters * (raters - 1.0)), 0.0)
    agreement_sum, n_items = _row_sums(rows, per_item), _row_sums(rows, valid.astype(float))
    n_dropped = _row_sums(rows, (~valid).astype(float))
    total_weight = float(weight.sum())
    if coefficient == "gwet":
        shares = table.counts(rated).multiply(1.0 / np.maximum(raters, 1.0)[:, None]).tocsr()
        n_rated = _row_sums(rows, rated.astype(float))
        with np.errstate(divide="ignore", invalid="ignore"):
            pi = _dense(rows @ shares) / n_rated[:, None]
        chance = total_weight / (q * (q - 1.0)) * (pi * (1.0 - pi)).sum(axis=1) if q >= 2 else np.full(len(pi), 1.0)
    else:
        chance = np.full(rows.shape[0], total_weight / q**2 if q else math.inf)
    results = []
    for r in range(rows.shape[0]):
        base: dict[str, Any] = {"coefficient": coefficient, "weights": weights, "n_categories": q}
        used, dropped = round(n_items[r]), round(n_dropped[r])
        if used == 0:
            reason = "no item has two or more ratings"
            results.append(ChanceCorrected(value=None, n_items=0, n_dropped=dropped, reason=reason, **base))
            continue
        observed = float(agreement_sum[r] / n_items[r])
        if q < 2:
            reason = (
                "the scale has a single category, so chance agreement is undefined (if other categories were "
                "possible, pass the scale's categories)"
            )
            results.append(
                ChanceCorrected(
                    value=None, n_items=used, n_dropped=dropped, observed_agreement=observed, reason=reason, **base
                )
            )
            continue
        expected = float(chance[r])
        if expected >= 1.0:
            results.append(
                ChanceCorrected(
                    value=None,
                    n_items=used,
                    n_dropped=dropped,
                    observed_agreement=observed,
                    chance_agreement=expected,
                    reason="chance agreement is 1 with these weights, so the coefficient is undefined",
                    **base,
                )
            )
            continue
        results.append(
            ChanceCorrected(
                value=(observed - expected) / (1.0 - expected),
                n_items=used,
                n_dropped=dropped,
                observed_agreement=observed,
                chance_agreement=expected,
                **base,
            )
        )
    return results


def gwet_ac(
    ratings: Ratings, *, weights: str = "identity", categories: Sequence[Value] | None = None
) -> ChanceCorrected:
    """Gwet's AC1 (identity weights) or AC2 (any other weights; numeric categories)."""
    # agreement() returns the result type of the coefficient it is asked for: ChanceCorrected here.
    return agreement(ratings, "gwet", weights=weights, categories=categories)  # type: ignore[return-value]


def brennan_prediger(
    ratings: Ratings, *, weights: str = "identity", categories: Sequence[Value] | None = None
) -> ChanceCorrected:
    # agreement() returns the result type of the coefficient it is asked for: ChanceCorrected here.
    return agreement(ratings, "brennan_prediger", weights=weights, categories=categories)  # type: ignore[return-value]


# --- any coefficient: once, per group, bootstrapped -------------------------------------------------

AgreementResult = FleissKappa | KrippendorffAlpha | PercentAgreement | ChanceCorrected


@dataclass(frozen=True)
class Coefficient:
    """Which coefficient to compute, and how: the level (Krippendorff), the weights and the scale's
    categories (Gwet, Brennan-Prediger)."""

    name: str = "fleiss"
    level: str = "nominal"
    weights: str = "identity"
    categories: Sequence[Value] | None = None

    def __post_init__(self) -> None:
        if self.name not in COEFFICIENTS:
            raise ValueError(f"unknown coefficient {self.name!r}; choose one of {', '.join(COEFFICIENTS)}")
        if self.level not in LEVELS:
            raise ValueError(f"unknown level {self.level!r}; choose one of {', '.join(LEVELS)}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"unknown weights {self.weights!r}; choose one of {', '.join(WEIGHTS)}")

    def table(self, ratings: Ratings) -> RatingTable:
        numbers = None
        if self.name == "krippendorff" and self.level != "nominal":
            numbers = f"{self.level} level"
        elif self.name in ("gwet", "brennan_prediger") and self.weights != "identity":
            numbers = f"{self.weights} weights"
        categories = self.categories if self.name in ("gwet", "brennan_prediger") else None
        table = rating_table(ratings, numbers=numbers, categories=categories)
        # With `numbers` set, rating_table checked that every value is a number.
        if numbers == "ratio level" and any(value < 0 for value in table.values):  # type: ignore[operator]
            raise ValueError("the ratio level needs non-negative numbers")
        return table

    def rows(self, table: RatingTable, rows: Rows) -> list[AgreementResult]:
        """The coefficient for each row of item weights."""
        if self.name == "fleiss":
            return list(_fleiss_rows(table, rows))
        if self.name == "krippendorff":
            return list(_krippendorff_rows(table, rows, self.level))
        if self.name == "percent":
            return list(_percent_rows(table, rows))
        return list(_chance_corrected_rows(table, rows, self.name, self.weights))


def agreement(
    ratings: Ratings,
    coefficient: str = "fleiss",
    *,
    level: str = "nominal",
    weights: str = "identity",
    categories: Sequence[Value] | None = None,
) -> AgreementResult:
    """One coefficient over `ratings` (item -> the values its raters gave; None is missing)."""
    spec = Coefficient(coefficient, level, weights, categories)
    table = spec.table(ratings)
    return spec.rows(table, all_rows(table.n_items))[0]


@dataclass(frozen=True)
class GroupAgreement:
    group: Hashable
    result: Any  # the coefficient's result object (value, n_items, n_dropped, reason, ...)

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "value": self.result.value,
            "n_items": self.result.n_items,
            "n_dropped": self.result.n_dropped,
            "reason": self.result.reason,
        }


@dataclass(frozen=True)
class GroupedAgreement:
    """A coefficient within each group, and the unweighted mean over the groups where it is defined
    (FEQA and FaithBench report agreement per system or per annotation batch, and their mean)."""

    coefficient: str
    groups: list[GroupAgreement]
    mean: float | None
    n_groups: int
    n_undefined: int
    level: str | None = None
    weights: str | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": self.coefficient,
            "level": self.level,
            "weights": self.weights,
            "groups": [group.as_dict() for group in self.groups],
            "mean": self.mean,
            "n_groups": self.n_groups,
            "n_undefined": self.n_undefined,
            "reason": self.reason,
        }


def grouped_agreement(
    coefficient: str,
    results: Iterable[tuple[Hashable, Any]],
    *,
    level: str | None = None,
    weights: str | None = None,
) -> GroupedAgreement:
    """Collect per-group results (anything with `value`, `n_items`, `n_dropped`, `reason`) with their mean."""
    groups = [GroupAgreement(group, result) for group, result in results]
    defined = [group.result.value for group in groups if group.result.value is not None]
    reason = "" if defined else "the coefficient is undefined in every group"
    if not groups:
        reason = "no groups"
    return GroupedAgreement(
        coefficient=coefficient,
        groups=groups,
        mean=sum(defined) / len(defined) if defined else None,
        n_groups=len(groups),
        n_undefined=len(groups) - len(defined),
        level=level,
        weights=weights,
        reason=reason,
    )


def group_codes(items: Sequence[Hashable], groups: Mapping[Hashable, Hashable]) -> tuple[list[Hashable], np.ndarray]:
    """The groups in order and the group index of every item; an item without a group is an error."""
    try:
        keys = list(map(groups.__getitem__, items))
    except KeyError:
        missing = [item for item in items if item not in groups]
        raise ValueError(f"{len(missing)} item(s) have no group, for example {missing[:3]!r}") from None
    order = _ordered(dict.fromkeys(keys))
    index = {group: position for position, group in enumerate(order)}
    return order, np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))


def agreement_by_group(
    ratings: Ratings,
    groups: Mapping[Hashable, Hashable],
    coefficient: str = "fleiss",
    *,
    level: str = "nominal",
    weights: str = "identity",
    categories: Sequence[Value] | None = None,
) -> GroupedAgreement:
    """The coefficient within each group of items (`groups`: item -> its group, e.g. the system), all
    groups in one pass over the ratings. A group whose items have a single rater is undefined, with the
    coefficient's own reason. Gwet's and Brennan-Prediger's q is the number of categories of all groups
    (or of `categories`), not of the values one group happens to use."""
    spec = Coefficient(coefficient, level, weights, categories)
    table = spec.table(ratings)
    order, codes = group_codes(table.items, groups)
    results = spec.rows(table, group_rows(codes, len(order)))
    return grouped_agreement(
        coefficient,
        zip(order, results, strict=True),
        level=level if coefficient == "krippendorff" else None,
        weights=weights if coefficient in ("gwet", "brennan_prediger") else None,
    )


def agreement_interval(
    ratings: Ratings,
    coefficient: str = "fleiss",
    *,
    level: str = "nominal",
    weights: str = "identity",
    categories: Sequence[Value] | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> BootstrapInterval:
    """Percentile bootstrap interval of the coefficient: items drawn with replacement (seeded), the
    coefficient recomputed on each resample; resamples where it is undefined are counted."""
    spec = Coefficient(coefficient, level, weights, categories)
    table = spec.table(ratings)
    if table.n_items == 0 or resamples <= 0:
        return BootstrapInterval(None, None, max(resamples, 0), max(resamples, 0), seed, reason="nothing to resample")
    rng = np.random.default_rng(seed)
    values = []
    for size in batch_sizes(resamples, table.n_items):
        for result in spec.rows(table, resample_rows(table.n_items, size, rng)):
            values.append(math.nan if result.value is None else result.value)
    return bootstrap_interval(np.array(values), resamples, seed)


# --- a metric as one more rater ---------------------------------------------------------------------


def bin_scores(
    scores: Mapping[Hashable, float | None], thresholds: Sequence[float], labels: Sequence[Value]
) -> tuple[dict[Hashable, Value], list[Hashable]]:
    """A metric's scores as the ordered `labels` of a task: below thresholds[0] the first label, from
    thresholds[i - 1] up to (not including) thresholds[i] the i-th, from the last threshold on the last.

    Returns the labels and the items whose score is missing (None or not a finite number), which get none.
    """
    if len(labels) != len(thresholds) + 1:
        raise ValueError(f"{len(labels)} labels need {len(labels) - 1} thresholds, got {len(thresholds)}")
    for position, threshold in enumerate(thresholds):
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
            raise ValueError(f"threshold {position + 1} must be a finite number, got {threshold!r}")
        if position and threshold <= thresholds[position - 1]:
            raise ValueError(
                f"thresholds must increase: threshold {position + 1} ({threshold!r}) is not above threshold "
                f"{position} ({thresholds[position - 1]!r})"
            )
    binned: dict[Hashable, Value] = {}
    missing: list[Hashable] = []
    cuts = np.array(thresholds, dtype=float)
    for item, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            missing.append(item)
            continue
        binned[item] = labels[int(np.searchsorted(cuts, score, side="right"))]
    return binned, missing


@dataclass(frozen=True)
class RaterComparison:
    """The metric against one reference rater (the human majority, or one annotator)."""

    rater: str
    n_items: int
    agreement: float | None  # share of items where both gave the same label
    coefficient: Any  # the coefficient with these two raters

    def as_dict(self) -> dict[str, object]:
        return {
            "rater": self.rater,
            "n_items": self.n_items,
            "agreement": self.agreement,
            "coefficient": self.coefficient.as_dict(),
        }


@dataclass(frozen=True)
class MetricAsRater:
    """Does the metric agree with humans as well as humans agree with each other? All on the items the
    metric labelled (`n_missing` had no metric label and are left out of every row)."""

    metric: str
    humans: Any
    with_metric: Any
    majority: RaterComparison
    annotators: list[RaterComparison]
    n_items: int
    n_missing: int

    def as_dict(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "n_items": self.n_items,
            "n_missing": self.n_missing,
            "humans": self.humans.as_dict(),
            "with_metric": self.with_metric.as_dict(),
            "majority": self.majority.as_dict(),
            "annotators": [row.as_dict() for row in self.annotators],
        }


def _compare(name: str, pairs: list[tuple[Value, Value]], compute: Callable[[Ratings], Any]) -> RaterComparison:
    same = sum(first == second for first, second in pairs)
    result = compute({index: [first, second] for index, (first, second) in enumerate(pairs)})
    return RaterComparison(name, len(pairs), same / len(pairs) if pairs else None, result)


def metric_as_rater(
    labelled: Mapping[Hashable, Mapping[str, Value | None]],
    metric_labels: Mapping[Hashable, Value],
    coefficient: str = "krippendorff",
    *,
    metric: str = "metric",
    level: str = "nominal",
    weights: str = "identity",
    categories: Sequence[Value] | None = None,
    reference: Mapping[Hashable, Value | None] | None = None,
    reference_name: str = "majority",
) -> MetricAsRater:
    """`labelled`: item -> annotator -> label; `metric_labels`: item -> the metric's label (bin_scores).

    Rows: the coefficient among the humans; with the metric as one more rater; the metric against the
    human reference label (`reference`, e.g. aggregated by a crowd model and named `reference_name`; by
    default the majority; items without one, e.g. a tie, are left out); the metric against each annotator.
    """
    spec = Coefficient(coefficient, level, weights, categories)

    def compute(ratings: Ratings) -> Any:
        return spec.rows(spec.table(ratings), all_rows(len(ratings)))[0]

    items = [item for item in labelled if item in metric_labels]
    humans = {item: [label for label in labelled[item].values() if label is not None] for item in items}
    with_metric = {item: [*humans[item], metric_labels[item]] for item in items}
    majority_pairs = []
    for item in items:
        majority = majority_label(humans[item]) if reference is None else reference.get(item)
        if majority is not None:
            majority_pairs.append((metric_labels[item], majority))
    annotators: dict[str, list[tuple[Value, Value]]] = {}
    for item in items:
        for annotator, label in labelled[item].items():
            if label is not None:
                annotators.setdefault(annotator, []).append((metric_labels[item], label))
    return MetricAsRater(
        metric=metric,
        humans=compute(humans),
        with_metric=compute(with_metric),
        majority=_compare(reference_name, majority_pairs, compute),
        annotators=[_compare(name, annotators[name], compute) for name in sorted(annotators)],
        n_items=len(items),
        n_missing=len(labelled) - len(items),
    )


# --- per item and per annotator ---------------------------------------------------------------------


def majority_label(labels: Iterable[Value | None]) -> Value | None:
    """The label chosen most often; None when two labels tie for the most votes (or there are none)."""
    return majority_of_counts(Counter(label for label in labels if label is not None))


def majority_of_counts(counts: Counter[Value]) -> Value | None:
    """majority_label from the votes already counted (label -> votes; labels with no votes do not count)."""
    top = counts.most_common(2)
    if not top or top[0][1] <= 0 or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


@dataclass(frozen=True)
class ItemAgreement:
    """One unit: who said what, the majority (None on a tie) and, on a numeric scale, the min-max spread."""

    item: Hashable
    labels: dict[str, Value]
    majority: Value | None
    agreement: float  # share of labels equal to the most frequent one (FEQA's per-item agreement)
    spread: float | None = None


@dataclass(frozen=True)
class AnnotatorAgreement:
    annotator: str
    n_judgements: int
    n_compared: int  # judgements on units with a majority
    agreement_with_majority: float | None
    # Against the others' majority only: this annotator's units with too few other raters, and those on
    # which the others tied (neither is compared).
    n_too_few: int = 0
    n_ties: int = 0
    reason: str = ""  # with others_only: which units were not compared, and why


def item_agreements(
    labelled: Mapping[Hashable, Mapping[str, Label | None]], numeric: Callable[[Label], float | None] | None = None
) -> list[ItemAgreement]:
    """Per unit table, most disagreed first (lowest agreement, then widest spread)."""
    rows = []
    for item, by_annotator in labelled.items():
        labels = [label for label in by_annotator.values() if label is not None]
        counts = Counter(labels)
        spread = None
        if numeric is not None:
            numbers = [number for number in map(numeric, labels) if number is not None]
            spread = max(numbers) - min(numbers) if numbers else None
        rows.append(
            ItemAgreement(
                item=item,
                labels=dict(by_annotator),
                majority=majority_label(labels),
                agreement=max(counts.values()) / len(labels) if labels else 0.0,
                spread=spread,
            )
        )
    rows.sort(key=lambda row: (row.agreement, -(row.spread or 0.0)))
    return rows


def annotator_agreements(
    labelled: Mapping[Hashable, Mapping[str, Value]], *, others_only: bool = False, min_others: int = 2
) -> list[AnnotatorAgreement]:
    """Per annotator: judgements made and the share that equals the unit's majority label.

    By default the majority includes the annotator's own label (it is the majority the item table shows);
    units with a single label or a tie have no majority and are not compared. With `others_only` each label
    is compared with the majority of the OTHER annotators of its unit, on units with at least `min_others`
    other labels (the annotator's own vote cannot make the majority it is measured against); units with
    fewer, or on which the others tie, are counted in `n_too_few` and `n_ties`.
    """
    outcomes = annotator_outcomes(labelled, others_only=others_only, min_others=min_others)
    return annotator_agreement_rows(outcomes, others_only=others_only, min_others=min_others)


# Per annotator, how many of their labels agreed, disagreed, met a tie and had too few others to compare.
Outcomes = dict[str, list[int]]


def annotator_outcomes(
    labelled: Mapping[Hashable, Mapping[str, Value]], *, others_only: bool = False, min_others: int = 2
) -> Outcomes:
    """The counts behind annotator_agreements (see there). Outcomes of disjoint units add up
    (add_outcomes), so tasks read apart can be pooled."""
    # One count per annotator and outcome; a unit's outcome depends only on its multiset of labels, and a
    # task has few of those: each label's majority to compare with is worked out once per multiset, so
    # hundreds of thousands of units cost a sort and a lookup each (the study page does this for every unit).
    totals: Outcomes = {}  # annotator -> count per outcome (_AGREED, _DISAGREED, _TIE, _TOO_FEW)
    majorities: dict[tuple[Value, ...], dict[Value, int]] = {}
    fewest = min_others + 1 if others_only else 2
    for by_annotator in labelled.values():
        labels = by_annotator.values()
        given = by_annotator if None not in labels else {a: lab for a, lab in by_annotator.items() if lab is not None}
        if len(given) < fewest:
            outcome_of = None
        else:
            key = tuple(_ordered(given.values()))
            outcome_of = majorities.get(key)
            if outcome_of is None:
                outcome_of = majorities[key] = _outcomes(key, others_only)
        for annotator, label in given.items():
            counts = totals.get(annotator)
            if counts is None:
                counts = totals[annotator] = [0, 0, 0, 0]
            counts[_TOO_FEW if outcome_of is None else outcome_of[label]] += 1
    return totals


def coded_annotator_outcomes(coded: CodedLabels, *, others_only: bool = False, min_others: int = 2) -> Outcomes:
    """annotator_outcomes of labels given as arrays, with array operations: per unit the votes for each
    label, then per judgement the majority it is compared with (the others' with `others_only`)."""
    width = max(len(coded.labels), 1)
    votes = np.bincount(coded.unit * width + coded.label, minlength=coded.n_units * width).reshape(coded.n_units, width)
    given = votes.sum(axis=1)[coded.unit]
    compared = votes[coded.unit]
    if others_only:
        compared[np.arange(coded.unit.size), coded.label] -= 1
    top = compared.max(axis=1, initial=0)
    tie = (top <= 0) | ((compared == top[:, None]).sum(axis=1) > 1)
    agreed = compared.argmax(axis=1) == coded.label
    outcome = np.where(tie, _TIE, np.where(agreed, _AGREED, _DISAGREED))
    outcome[given < (min_others + 1 if others_only else 2)] = _TOO_FEW
    counts = np.bincount(coded.annotator * 4 + outcome, minlength=len(coded.annotators) * 4).reshape(-1, 4)
    return {name: [int(n) for n in counts[index]] for index, name in enumerate(coded.annotators) if counts[index].any()}


def add_outcomes(*parts: Outcomes) -> Outcomes:
    """The outcomes of disjoint sets of units, pooled."""
    totals: Outcomes = {}
    for part in parts:
        for annotator, counts in part.items():
            pooled = totals.setdefault(annotator, [0, 0, 0, 0])
            for outcome, n in enumerate(counts):
                pooled[outcome] += n
    return totals


def annotator_agreement_rows(
    totals: Outcomes, *, others_only: bool = False, min_others: int = 2
) -> list[AnnotatorAgreement]:
    """AnnotatorAgreement rows, by annotator name, from their outcomes."""
    rows = []
    for annotator in sorted(totals):
        agreed, disagreed, tie, few = totals[annotator]
        compared = agreed + disagreed
        rows.append(
            AnnotatorAgreement(
                annotator=annotator,
                n_judgements=compared + tie + few,
                n_compared=compared,
                agreement_with_majority=agreed / compared if compared else None,
                n_too_few=few if others_only else 0,
                n_ties=tie if others_only else 0,
                reason=_not_compared_reason(few, tie, min_others) if others_only else "",
            )
        )
    return rows


_AGREED, _DISAGREED, _TIE, _TOO_FEW = range(4)


def _outcomes(labels: Sequence[Value], others_only: bool) -> dict[Value, int]:
    """For each label of a unit: agreed with, disagreed with, or no majority to compare with (a tie); the
    majority of all the unit's labels, or with `others_only` of the others' (one vote of the label out)."""

    def outcome(label: Value, majority: Value | None) -> int:
        return _TIE if majority is None else _AGREED if label == majority else _DISAGREED

    votes = Counter(labels)
    if not others_only:
        majority = majority_of_counts(votes)
        return {label: outcome(label, majority) for label in votes}
    result: dict[Value, int] = {}
    for label in votes:
        votes[label] -= 1
        result[label] = outcome(label, majority_of_counts(votes))
        votes[label] += 1
    return result


def _not_compared_reason(too_few: int, ties: int, min_others: int) -> str:
    parts = []
    if too_few:
        parts.append(f"{too_few} unit{'s' if too_few != 1 else ''} with fewer than {min_others} other raters")
    if ties:
        parts.append(f"{ties} unit{'s' if ties != 1 else ''} on which the other raters tie")
    return "; ".join(parts)
