"""The hand-written coefficients against independent implementations, on random data with missing values.

The references are installed for the tests only (pinned in pyproject.toml's `test` extra): statsmodels'
fleiss_kappa, the `krippendorff` package, nltk's AnnotationTask, and `agreement` (Gwet's AC1/AC2 and
Brennan-Prediger's S after Gwet's 2014 handbook; irrCAC itself pins an old scipy and cannot be installed
beside ours, so its published values are checked in test_agreement_math.py instead).
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from agreement.metrics import gwets_gamma, s_score
from agreement.utils import kernels
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import binary_distance, interval_distance
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from stats.agreement import (
    LEVELS,
    agreement_by_group,
    brennan_prediger,
    fleiss_kappa,
    gwet_ac,
    krippendorff_alpha,
)

SEEDS = (0, 1, 2)
CATEGORIES = [1, 2, 3, 4, 5]


def reliability_data(seed: int, raters: int = 4, units: int = 60, missing: float = 0.25) -> np.ndarray:
    """A raters x units matrix of values 1..5 that mostly agree, with NaN where a rating is missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=units)
    noise = rng.integers(-2, 3, size=(raters, units)) * (rng.random((raters, units)) < 0.5)
    data = np.clip(truth + noise, 1, 5).astype(float)
    data[rng.random((raters, units)) < missing] = np.nan
    return data


def as_ratings(data: np.ndarray) -> dict[int, list[int | None]]:
    return {unit: [None if np.isnan(v) else int(v) for v in data[:, unit]] for unit in range(data.shape[1])}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", LEVELS)
def test_it_matches_the_krippendorff_package_at_every_level(seed: int, level: str) -> None:
    data = reliability_data(seed)
    ours = krippendorff_alpha(as_ratings(data), level)
    assert ours.value == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("level", "distance"), [("nominal", binary_distance), ("interval", interval_distance)])
def test_it_matches_nltk_annotation_task(seed: int, level: str, distance: object) -> None:
    data = reliability_data(seed)
    triples = [
        (f"rater{r}", f"unit{u}", int(data[r, u]))
        for r in range(data.shape[0])
        for u in range(data.shape[1])
        if not np.isnan(data[r, u])
    ]
    reference = AnnotationTask(data=triples, distance=distance).alpha()
    assert krippendorff_alpha(as_ratings(data), level).value == pytest.approx(reference)


@pytest.mark.parametrize("seed", SEEDS)
def test_it_matches_statsmodels_fleiss_kappa_on_the_complete_items(seed: int) -> None:
    data = reliability_data(seed, raters=3, units=80, missing=0.1)
    ours = fleiss_kappa({unit: [str(v) for v in values if v is not None] for unit, values in as_ratings(data).items()})
    complete = data[:, ~np.isnan(data).any(axis=0)]
    table = np.array([[np.sum(complete[:, u] == c) for c in CATEGORIES] for u in range(complete.shape[1])])
    assert ours.n_items == complete.shape[1] and ours.n_dropped == data.shape[1] - complete.shape[1]
    assert ours.value == pytest.approx(statsmodels_fleiss(table, method="fleiss"))


def count_matrix(data: np.ndarray) -> np.ndarray:
    """Items (with at least one rating) x categories, the input of the `agreement` package."""
    counts = np.array([[np.sum(data[:, u] == c) for c in CATEGORIES] for u in range(data.shape[1])], dtype=float)
    return counts[counts.sum(axis=1) > 0]


KERNELS = {
    "identity": kernels.identity_kernel,
    "quadratic": kernels.quadratic_kernel,
    "linear": kernels.linear_kernel,
    "ordinal": kernels.ordinal_kernel,
    "radical": kernels.radical_kernel,
    "ratio": kernels.radio_kernel,
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("weights", list(KERNELS))
def test_it_matches_gwet_ac1_ac2_and_brennan_prediger_of_the_agreement_package(seed: int, weights: str) -> None:
    # The package's kernels index the categories 0..q-1 (its ratio kernel adds one): our categories 1..5.
    data = reliability_data(seed)
    ratings = as_ratings(data)
    counts = count_matrix(data)
    ac = gwet_ac(ratings, weights=weights, categories=CATEGORIES)
    bp = brennan_prediger(ratings, weights=weights, categories=CATEGORIES)
    assert ac.value == pytest.approx(gwets_gamma(counts, KERNELS[weights]))
    assert bp.value == pytest.approx(s_score(counts, KERNELS[weights]))
    assert ac.name == ("AC1" if weights == "identity" else "AC2")


@pytest.mark.parametrize("seed", SEEDS)
def test_it_matches_the_references_within_each_group(seed: int) -> None:
    # Per group, the one-pass grouped computation equals the reference on that group's units alone.
    data = reliability_data(seed, units=90)
    ratings = as_ratings(data)
    groups = {unit: unit % 3 for unit in ratings}
    grouped = agreement_by_group(ratings, groups, "krippendorff", level="ordinal")
    for row in grouped.groups:
        columns = [unit for unit in ratings if groups[unit] == row.group]
        reference = krippendorff.alpha(reliability_data=data[:, columns], level_of_measurement="ordinal")
        assert row.result.value == pytest.approx(reference)
