"""Comparing a study's conditions (issue 16 point 2): the same task judged under two or more conditions (metric
highlights shown, hidden or shuffled; other guidelines). No Django: labels, times and final labels in, frozen
dataclasses out.

Every condition is compared with the first one, the reference:
- the label distribution, with Pearson's chi-square test of homogeneity (no continuity correction);
- agreement within the condition (Krippendorff's alpha, nominal; Fleiss' kappa where every unit has as many
  raters) and the difference of alphas, with percentile bootstrap intervals that resample items (a unit is
  drawn with its item, and an item shared by both conditions is drawn for both at once);
- the time spent per item (median, mean);
- agreement with the final labels (the share of judgements equal to the unit's final label) and a permutation
  test of the difference: the conditions are shuffled over the unit the design randomized, whole annotators
  in a between-annotator design, each annotator's own assignments in a within-annotator design.

Undefined figures are None with a reason, never a number (one condition without judgements, a single rater,
no final labels, ...). Resampling is seeded (stats.resampling).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, median
from typing import cast

import numpy as np
from scipy import sparse

from stats.agreement import Coefficient, FleissKappa, KrippendorffAlpha, fleiss_kappa, krippendorff_alpha
from stats.resampling import BootstrapInterval, batch_sizes, bootstrap_interval, resample_counts

BETWEEN = "between"
WITHIN = "within"
DESIGNS = (BETWEEN, WITHIN)
# The unit of randomization of each design: what the permutation test shuffles the conditions over.
RANDOMIZED_UNITS = {BETWEEN: "annotator", WITHIN: "assignment within annotator"}
# Below this expected count in a cell, the chi-square approximation is rough (Cochran's rule of thumb).
SMALL_EXPECTED = 5.0

# A unit is (item, its index within the item): the keys of analysis.selectors.analysis.unit_labels.
Unit = tuple[Hashable, int]
NO_GOLD = "no final labels yet: compute them on the adjudication page"


@dataclass(frozen=True)
class ConditionLabels:
    """One condition's submitted work on one task: unit -> annotator -> label, and (item, annotator) -> the
    seconds the annotator spent on the item."""

    name: str
    labels: Mapping[Unit, Mapping[str, str]]
    seconds: Mapping[tuple[Hashable, str], float]


# --- results ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelDistribution:
    counts: dict[str, int]  # label -> judgements with it
    proportions: dict[str, float]
    n_judgements: int

    def rows(self) -> list[tuple[str, int, float]]:
        """(label, count, proportion) in label order, for tables."""
        return [(label, count, self.proportions[label]) for label, count in self.counts.items()]

    def as_dict(self) -> dict[str, object]:
        return {"counts": self.counts, "proportions": self.proportions, "n_judgements": self.n_judgements}


@dataclass(frozen=True)
class ChiSquare:
    """Pearson's chi-square test of homogeneity of two label distributions (None with a reason when undefined);
    `note` warns when an expected count is below SMALL_EXPECTED."""

    statistic: float | None
    dof: int | None
    p_value: float | None
    reason: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "statistic": self.statistic,
            "dof": self.dof,
            "p_value": self.p_value,
            "reason": self.reason,
            "note": self.note,
        }


@dataclass(frozen=True)
class TimePerItem:
    """Seconds of active work per item (per assignment); items without a recorded time are left out."""

    n: int
    median: float | None
    mean: float | None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"n": self.n, "median": self.median, "mean": self.mean, "reason": self.reason}


@dataclass(frozen=True)
class GoldAgreement:
    """The share of judgements equal to their unit's final label, over the units that have one."""

    n_judgements: int
    n_equal: int
    proportion: float | None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "n_judgements": self.n_judgements,
            "n_equal": self.n_equal,
            "proportion": self.proportion,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ConditionSummary:
    name: str
    n_annotators: int
    n_items: int
    n_units: int
    distribution: LabelDistribution
    alpha: KrippendorffAlpha
    alpha_interval: BootstrapInterval
    fleiss: FleissKappa
    time: TimePerItem
    gold: GoldAgreement

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "n_annotators": self.n_annotators,
            "n_items": self.n_items,
            "n_units": self.n_units,
            "n_judgements": self.distribution.n_judgements,
            "distribution": self.distribution.as_dict(),
            "alpha": self.alpha.as_dict(),
            "alpha_interval": self.alpha_interval.as_dict(),
            "fleiss": self.fleiss.as_dict(),
            "time": self.time.as_dict(),
            "gold": self.gold.as_dict(),
        }


