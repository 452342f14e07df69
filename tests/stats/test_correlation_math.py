"""Correlations with p-values, bootstrap intervals, system level and partial correlation (no database)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stats.correlation import correlate, correlate_documents, correlate_systems


def sample(n: int = 200, seed: int = 1) -> tuple[list[float], list[float], list[str]]:
    rng = np.random.default_rng(seed)
    systems = [f"s{i % 4}" for i in range(n)]
    offset = np.array([{"s0": 0.0, "s1": 1.0, "s2": 2.0, "s3": 3.0}[s] for s in systems])
    human = rng.normal(size=n) + offset
    metric = 0.5 * human + rng.normal(size=n) + 2 * offset
    return metric.tolist(), human.tolist(), systems


@pytest.mark.parametrize(
    ("method", "reference"), [("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)]
)
def test_it_matches_scipy_and_gives_a_seeded_interval_around_r(method: str, reference: object) -> None:
    metric, human, _ = sample()
    result = correlate(metric, human, method=method, bootstrap=300, seed=7)
    expected = reference(metric, human)  # type: ignore[operator]
    assert result.r == pytest.approx(expected.statistic) and result.p == pytest.approx(expected.pvalue)
    assert result.ci_low < result.r < result.ci_high and result.n_bootstrap == 300
    again = correlate(metric, human, method=method, bootstrap=300, seed=7)
    other = correlate(metric, human, method=method, bootstrap=300, seed=8)
    assert (again.ci_low, again.ci_high) == (result.ci_low, result.ci_high)
    assert (other.ci_low, other.ci_high) != (result.ci_low, result.ci_high)


def test_it_drops_missing_values_and_counts_them() -> None:
    metric, human, _ = sample(50)
    metric[3], human[7], metric[9] = None, float("nan"), float("nan")  # type: ignore[call-overload]
    result = correlate(metric, human, bootstrap=0)
    assert (result.n, result.n_missing) == (47, 3)
    keep = [i for i in range(50) if i not in (3, 7, 9)]
    assert result.r == pytest.approx(stats.pearsonr([metric[i] for i in keep], [human[i] for i in keep]).statistic)
    assert result.ci_low is None and result.n_bootstrap == 0


def test_it_regresses_out_the_system_like_frank() -> None:
    metric, human, systems = sample(400)
    result = correlate(metric, human, partial_groups=systems, bootstrap=200)
    # Regress both on an intercept plus one-hot systems with least squares and correlate the residuals.
    names = sorted(set(systems))
    design = np.column_stack([np.ones(400)] + [[1.0 if s == name else 0.0 for s in systems] for name in names[1:]])
    residual = [v - design @ np.linalg.lstsq(design, v, rcond=None)[0] for v in (np.array(metric), np.array(human))]
    assert result.r == pytest.approx(stats.pearsonr(*residual).statistic)
    # The system inflates the plain correlation; controlling for it removes that.
    assert correlate(metric, human, bootstrap=0).r > result.r + 0.2
    # Three more parameters were estimated: the p-value uses n - 2 - 3 degrees of freedom.
    t = result.r * np.sqrt((400 - 5) / (1 - result.r**2))
    assert result.p == pytest.approx(2 * stats.t.sf(abs(t), 400 - 5))
    assert result.partial_by == "system" and result.ci_low < result.r < result.ci_high


def test_it_correlates_system_means() -> None:
    metric, human, systems = sample(400)
    result = correlate_systems(metric, human, systems, bootstrap=100)
    means = [
        (
            np.mean([m for m, s in zip(metric, systems, strict=True) if s == name]),
            np.mean([h for h, s in zip(human, systems, strict=True) if s == name]),
        )
        for name in ("s0", "s1", "s2", "s3")
    ]
    assert result.n == 4 and result.level == "system"
    assert result.r == pytest.approx(stats.pearsonr(*zip(*means, strict=True)).statistic)
    assert result.ci_low is not None and result.ci_low <= result.r <= result.ci_high


@pytest.mark.parametrize(
    ("metric", "human", "reason"),
    [
        ([0.1, 0.2], [0.3, 0.5], "fewer than 3 complete pairs (2)"),
        ([0.1, 0.2, None, None], [0.3, 0.5, 0.1, 0.2], "fewer than 3 complete pairs (2)"),
        ([0.5, 0.5, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4], "the metric scores are constant"),
        ([0.1, 0.2, 0.3, 0.4], [1.0, 1.0, 1.0, 1.0], "the human scores are constant"),
    ],
)
def test_it_explains_an_undefined_correlation_instead_of_returning_nan(
    metric: list[float | None], human: list[float], reason: str
) -> None:
    result = correlate(metric, human, method="spearman")
    assert result.r is None and result.p is None and result.ci_low is None
    assert reason in result.reason
    assert "fewer than 3 systems" in correlate_systems([0.1, 0.2, 0.3], [0.2, 0.1, 0.4], ["a", "a", "b"]).reason


def test_it_refuses_an_unknown_method() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        correlate([1, 2, 3], [1, 2, 3], method="cosine")


def documents_sample(seed: int = 2) -> tuple[list[float | None], list[float | None], list[str]]:
    """20 documents with 4-6 summaries each, plus documents that must be excluded."""
    rng = np.random.default_rng(seed)
    metric: list[float | None] = []
    human: list[float | None] = []
    documents: list[str] = []
    for d in range(20):
        n = 4 + d % 3
        h = rng.normal(size=n)
        metric += (0.6 * h + rng.normal(size=n) + 5 * d).tolist()  # a per-document offset pooling would reward
        human += h.tolist()
        documents += [f"doc{d}"] * n
    metric += [0.1, 0.2]  # two summaries only
    human += [0.3, 0.1]
    documents += ["short", "short"]
    metric += [0.5, 0.5, 0.5]  # constant metric (and constant human: counted once, as the metric)
    human += [1.0, 1.0, 1.0]
    documents += ["flat", "flat", "flat"]
    metric += [0.1, 0.2, 0.3, 0.4]  # constant human
    human += [2.0, 2.0, 2.0, 2.0]
    documents += ["same", "same", "same", "same"]
    metric += [0.1, None, 0.3, 0.2, 0.6]  # two missing scores leave 3 pairs: still used
    human += [0.2, 0.5, float("nan"), 0.1, 0.4]
    documents += ["gappy"] * 5
    return metric, human, documents


@pytest.mark.parametrize(
    ("method", "reference"), [("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)]
)
def test_it_averages_the_correlation_within_each_document_like_summeval(method: str, reference: object) -> None:
    metric, human, documents = documents_sample()
    result = correlate_documents(metric, human, documents, method=method, bootstrap=300, seed=5)
    expected = []
    for document in dict.fromkeys(documents):
        pairs = [
            (m, h)
            for m, h, d in zip(metric, human, documents, strict=True)
            if d == document and m is not None and not np.isnan(h)
        ]
        xs, ys = zip(*pairs, strict=True)
        if len(pairs) >= 3 and np.ptp(xs) > 0 and np.ptp(ys) > 0:
            expected.append(reference(xs, ys).statistic)  # type: ignore[operator]
    assert len(expected) == 21 and result.n == 21 and result.level == "document"
    assert result.r == pytest.approx(np.mean(expected)) and result.p is None
    assert result.n_missing == 2
    assert result.excluded == {"fewer_than_3_summaries": 1, "constant_metric": 1, "constant_human": 1}
    assert result.ci_low < result.r < result.ci_high and result.n_bootstrap == 300
    again = correlate_documents(metric, human, documents, method=method, bootstrap=300, seed=5)
    assert (again.ci_low, again.ci_high) == (result.ci_low, result.ci_high)
    assert result.as_dict()["excluded"] == result.excluded


def test_it_differs_from_pooling_the_summaries_when_documents_shift_the_metric() -> None:
    metric, human, documents = documents_sample()
    pooled = correlate(metric, human, bootstrap=0)
    per_document = correlate_documents(metric, human, documents, bootstrap=0)
    assert pooled.r < 0.2 < per_document.r  # the offsets swamp the pooled correlation


def test_it_explains_a_document_level_correlation_that_no_document_supports() -> None:
    result = correlate_documents([0.1, 0.2, 0.5, 0.5, 0.5], [0.3, 0.1, 1, 2, 3], ["a", "a", "b", "b", "b"])
    assert result.r is None and result.ci_low is None and result.n == 0
    assert "no document has at least 3 summaries" in result.reason
    assert result.excluded == {"fewer_than_3_summaries": 1, "constant_metric": 1, "constant_human": 0}
    with pytest.raises(ValueError, match="unknown method"):
        correlate_documents([1, 2, 3], [1, 2, 3], ["a"] * 3, method="cosine")
