"""A task's labels summed per unit size: what Fleiss' kappa and each annotator's agreement with the others'
majority need, kept small enough to store and cheap enough to update per submission. Plain Python (no Django).

Fleiss' kappa over units labelled by n raters needs, per n, the number of units, the sum over them of the
squared votes per label and the votes per label (Fleiss 1971); an annotator's agreement with the majority of
the other raters of a unit depends only on that unit's labels. Both are sums over units, so the tally of a
set of units is the sum of the tallies of its parts: a submission changes a task's tally by the difference
between its item's tally after and before (`tally_sum(total, after, before, sign=-1)`), and the tally built
from every label (`coded_tally`) equals the one kept up to date that way, integer for integer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stats.agreement import (
    CodedLabels,
    FleissKappa,
    Outcomes,
    annotator_outcomes,
    coded_annotator_outcomes,
    fleiss_result,
)


@dataclass(frozen=True)
class LabelTally:
    """Sums over a task's units. `units[n]`: units with n labels; `squares[n]`: over those units, the sum of
    each label's votes squared; `votes[n][label]`: their votes for the label; `outcomes`: per annotator, the
    counts stats.agreement.annotator_outcomes gives against the others' majority (agreed, disagreed, tie,
    too few others). Zero entries are left out, so equal sums are equal tallies."""

    units: dict[int, int] = field(default_factory=dict)
    squares: dict[int, int] = field(default_factory=dict)
    votes: dict[int, dict[str, int]] = field(default_factory=dict)
    outcomes: Outcomes = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """JSON-ready (object keys are strings)."""
        return {
            "units": {str(n): count for n, count in self.units.items()},
            "squares": {str(n): total for n, total in self.squares.items()},
            "votes": {str(n): dict(per_label) for n, per_label in self.votes.items()},
            "outcomes": {annotator: list(counts) for annotator, counts in self.outcomes.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LabelTally:
        return cls(
            units={int(n): int(count) for n, count in data["units"].items()},
            squares={int(n): int(total) for n, total in data["squares"].items()},
            votes={int(n): {str(label): int(v) for label, v in per.items()} for n, per in data["votes"].items()},
            outcomes={str(annotator): [int(c) for c in counts] for annotator, counts in data["outcomes"].items()},
        )


def _add(total: dict[Any, int], part: Mapping[Any, int], sign: int) -> None:
    for key, value in part.items():
        summed = total.get(key, 0) + sign * value
        if summed:
            total[key] = summed
        else:
            total.pop(key, None)


def tally_sum(first: LabelTally, *parts: LabelTally, sign: int = 1) -> LabelTally:
    """`first` plus (`sign` 1) or minus (-1) each of `parts`."""
    units, squares = dict(first.units), dict(first.squares)
    votes = {n: dict(per_label) for n, per_label in first.votes.items()}
    outcomes = {annotator: list(counts) for annotator, counts in first.outcomes.items()}
    for part in parts:
        _add(units, part.units, sign)
        _add(squares, part.squares, sign)
        for n, per_label in part.votes.items():
            _add(votes.setdefault(n, {}), per_label, sign)
        for annotator, counts in part.outcomes.items():
            pooled = outcomes.setdefault(annotator, [0, 0, 0, 0])
            for outcome, count in enumerate(counts):
                pooled[outcome] += sign * count
    return LabelTally(
        units=units,
        squares=squares,
        votes={n: per_label for n, per_label in votes.items() if per_label},
        outcomes={annotator: counts for annotator, counts in outcomes.items() if any(counts)},
    )


def units_tally(units: Iterable[Mapping[str, str]], *, min_others: int) -> LabelTally:
    """The tally of a few units (annotator -> label each), e.g. one item's: plain Python."""
    labelled: dict[Hashable, Mapping[str, str]] = dict(enumerate(units))
    tally_units: Counter[int] = Counter()
    squares: Counter[int] = Counter()
    votes: dict[int, Counter[str]] = {}
    for by_annotator in labelled.values():
        counts = Counter(by_annotator.values())
        size = sum(counts.values())
        if not size:
            continue
        tally_units[size] += 1
        squares[size] += sum(count * count for count in counts.values())
        votes.setdefault(size, Counter()).update(counts)
    outcomes = annotator_outcomes(labelled, others_only=True, min_others=min_others)
    return LabelTally(
        units=dict(tally_units),
        squares=dict(squares),
        votes={size: dict(per_label) for size, per_label in votes.items()},
        outcomes={annotator: counts for annotator, counts in outcomes.items() if any(counts)},
    )


