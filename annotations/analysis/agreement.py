"""Inter-annotator agreement. Plain Python: ratings in, dataclasses out; no Django here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field


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


def fleiss_kappa(ratings: Mapping[Hashable, Sequence[str]]) -> FleissKappa:
    """Fleiss (1971) kappa. `ratings` maps each item to the labels its raters gave (one per rater).

    Fleiss' statistic needs the same number of raters n on every item; items with another number of
    labels (an unfinished item, a missing label) are dropped and counted in `n_dropped`.
    """
    sizes = Counter(len(labels) for labels in ratings.values() if labels)
    if not sizes:
        return FleissKappa(None, 0, len(ratings), 0, reason="no judgements yet")
    # The modal number of raters; on ties the larger one keeps more information per item.
    raters = max(sizes, key=lambda n: (sizes[n], n))
    used = [labels for labels in ratings.values() if len(labels) == raters]
    dropped = len(ratings) - len(used)
    if raters < 2:
        return FleissKappa(None, len(used), dropped, raters, reason="each item needs at least two raters")
    if len(used) < 2:
        return FleissKappa(None, len(used), dropped, raters, reason="at least two complete items are needed")

    category_totals: Counter[str] = Counter()
    observed_sum = 0.0
    for labels in used:
        counts = Counter(labels)
        category_totals.update(counts)
        observed_sum += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    total = len(used) * raters
    proportions = {category: count / total for category, count in sorted(category_totals.items())}
    observed = observed_sum / len(used)
    chance = sum(p * p for p in proportions.values())
    if chance >= 1.0:
        return FleissKappa(
            None,
            len(used),
            dropped,
            raters,
            observed_agreement=observed,
            chance_agreement=chance,
            category_proportions=proportions,
            reason="every judgement has the same label, so agreement beyond chance is undefined",
        )
    return FleissKappa(
        value=(observed - chance) / (1.0 - chance),
        n_items=len(used),
        n_dropped=dropped,
        raters_per_item=raters,
        observed_agreement=observed,
        chance_agreement=chance,
        category_proportions=proportions,
    )


# --- Krippendorff's alpha ---------------------------------------------------------------------------

LEVELS = ("nominal", "ordinal", "interval", "ratio")
Value = Hashable


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


def _coincidences(units: list[Counter[Value]]) -> dict[tuple[Value, Value], float]:
    """The coincidence matrix o_ck: every ordered pair of values within a unit, weighted 1 / (m_u - 1)."""
    matrix: dict[tuple[Value, Value], float] = Counter()
    for counts in units:
        weight = 1.0 / (sum(counts.values()) - 1)
        for first, n_first in counts.items():
            for second, n_second in counts.items():
                pairs = n_first * (n_second - 1) if first == second else n_first * n_second
                if pairs:
                    matrix[(first, second)] += pairs * weight
    return matrix


def _difference(level: str, totals: dict[Value, float]) -> Callable[[Value, Value], float]:
    """The squared difference function delta^2 of each level of measurement."""
    if level == "nominal":
        return lambda c, k: 0.0 if c == k else 1.0
    if level == "interval":
        return lambda c, k: (float(c) - float(k)) ** 2  # type: ignore[arg-type]
    if level == "ratio":
        return lambda c, k: 0.0 if c == k else ((float(c) - float(k)) / (float(c) + float(k))) ** 2  # type: ignore[arg-type]
    # Ordinal: the distance between two ranks is the number of values between them, by their frequencies.
    ordered = sorted(totals)  # type: ignore[type-var]
    cumulative: dict[Value, float] = {}
    running = 0.0
    for value in ordered:
        cumulative[value] = running
        running += totals[value]

    def ordinal(c: Value, k: Value) -> float:
        low, high = (c, k) if cumulative[c] <= cumulative[k] else (k, c)
        between = cumulative[high] + totals[high] - cumulative[low]
        return (between - (totals[c] + totals[k]) / 2.0) ** 2

    return ordinal


def krippendorff_alpha(ratings: Mapping[Hashable, Sequence[Value | None]], level: str = "nominal") -> KrippendorffAlpha:
    """Alpha = 1 - D_o / D_e over the pairable values; `None` values are missing.

    Values of the ordinal, interval and ratio levels must be numbers (ordinal only uses their order).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    units = [Counter(value for value in values if value is not None) for values in ratings.values()]
    pairable = [counts for counts in units if sum(counts.values()) >= 2]
    dropped = len(units) - len(pairable)
    if not pairable:
        return KrippendorffAlpha(
            None, level, 0, dropped, reason="no unit has two or more values, so nothing can be compared"
        )
    if level != "nominal":
        for counts in pairable:
            for value in counts:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"the {level} level needs numbers, got {value!r}")
    coincidences = _coincidences(pairable)
    totals: dict[Value, float] = Counter()
    for (first, _), weight in coincidences.items():
        totals[first] += weight
    n = sum(totals.values())
    if len(totals) < 2:
        return KrippendorffAlpha(
            None,
            level,
            len(pairable),
            dropped,
            n_values=round(n),
            reason=f"every value is {next(iter(totals))!r}: with one value in use, agreement beyond chance is "
            "undefined",
        )
    delta = _difference(level, totals)
    observed = sum(weight * delta(c, k) for (c, k), weight in coincidences.items()) / n
    expected = sum(totals[c] * totals[k] * delta(c, k) for c in totals for k in totals) / (n * (n - 1))
    if expected == 0.0:
        return KrippendorffAlpha(
            None, level, len(pairable), dropped, n_values=round(n), reason="no expected disagreement"
        )
    return KrippendorffAlpha(
        value=1.0 - observed / expected,
        level=level,
        n_items=len(pairable),
        n_dropped=dropped,
        n_values=round(n),
        observed_disagreement=observed,
        expected_disagreement=expected,
    )


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