@dataclass(frozen=True)
class Difference:
    """A figure of a condition minus the reference's, with its bootstrap interval when one is drawn."""

    value: float | None
    interval: BootstrapInterval | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "interval": self.interval.as_dict() if self.interval is not None else None,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class PermutationTest:
    """The difference of the shares equal to the final labels, and the share of `n_permutations` seeded
    permutations of the conditions over `randomized` whose absolute difference is at least the observed one
    (add-one: (n_extreme + 1) / (n_permutations + 1))."""

    difference: float | None
    p_value: float | None
    n_permutations: int
    n_extreme: int
    seed: int
    randomized: str
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "difference": self.difference,
            "p_value": self.p_value,
            "n_permutations": self.n_permutations,
            "n_extreme": self.n_extreme,
            "seed": self.seed,
            "randomized": self.randomized,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ConditionContrast:
    """One condition against the reference condition."""

    name: str
    reference: str
    homogeneity: ChiSquare
    alpha: Difference
    time_median: Difference
    time_mean: Difference
    gold: PermutationTest

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "reference": self.reference,
            "homogeneity": self.homogeneity.as_dict(),
            "alpha_difference": self.alpha.as_dict(),
            "time_median_difference": self.time_median.as_dict(),
            "time_mean_difference": self.time_mean.as_dict(),
            "gold_difference": self.gold.as_dict(),
        }


@dataclass(frozen=True)
class ConditionComparison:
    design: str
    reference: str | None
    conditions: list[ConditionSummary]
    contrasts: list[ConditionContrast]
    resamples: int
    seed: int
    has_gold: bool
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "design": self.design,
            "reference": self.reference,
            "randomized": RANDOMIZED_UNITS[self.design],
            "resamples": self.resamples,
            "seed": self.seed,
            "has_gold": self.has_gold,
            "conditions": [condition.as_dict() for condition in self.conditions],
            "contrasts": [contrast.as_dict() for contrast in self.contrasts],
            "reason": self.reason,
        }


# --- the pieces -------------------------------------------------------------------------------------


def label_distribution(labels: Mapping[Unit, Mapping[str, str]]) -> LabelDistribution:
    """How often each label was given (labels in sorted order)."""
    counts: dict[str, int] = {}
    for by_annotator in labels.values():
        for label in by_annotator.values():
            counts[label] = counts.get(label, 0) + 1
    total = sum(counts.values())
    ordered = dict(sorted(counts.items()))
    return LabelDistribution(ordered, {label: count / total for label, count in ordered.items()}, total)


def homogeneity_test(first: LabelDistribution, second: LabelDistribution) -> ChiSquare:
    """Pearson's chi-square test that two conditions share one label distribution (labels neither used are
    left out)."""
    if first.n_judgements == 0 or second.n_judgements == 0:
        return ChiSquare(None, None, None, reason="a condition has no judgements")
    labels = sorted(set(first.counts) | set(second.counts))
    if len(labels) < 2:
        return ChiSquare(None, None, None, reason=f"every judgement of both is {labels[0]!r}: nothing to compare")
    from scipy import stats  # scipy.stats takes a second or more to import: only the code that computes pays

    table = np.array([[first.counts.get(label, 0), second.counts.get(label, 0)] for label in labels]).T
    result = stats.chi2_contingency(table, correction=False)
    small = int((result.expected_freq < SMALL_EXPECTED).sum())
    note = f"{small} expected count(s) below {SMALL_EXPECTED:g}: the p-value is rough" if small else ""
    return ChiSquare(float(result.statistic), int(result.dof), float(result.pvalue), note=note)


