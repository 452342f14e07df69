"""Correlation of metric scores with human scores. Arrays in, dataclasses out; no Django here.

Pearson, Spearman and Kendall (tau-b) with their p-values from scipy, and percentile bootstrap 95%
confidence intervals from a seeded generator, so the same call gives the same interval. Pairs where
either score is missing (None or NaN) are dropped and counted. The variants:
- summary level: one pair per summary, all summaries pooled;
- system level: the mean metric and mean human score of each system (FRANK, Maynez);
- document level ("summary-level" in SummEval, Fabbri et al. 2021, and the work that follows it): per
  document, the correlation across its summaries; their mean over documents;
- partial, controlling for the system (FRANK's evaluation): both scores are regressed on the one-hot
  system with an intercept, which is subtracting each system's mean, and the residuals are correlated.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from stats.resampling import BOOTSTRAP_BATCH, percentile_interval

METHODS = ("pearson", "spearman", "kendall")
# correlate_documents's level.
DOCUMENT_LEVEL = "document"
LEVELS = ("summary", "system", DOCUMENT_LEVEL)
MIN_PAIRS = 3


@dataclass(frozen=True)
class Correlation:
    method: str
    r: float | None
    p: float | None
    n: int
    n_missing: int
    ci_low: float | None = None
    ci_high: float | None = None
    n_bootstrap: int = 0
    level: str = "summary"
    partial_by: str | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "level": self.level,
            "partial_by": self.partial_by,
            "r": self.r,
            "p": self.p,
            "n": self.n,
            "n_missing": self.n_missing,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_bootstrap": self.n_bootstrap,
            "reason": self.reason,
        }


def _is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def complete_pairs(
    xs: Sequence[float | None], ys: Sequence[float | None], groups: Sequence[Hashable] | None = None
) -> tuple[np.ndarray, np.ndarray, list[Hashable] | None, int]:
    """The pairs where both scores are present (with their groups), and how many were dropped."""
    keep = [i for i, (x, y) in enumerate(zip(xs, ys, strict=True)) if not (_is_missing(x) or _is_missing(y))]
    x = np.fromiter((xs[i] for i in keep), dtype=float, count=len(keep))
    y = np.fromiter((ys[i] for i in keep), dtype=float, count=len(keep))
    kept_groups = [groups[i] for i in keep] if groups is not None else None
    return x, y, kept_groups, len(xs) - len(keep)


def _codes(groups: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    labels = {group: index for index, group in enumerate(dict.fromkeys(groups))}
    return np.fromiter((labels[group] for group in groups), dtype=np.int64, count=len(groups)), len(labels)


def _coefficient(method: str, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from scipy import stats  # scipy.stats takes a second or more to import: only the code that computes pays

    if method == "pearson":
        result = stats.pearsonr(x, y)
    elif method == "spearman":
        result = stats.spearmanr(x, y)
    else:
        result = stats.kendalltau(x, y)
    return float(result.statistic), float(result.pvalue)


def _rows_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (resamples x n) matrices; NaN where a row is constant."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((xc * yc).sum(axis=1) / denominator)


def _rows_coefficient(method: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy import stats  # scipy.stats takes a second or more to import: only the code that computes pays

    if method == "pearson":
        return _rows_pearson(x, y)
    if method == "spearman":
        return _rows_pearson(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1))
    return np.array([stats.kendalltau(row_x, row_y).statistic for row_x, row_y in zip(x, y, strict=True)])


def _group_residuals(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Residuals of a least-squares fit on one-hot groups plus intercept: each value minus its group mean.

    Works on a vector or on rows of a matrix (one resample per row, `codes` aligned with it).
    """
    if values.ndim == 1:
        sums = np.bincount(codes, weights=values, minlength=n_groups)
        counts = np.bincount(codes, minlength=n_groups)
        return np.asarray(values - (sums / np.maximum(counts, 1))[codes])
    offsets = (np.arange(values.shape[0]) * n_groups)[:, None]
    flat_codes = (codes + offsets).ravel()
    size = values.shape[0] * n_groups
    sums = np.bincount(flat_codes, weights=values.ravel(), minlength=size)
    counts = np.bincount(flat_codes, minlength=size)
    means = (sums / np.maximum(counts, 1))[flat_codes].reshape(values.shape)
    return values - means


