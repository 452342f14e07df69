"""Bootstrap helpers shared by the analyses: seeded resampling as weight rows, percentile intervals. No Django.

A resample of n things drawn with replacement is one row of multiplicities (how often each thing was
drawn); the statistics that are sums over things are then a matrix product with these rows, so a batch of
resamples costs one sparse product instead of a Python loop per resample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

# Resamples are drawn this many at a time (at most) so that memory stays flat for large n.
BOOTSTRAP_BATCH = 64
# ...and so that one batch holds at most this many draws.
BATCH_DRAWS = 2_000_000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile interval of a statistic over seeded resamples; resamples where the statistic is undefined
    (a resample without two raters on any item, a single class, ...) are counted and left out."""

    low: float | None
    high: float | None
    n_resamples: int
    n_undefined: int
    seed: int
    confidence: float = CONFIDENCE
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "ci_low": self.low,
            "ci_high": self.high,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "seed": self.seed,
            "reason": self.reason,
        }


def percentile_interval(samples: np.ndarray) -> tuple[float | None, float | None, int]:
    """The central 95% of the finite samples, and how many were finite (None, None when fewer than two)."""
    finite = samples[np.isfinite(samples)]
    if finite.size < 2:
        return None, None, int(finite.size)
    tail = 100.0 * (1.0 - CONFIDENCE) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high), int(finite.size)


def batch_sizes(resamples: int, n: int) -> list[int]:
    """How many resamples to draw per batch, so that a batch holds at most BATCH_DRAWS draws."""
    per_batch = max(1, min(BOOTSTRAP_BATCH, BATCH_DRAWS // max(n, 1)))
    return [min(per_batch, resamples - start) for start in range(0, resamples, per_batch)]


def resample_counts(n: int, rows: int, rng: np.random.Generator) -> np.ndarray:
    """`rows` resamples of n things drawn with replacement, as a (rows x n) array of multiplicities."""
    drawn = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=rows * n).reshape(rows, n).astype(float)


def resample_rows(n: int, rows: int, rng: np.random.Generator) -> sparse.csr_matrix:
    """resample_counts as a sparse matrix (about a third of its cells are zero)."""
    return sparse.csr_matrix(resample_counts(n, rows, rng))


def bootstrap_interval(values: np.ndarray, resamples: int, seed: int, what: str = "resamples") -> BootstrapInterval:
    """The interval of already computed resample values (NaN where undefined)."""
    low, high, used = percentile_interval(values)
    reason = "" if low is not None else f"fewer than two {what} gave a defined value"
    return BootstrapInterval(low, high, resamples, resamples - used, seed, reason=reason)
