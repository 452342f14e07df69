"""stats.tally: the study page's stored sums give the figures of the full computation."""

from __future__ import annotations

import random

import pytest

from stats.agreement import coded_annotator_outcomes, coded_fleiss_kappa, fleiss_kappa
from stats.tally import LabelTally, coded_tally, tally_fleiss_kappa, tally_json_add, tally_sum, units_tally
from tests.stats.test_agreement_math import coded

LABELS = ("correct", "incorrect", "dont_know")


def random_labelled(rng: random.Random, n_units: int, raters: str = "pqrstu") -> dict[int, dict[str, str]]:
    return {
        unit: {name: rng.choice(LABELS) for name in rng.sample(raters, rng.randint(1, min(5, len(raters))))}
        for unit in range(n_units)
    }


def same_kappa(tallied: object, full: object) -> None:
    """Equal but for the last bits of the observed agreement (summed as integers here, unit by unit there)."""
    assert tallied.n_items == full.n_items and tallied.n_dropped == full.n_dropped  # type: ignore[attr-defined]
    assert tallied.raters_per_item == full.raters_per_item and tallied.reason == full.reason  # type: ignore[attr-defined]
    assert tallied.category_proportions == full.category_proportions  # type: ignore[attr-defined]
    assert tallied.chance_agreement == full.chance_agreement  # type: ignore[attr-defined]
    for name in ("value", "observed_agreement"):
        expected = getattr(full, name)
        assert getattr(tallied, name) == (None if expected is None else pytest.approx(expected, rel=1e-12, abs=1e-12))


@pytest.mark.parametrize("seed", range(8))
def test_it_gives_fleiss_kappa_and_the_outcomes_of_the_full_computation(seed: int) -> None:
    rng = random.Random(seed)
    labelled = random_labelled(rng, rng.choice([1, 2, 3, 40, 900]))
    arrays = coded(labelled)
    tally = coded_tally(arrays, min_others=2)
    same_kappa(tally_fleiss_kappa(tally), coded_fleiss_kappa(arrays))
    same_kappa(tally_fleiss_kappa(tally), fleiss_kappa({u: list(labels.values()) for u, labels in labelled.items()}))
    assert tally.outcomes == coded_annotator_outcomes(arrays, others_only=True, min_others=2)
    # The per-unit builder (a submission's item) agrees with the array builder on the same units.
    assert units_tally(labelled.values(), min_others=2) == tally
    assert LabelTally.from_json(tally.as_json()) == tally


@pytest.mark.parametrize("seed", range(6))
def test_it_keeps_a_tally_equal_to_the_full_one_through_random_changes(seed: int) -> None:
    """Property: items (a few units each) are labelled, relabelled and emptied in random order; the tally kept
    by adding each item's tally after a change and taking away its tally before equals the tally of all
    labels, integer for integer, after every change."""
    rng = random.Random(100 + seed)
    items: dict[int, list[dict[str, str]]] = {item: [{} for _ in range(rng.randint(1, 4))] for item in range(30)}
    kept = LabelTally()
    for _ in range(300):
        item = rng.randrange(len(items))
        before = units_tally(items[item], min_others=2)
        annotator = rng.choice("pqrstu")
        if rng.random() < 0.2:  # withdrawn or excluded: the annotator's labels leave the item
            for unit in items[item]:
                unit.pop(annotator, None)
        else:
            for unit in items[item]:
                unit[annotator] = rng.choice(LABELS)
        after = units_tally(items[item], min_others=2)
        kept_json = kept.as_json()
        kept = tally_sum(tally_sum(kept, after), before, sign=-1)
        # The same change made in place on the stored form (what a submission does).
        tally_json_add(kept_json, after)
        tally_json_add(kept_json, before, sign=-1)
        assert LabelTally.from_json(kept_json) == kept
        every_unit = {
            (item_id, index): unit for item_id, units in items.items() for index, unit in enumerate(units) if unit
        }
        assert kept == coded_tally(coded(every_unit), min_others=2)
    same_kappa(tally_fleiss_kappa(kept), coded_fleiss_kappa(coded(every_unit)))


def test_it_has_no_kappa_from_an_empty_or_a_one_label_tally() -> None:
    assert tally_fleiss_kappa(LabelTally()) == coded_fleiss_kappa(coded({}))
    same = {unit: {"p": "correct", "q": "correct"} for unit in range(3)}
    same_kappa(tally_fleiss_kappa(coded_tally(coded(same), min_others=2)), coded_fleiss_kappa(coded(same)))
    assert tally_fleiss_kappa(coded_tally(coded(same), min_others=2)).value is None