def time_per_item(seconds: Mapping[tuple[Hashable, str], float]) -> TimePerItem:
    """Median and mean seconds per item over the assignments with a recorded (positive) time."""
    recorded = [value for value in seconds.values() if value > 0 and math.isfinite(value)]
    if not recorded:
        return TimePerItem(0, None, None, reason="no time recorded")
    return TimePerItem(len(recorded), float(median(recorded)), fmean(recorded))


def gold_agreement(labels: Mapping[Unit, Mapping[str, str]], gold: Mapping[Unit, str | None]) -> GoldAgreement:
    """The share of judgements equal to their unit's final label (units without one are left out)."""
    if not any(label is not None for label in gold.values()):
        return GoldAgreement(0, 0, None, reason=NO_GOLD)
    total = equal = 0
    for unit, by_annotator in labels.items():
        final = gold.get(unit)
        if final is None:
            continue
        total += len(by_annotator)
        equal += sum(label == final for label in by_annotator.values())
    if total == 0:
        return GoldAgreement(0, 0, None, reason="no judgement of this condition is on a unit with a final label")
    return GoldAgreement(total, equal, equal / total)


def equal_raters_fleiss(labels: Mapping[Unit, Mapping[str, str]]) -> FleissKappa:
    """Fleiss' kappa when every unit has the same number of raters; otherwise undefined, saying so."""
    sizes = sorted({len(by_annotator) for by_annotator in labels.values()})
    if len(sizes) > 1:
        reason = f"units have different numbers of raters ({', '.join(map(str, sizes))}): use Krippendorff's alpha"
        return FleissKappa(None, 0, len(labels), 0, reason=reason)
    return fleiss_kappa({unit: list(by_annotator.values()) for unit, by_annotator in labels.items()})


def _difference(value: float | None, reference: float | None, what: str, names: tuple[str, str]) -> Difference:
    """value - reference, or why not: `names` are the condition's and the reference's."""
    if value is not None and reference is not None:
        return Difference(value - reference)
    undefined = [name for name, figure in zip(names, (value, reference), strict=True) if figure is None]
    return Difference(None, reason=f"the {what} of {' and '.join(undefined)} is undefined")


# --- bootstrap of alpha, items resampled --------------------------------------------------------------

KRIPPENDORFF = Coefficient("krippendorff", "nominal")


def alpha_resamples(
    conditions: Sequence[Mapping[Unit, Mapping[str, str]]], *, resamples: int, seed: int
) -> list[np.ndarray]:
    """Nominal Krippendorff's alpha of each condition on `resamples` seeded resamples of the items of all
    conditions together (NaN where undefined): an item drawn k times weighs each of its units k times in every
    condition that judged it, so conditions sharing items are resampled in pairs."""
    items = list(dict.fromkeys(unit[0] for labels in conditions for unit in labels))
    index = {item: position for position, item in enumerate(items)}
    tables, spreads = [], []
    for labels in conditions:
        table = KRIPPENDORFF.table({unit: list(by_annotator.values()) for unit, by_annotator in labels.items()})
        # Which item each unit of the table belongs to: (items x units), so that item counts @ spread = unit weights.
        units = cast("list[Unit]", table.items)  # the keys given to table(): units
        of_item = np.fromiter((index[unit[0]] for unit in units), dtype=np.int64, count=table.n_items)
        spread = sparse.csr_matrix(
            (np.ones(table.n_items), (of_item, np.arange(table.n_items))), shape=(len(items), table.n_items)
        )
        tables.append(table)
        spreads.append(spread)
    values: list[list[float]] = [[] for _ in conditions]
    if not items:
        return [np.full(resamples, math.nan) for _ in conditions]
    rng = np.random.default_rng(seed)
    for size in batch_sizes(resamples, len(items)):
        drawn = sparse.csr_matrix(resample_counts(len(items), size, rng))
        for position, (table, spread) in enumerate(zip(tables, spreads, strict=True)):
            for result in KRIPPENDORFF.rows(table, drawn @ spread):
                values[position].append(math.nan if result.value is None else result.value)
    return [np.array(row, dtype=float) for row in values]


# --- the permutation test of agreement with the final labels -----------------------------------------