def percent_agreement(ratings: Mapping[Hashable, Sequence[Value | None]]) -> PercentAgreement:
    shares = []
    for values in ratings.values():
        counts = Counter(value for value in values if value is not None)
        total = sum(counts.values())
        if total >= 2:
            shares.append(max(counts.values()) / total)
    dropped = len(ratings) - len(shares)
    if not shares:
        return PercentAgreement(None, 0, dropped, reason="no item has two or more labels")
    return PercentAgreement(100.0 * sum(shares) / len(shares), len(shares), dropped)


# --- per item and per annotator ---------------------------------------------------------------------


def majority_label(labels: Iterable[Value | None]) -> Value | None:
    """The label chosen most often; None when two labels tie for the most votes (or there are none)."""
    counts = Counter(label for label in labels if label is not None).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


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


def item_agreements(
    labelled: Mapping[Hashable, Mapping[str, Value]], numeric: Callable[[Value], float | None] | None = None
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


def annotator_agreements(labelled: Mapping[Hashable, Mapping[str, Value]]) -> list[AnnotatorAgreement]:
    """Per annotator: judgements made and the share that equals the unit's majority label.

    The majority includes the annotator's own label (it is the majority the item table shows); units
    with a single label or a tie have no majority and are not compared.
    """
    made: Counter[str] = Counter()
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    for by_annotator in labelled.values():
        made.update(annotator for annotator, label in by_annotator.items() if label is not None)
        if sum(1 for label in by_annotator.values() if label is not None) < 2:
            continue
        majority = majority_label(by_annotator.values())
        if majority is None:
            continue
        for annotator, label in by_annotator.items():
            if label is not None:
                compared[annotator] += 1
                agreed[annotator] += label == majority
    return [
        AnnotatorAgreement(
            annotator=annotator,
            n_judgements=made[annotator],
            n_compared=compared[annotator],
            agreement_with_majority=agreed[annotator] / compared[annotator] if compared[annotator] else None,
        )
        for annotator in sorted(made)
    ]