def _undefined_reason(x: np.ndarray, y: np.ndarray, minimum: int = MIN_PAIRS) -> str:
    if len(x) < minimum:
        return f"fewer than {minimum} complete pairs ({len(x)}): a correlation needs at least {minimum}"
    if np.ptp(x) == 0.0:
        return f"the metric scores are constant ({x[0]:g}), so the correlation is undefined"
    if np.ptp(y) == 0.0:
        return f"the human scores are constant ({y[0]:g}), so the correlation is undefined"
    return ""


def correlate(
    xs: Sequence[float | None],
    ys: Sequence[float | None],
    *,
    method: str = "pearson",
    bootstrap: int = 1000,
    seed: int = 0,
    partial_groups: Sequence[Hashable] | None = None,
    partial_by: str = "system",
) -> Correlation:
    """Correlation of metric scores `xs` with human scores `ys` at summary level.

    With `partial_groups` (e.g. each summary's system) it is the partial correlation controlling for
    the groups; its p-value is the t-test with n - 2 - (groups - 1) degrees of freedom.
    """
    from scipy import stats  # scipy.stats takes a second or more to import: only the code that computes pays

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    x, y, groups, missing = complete_pairs(xs, ys, partial_groups)
    partial = partial_by if partial_groups is not None else None
    codes = np.zeros(len(x), dtype=np.int64)
    n_groups = 1
    if groups is not None:
        codes, n_groups = _codes(groups)
        x_used, y_used = _group_residuals(x, codes, n_groups), _group_residuals(y, codes, n_groups)
        # Residuals of a constant within every group are all zero: the reason names the raw scores.
        reason = _undefined_reason(x, y, max(MIN_PAIRS, n_groups + 2)) or _undefined_reason(x_used, y_used)
    else:
        x_used, y_used = x, y
        reason = _undefined_reason(x, y)
    if reason:
        return Correlation(method, None, None, len(x), missing, level="summary", partial_by=partial, reason=reason)
    r, p = _coefficient(method, x_used, y_used)
    if groups is not None and method != "kendall":
        # scipy's p assumes n - 2 degrees of freedom; the regression on the groups used n_groups - 1 more.
        dof = len(x) - 2 - (n_groups - 1)
        t = r * math.sqrt(dof / max(1e-300, 1.0 - r * r))
        p = float(2.0 * stats.t.sf(abs(t), dof))
    low = high = None
    used = 0
    if bootstrap > 0:
        rng = np.random.default_rng(seed)
        samples = []
        for start in range(0, bootstrap, BOOTSTRAP_BATCH):
            rows = min(BOOTSTRAP_BATCH, bootstrap - start)
            index = rng.integers(0, len(x), size=(rows, len(x)))
            bx, by = x[index], y[index]
            if groups is not None:
                bx = _group_residuals(bx, codes[index], n_groups)
                by = _group_residuals(by, codes[index], n_groups)
            samples.append(_rows_coefficient(method, bx, by))
        low, high, used = percentile_interval(np.concatenate(samples))
    return Correlation(
        method=method,
        r=r,
        p=p,
        n=len(x),
        n_missing=missing,
        ci_low=low,
        ci_high=high,
        n_bootstrap=used,
        level="summary",
        partial_by=partial,
    )