def permutation_p_value(
    correct: np.ndarray,
    total: np.ndarray,
    treated: np.ndarray,
    strata: np.ndarray,
    *,
    permutations: int,
    seed: int,
) -> tuple[float, float, int]:
    """Observed |share correct among treated - share among the others| over randomization units (each with
    `correct` of `total` judgements equal to the final label), the add-one p-value of `permutations` seeded
    shuffles of `treated` within each stratum, and how many shuffles were at least as extreme. Every unit needs
    total > 0, and both groups at least one unit."""
    correct, total, treated = correct.astype(float), total.astype(float), treated.astype(bool)
    all_correct, all_total = correct.sum(), total.sum()

    def statistic(in_group_correct: np.ndarray, in_group_total: np.ndarray) -> np.ndarray:
        out_correct, out_total = all_correct - in_group_correct, all_total - in_group_total
        return np.asarray(np.abs(in_group_correct / in_group_total - out_correct / out_total))

    observed = float(statistic(np.array([correct[treated].sum()]), np.array([total[treated].sum()]))[0])
    # As scipy.stats.permutation_test: shuffled statistics equal to the observed one up to rounding count.
    tolerance = abs(observed) * np.finfo(float).eps * 100
    # A stratum whose units are all in one group adds the same to every shuffle: only mixed strata are shuffled.
    mixed = [
        members
        for members in (np.flatnonzero(strata == value) for value in np.unique(strata))
        if 0 < treated[members].sum() < members.size
    ]
    shuffled = np.concatenate(mixed) if mixed else np.zeros(0, dtype=np.int64)
    fixed = np.ones(correct.size, dtype=bool)
    fixed[shuffled] = False
    fixed_correct, fixed_total = correct[fixed & treated].sum(), total[fixed & treated].sum()
    rng = np.random.default_rng(seed)
    extreme = 0
    for size in batch_sizes(permutations, max(shuffled.size, 1)):
        in_correct, in_total = np.full(size, fixed_correct), np.full(size, fixed_total)
        for members in mixed:
            # Each row: as many of the stratum's units as it has treated ones, drawn at random (the positions of
            # the smallest of uniform keys: a uniform subset, in linear time).
            count = int(treated[members].sum())
            chosen = np.argpartition(rng.random((size, members.size)), count - 1, axis=1)[:, :count]
            in_correct += correct[members][chosen].sum(axis=1)
            in_total += total[members][chosen].sum(axis=1)
        extreme += int((statistic(in_correct, in_total) >= observed - tolerance).sum())
    return observed, (extreme + 1) / (permutations + 1), extreme