def coded_tally(coded: CodedLabels, *, min_others: int) -> LabelTally:
    """The tally of every unit of labels given as arrays (a task's hundreds of thousands of judgements)."""
    width = max(len(coded.labels), 1)
    votes = np.bincount(coded.unit * width + coded.label, minlength=coded.n_units * width).reshape(coded.n_units, width)
    raters = votes.sum(axis=1)
    squares = (votes * votes).sum(axis=1)
    tally_units: dict[int, int] = {}
    tally_squares: dict[int, int] = {}
    tally_votes: dict[int, dict[str, int]] = {}
    for size in np.unique(raters[raters > 0]):
        members = raters == size
        tally_units[int(size)] = int(members.sum())
        tally_squares[int(size)] = int(squares[members].sum())
        per_label = votes[members].sum(axis=0)
        tally_votes[int(size)] = {str(coded.labels[c]): int(n) for c, n in enumerate(per_label) if n}
    return LabelTally(
        units=tally_units,
        squares=tally_squares,
        votes=tally_votes,
        outcomes=coded_annotator_outcomes(coded, others_only=True, min_others=min_others),
    )


def tally_fleiss_kappa(tally: LabelTally) -> FleissKappa:
    """Fleiss' kappa from a tally: the same rules as stats.agreement.fleiss_kappa (the units of the modal
    number of raters, the larger number on a tie; the others dropped), the same figures to rounding (the
    observed agreement is summed here as integers, there unit by unit)."""
    total = sum(tally.units.values())
    if not tally.units:
        return FleissKappa(None, 0, total, 0, reason="no judgements yet")
    n_raters = max(tally.units, key=lambda size: (tally.units[size], size))
    used = tally.units[n_raters]
    dropped = total - used
    if n_raters < 2:
        return FleissKappa(None, used, dropped, n_raters, reason="each item needs at least two raters")
    if used < 2:
        return FleissKappa(None, used, dropped, n_raters, reason="at least two complete items are needed")
    # The order stats.agreement gives labels (they are texts here), so that the chance agreement sums alike.
    values = sorted({label for per_label in tally.votes.values() for label in per_label})
    modal_votes = tally.votes.get(n_raters, {})
    proportions_array = np.array([modal_votes.get(value, 0) for value in values], dtype=np.float64) / float(
        used * n_raters
    )
    proportions = {value: float(p) for value, p in zip(values, proportions_array, strict=True) if p > 0}
    observed = (tally.squares[n_raters] - n_raters * used) / (n_raters * (n_raters - 1)) / used
    chance = float(np.sum(proportions_array**2))
    return fleiss_result(observed, chance, used, dropped, n_raters, proportions)


def tally_json_add(data: dict[str, Any], part: LabelTally, *, sign: int = 1) -> None:
    """Add (`sign` 1) or take away (-1) `part` in place to a tally in its JSON form (LabelTally.as_json), the
    same as tally_sum: only `part`'s keys are touched, so a submission costs what its item holds, not what
    its task holds (hundreds of annotators)."""
    _add(data["units"], {str(n): count for n, count in part.units.items()}, sign)
    _add(data["squares"], {str(n): total for n, total in part.squares.items()}, sign)
    for n, per_label in part.votes.items():
        votes = data["votes"].setdefault(str(n), {})
        _add(votes, per_label, sign)
        if not votes:
            del data["votes"][str(n)]
    for annotator, counts in part.outcomes.items():
        pooled = data["outcomes"].setdefault(annotator, [0, 0, 0, 0])
        for outcome, count in enumerate(counts):
            pooled[outcome] += sign * count
        if not any(pooled):
            del data["outcomes"][annotator]
