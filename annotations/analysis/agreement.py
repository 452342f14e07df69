"""Inter-annotator agreement. Plain Python: ratings in, dataclasses out; no Django here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
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