def gold_permutation_test(
    reference: Mapping[Unit, Mapping[str, str]],
    other: Mapping[Unit, Mapping[str, str]],
    gold: Mapping[Unit, str | None],
    *,
    design: str,
    permutations: int,
    seed: int,
) -> PermutationTest:
    """The permutation test of `other`'s share of judgements equal to the final labels minus `reference`'s.
    Between annotators the conditions are shuffled over whole annotators (each annotator's judgements of a
    condition are one block); within annotators over each annotator's own assignments (item, annotator)."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; choose one of {', '.join(DESIGNS)}")
    randomized = RANDOMIZED_UNITS[design]
    if not any(label is not None for label in gold.values()):
        return PermutationTest(None, None, 0, 0, seed, randomized, reason=NO_GOLD)
    blocks: dict[tuple[Hashable, ...], list[int]] = {}
    for treated, labels in ((0, reference), (1, other)):
        for unit, by_annotator in labels.items():
            final = gold.get(unit)
            if final is None:
                continue
            for annotator, label in by_annotator.items():
                key = (treated, annotator) if design == BETWEEN else (treated, annotator, unit[0])
                block = blocks.setdefault(key, [0, 0])
                block[0] += label == final
                block[1] += 1
    keys = list(blocks)
    group = np.array([key[0] for key in keys], dtype=bool)
    if group.all() or not group.any():
        reason = "one of the conditions has no judgement on a unit with a final label"
        return PermutationTest(None, None, 0, 0, seed, randomized, reason=reason)
    if permutations <= 0:
        return PermutationTest(None, None, 0, 0, seed, randomized, reason="no permutations asked for")
    if design == WITHIN and not {key[1] for key in keys if key[0]} & {key[1] for key in keys if not key[0]}:
        reason = "no annotator has judgements in both conditions: within annotators there is nothing to shuffle"
        return PermutationTest(None, None, 0, 0, seed, randomized, reason=reason)
    strata_names = {name: position for position, name in enumerate(dict.fromkeys(key[1] for key in keys))}
    strata = (
        np.zeros(len(keys), dtype=np.int64)
        if design == BETWEEN
        else np.array([strata_names[key[1]] for key in keys], dtype=np.int64)
    )
    counts = np.array([blocks[key] for key in keys], dtype=float)
    _, p_value, extreme = permutation_p_value(
        counts[:, 0], counts[:, 1], group, strata, permutations=permutations, seed=seed
    )
    treated_share = counts[group, 0].sum() / counts[group, 1].sum()
    reference_share = counts[~group, 0].sum() / counts[~group, 1].sum()
    return PermutationTest(float(treated_share - reference_share), p_value, permutations, extreme, seed, randomized)


# --- the whole comparison -----------------------------------------------------------------------------


def compare_conditions(
    conditions: Sequence[ConditionLabels],
    *,
    gold: Mapping[Unit, str | None] | None = None,
    design: str = BETWEEN,
    resamples: int = 1000,
    seed: int = 0,
) -> ConditionComparison:
    """Every condition of one task, and each against the first (the reference). `gold`: unit -> its final
    label (None: unresolved). `resamples` bootstrap resamples and permutations, seeded with `seed`."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; choose one of {', '.join(DESIGNS)}")
    finals = gold or {}
    has_gold = any(label is not None for label in finals.values())
    if len(conditions) < 2:
        return ConditionComparison(design, None, [], [], resamples, seed, has_gold, reason="fewer than two conditions")
    alphas = alpha_resamples([condition.labels for condition in conditions], resamples=resamples, seed=seed)
    summaries = []
    for condition, values in zip(conditions, alphas, strict=True):
        alpha = krippendorff_alpha(
            {unit: list(by_annotator.values()) for unit, by_annotator in condition.labels.items()}, "nominal"
        )
        summaries.append(
            ConditionSummary(
                name=condition.name,
                n_annotators=len({name for by_annotator in condition.labels.values() for name in by_annotator}),
                n_items=len({unit[0] for unit in condition.labels}),
                n_units=len(condition.labels),
                distribution=label_distribution(condition.labels),
                alpha=alpha,
                alpha_interval=_interval(values, alpha, resamples, seed),
                fleiss=equal_raters_fleiss(condition.labels),
                time=time_per_item(condition.seconds),
                gold=gold_agreement(condition.labels, finals),
            )
        )
    reference = summaries[0]
    contrasts = []
    for position in range(1, len(conditions)):
        summary = summaries[position]
        names = (summary.name, reference.name)
        alpha_difference = _difference(summary.alpha.value, reference.alpha.value, "alpha", names)
        if alpha_difference.value is not None:
            differences = alphas[position] - alphas[0]
            alpha_difference = Difference(alpha_difference.value, bootstrap_interval(differences, resamples, seed))
        contrasts.append(
            ConditionContrast(
                name=summary.name,
                reference=reference.name,
                homogeneity=homogeneity_test(reference.distribution, summary.distribution),
                alpha=alpha_difference,
                time_median=_difference(summary.time.median, reference.time.median, "time per item", names),
                time_mean=_difference(summary.time.mean, reference.time.mean, "time per item", names),
                gold=gold_permutation_test(
                    conditions[0].labels,
                    conditions[position].labels,
                    finals,
                    design=design,
                    permutations=resamples,
                    seed=seed,
                ),
            )
        )
    return ConditionComparison(design, reference.name, summaries, contrasts, resamples, seed, has_gold)


def _interval(values: np.ndarray, alpha: KrippendorffAlpha, resamples: int, seed: int) -> BootstrapInterval:
    if alpha.value is None:
        return BootstrapInterval(None, None, resamples, resamples, seed, reason=f"alpha is undefined: {alpha.reason}")
    return bootstrap_interval(values, resamples, seed)