def _system_means(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(codes, minlength=n_groups)
    present = counts > 0
    mean_x = np.bincount(codes, weights=x, minlength=n_groups)[present] / counts[present]
    mean_y = np.bincount(codes, weights=y, minlength=n_groups)[present] / counts[present]
    return mean_x, mean_y


def correlate_systems(
    xs: Sequence[float | None],
    ys: Sequence[float | None],
    systems: Sequence[Hashable],
    *,
    method: str = "pearson",
    bootstrap: int = 1000,
    seed: int = 0,
) -> Correlation:
    """System-level correlation: the mean scores of each system, one pair per system.

    The bootstrap resamples summaries within each system and recomputes the system means (resampling
    a handful of systems would say little).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    x, y, groups, missing = complete_pairs(xs, ys, systems)
    assert groups is not None
    codes, n_systems = _codes(groups)
    mean_x, mean_y = _system_means(x, y, codes, n_systems)
    reason = _undefined_reason(mean_x, mean_y)
    if reason:
        reason = reason.replace("complete pairs", "systems")
        return Correlation(method, None, None, len(mean_x), missing, level="system", reason=reason)
    r, p = _coefficient(method, mean_x, mean_y)
    low = high = None
    used = 0
    if bootstrap > 0:
        rng = np.random.default_rng(seed)
        members = [np.flatnonzero(codes == code) for code in range(n_systems)]
        samples = np.empty(bootstrap)
        for b in range(bootstrap):
            index = np.concatenate([rng.choice(member, size=member.size) for member in members])
            sample_x, sample_y = _system_means(x[index], y[index], codes[index], n_systems)
            with np.errstate(invalid="ignore", divide="ignore"):
                samples[b] = _rows_coefficient(method, sample_x[None, :], sample_y[None, :])[0]
        low, high, used = percentile_interval(samples)
    return Correlation(
        method=method,
        r=r,
        p=p,
        n=len(mean_x),
        n_missing=missing,
        ci_low=low,
        ci_high=high,
        n_bootstrap=used,
        level="system",
    )


@dataclass(frozen=True)
class DocumentCorrelation(Correlation):
    """Document-level correlation: `r` is the mean of the per-document correlations over the `n` documents
    that have at least 3 summaries with non-constant scores on both sides; `excluded` counts the others
    by reason. There is no p-value for a mean of correlations; the interval resamples documents."""

    excluded: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {**super().as_dict(), "excluded": dict(self.excluded)}


def document_correlations(
    x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_documents: int, method: str
) -> tuple[np.ndarray, dict[str, int]]:
    """The correlation within each document that has enough summaries and non-constant scores (documents
    of equal size are computed together as rows of a matrix), and the other documents counted by reason."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_documents)
    starts = np.cumsum(sizes) - sizes
    excluded = {"fewer_than_3_summaries": 0, "constant_metric": 0, "constant_human": 0}
    values = []
    for size in np.unique(sizes):
        documents = np.flatnonzero(sizes == size)
        if size < MIN_PAIRS:
            excluded["fewer_than_3_summaries"] += int(documents.size)
            continue
        members = order[starts[documents][:, None] + np.arange(size)[None, :]]
        doc_x, doc_y = x[members], y[members]
        flat_x, flat_y = np.ptp(doc_x, axis=1) == 0.0, np.ptp(doc_y, axis=1) == 0.0
        excluded["constant_metric"] += int(flat_x.sum())
        excluded["constant_human"] += int((flat_y & ~flat_x).sum())
        keep = ~(flat_x | flat_y)
        if keep.any():
            values.append(_rows_coefficient(method, doc_x[keep], doc_y[keep]))
    return (np.concatenate(values) if values else np.zeros(0)), excluded


def correlate_documents(
    xs: Sequence[float | None],
    ys: Sequence[float | None],
    documents: Sequence[Hashable],
    *,
    method: str = "pearson",
    bootstrap: int = 1000,
    seed: int = 0,
) -> DocumentCorrelation:
    """SummEval's summary-level correlation: for each document, the correlation between metric and human
    scores across its summaries (one per system); the mean over the documents where it is defined. The
    bootstrap draws documents with replacement (seeded) and averages their correlations."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    x, y, groups, missing = complete_pairs(xs, ys, documents)
    assert groups is not None
    codes, n_documents = _codes(groups)
    per_document, excluded = document_correlations(x, y, codes, n_documents, method)
    if per_document.size == 0:
        reason = (
            f"no document has at least {MIN_PAIRS} summaries with non-constant metric and human scores "
            f"({n_documents} documents: {excluded['fewer_than_3_summaries']} with fewer summaries, "
            f"{excluded['constant_metric']} with constant metric scores, {excluded['constant_human']} with "
            "constant human scores)"
        )
        return DocumentCorrelation(
            method, None, None, 0, missing, level=DOCUMENT_LEVEL, reason=reason, excluded=excluded
        )
    low = high = None
    used = 0
    if bootstrap > 0:
        rng = np.random.default_rng(seed)
        samples = []
        for start in range(0, bootstrap, BOOTSTRAP_BATCH):
            rows = min(BOOTSTRAP_BATCH, bootstrap - start)
            samples.append(
                per_document[rng.integers(0, per_document.size, size=(rows, per_document.size))].mean(axis=1)
            )
        low, high, used = percentile_interval(np.concatenate(samples))
    return DocumentCorrelation(
        method=method,
        r=float(per_document.mean()),
        p=None,
        n=int(per_document.size),
        n_missing=missing,
        ci_low=low,
        ci_high=high,
        n_bootstrap=used,
        level=DOCUMENT_LEVEL,
        excluded=excluded,
    )
