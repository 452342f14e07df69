"""Meta-evaluation of a metric on faithful/unfaithful summary pairs. Numbers in, dataclasses out; no Django.

- consistency (BUMP 4.2, after Gabriel et al. 2021): % of pairs where the unfaithful summary scores
  strictly lower than its faithful counterpart;
- ROC AUC (BUMP 4.2): the metric as a classifier of faithful (1) against unfaithful (0) summaries,
  over every summary of the pairs; ties count one half (Mann-Whitney);
- ranking accuracy (thesis 6.3.1, Falke et al. 2019): % of groups (one faithful summary and one or more
  unfaithful ones) where the faithful summary scores strictly higher than every unfaithful one; ties
  count as wrong. On pairs it equals consistency.
Groups with a missing score are dropped and counted.

On any data with a binary faithful (1) / unfaithful (0) label per summary, not only on pairs:
- ROC AUC of the metric (binary_roc_auc);
- balanced accuracy with a tuned threshold (AggreFact, Tang et al. 2023; SummaC, Laban et al. 2022;
  TRUE, Honovich et al. 2022): the metric threshold that maximises balanced accuracy on the validation
  split is applied to the test split; without a split, thresholds are tuned by seeded stratified k-fold
  cross-validation and every summary is predicted by the threshold of the folds it was not in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from stats.resampling import batch_sizes, percentile_interval, resample_rows

# The protocols on faithful/unfaithful pairs (meta_evaluate)...
PAIR_PROTOCOLS = ("consistency", "roc_auc", "ranking")
# ...and balanced accuracy, on a binary label per summary (balanced_accuracy; roc_auc also runs there).
BALANCED_ACCURACY = "balanced_accuracy"
PROTOCOLS = (*PAIR_PROTOCOLS, BALANCED_ACCURACY)
OVERALL = "overall"
FAITHFUL, UNFAITHFUL = 1, 0


@dataclass(frozen=True)
class PairGroup:
    """A faithful summary's score and the scores of its unfaithful edits (a BUMP pair has one)."""

    faithful: float | None
    unfaithful: Sequence[float | None]
    error_type: str = ""


@dataclass(frozen=True)
class MetaEvaluation:
    protocol: str
    group: str  # "overall" or an error type
    value: float | None  # percent
    n: int  # groups used
    n_missing: int
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "protocol": self.protocol,
            "group": self.group,
            "value": self.value,
            "n": self.n,
            "n_missing": self.n_missing,
            "reason": self.reason,
        }


def _present(value: float | None) -> TypeGuard[float]:
    """A score that is there: neither missing nor NaN."""
    return value is not None and not math.isnan(value)


def roc_auc(positives: np.ndarray, negatives: np.ndarray) -> float:
    """P(a faithful summary scores higher than an unfaithful one), ties counting one half (Mann-Whitney)."""
    from scipy import stats  # scipy.stats takes a second or more to import: only the code that computes pays

    ranks = stats.rankdata(np.concatenate([positives, negatives]))
    n_pos, n_neg = len(positives), len(negatives)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def meta_evaluate(protocol: str, groups: Sequence[PairGroup], group: str = OVERALL) -> MetaEvaluation:
    if protocol not in PAIR_PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} on pairs; choose one of {', '.join(PAIR_PROTOCOLS)}")
    # (faithful, unfaithful scores) of the groups with every score present.
    complete: list[tuple[float, list[float]]] = []
    for g in groups:
        unfaithful = [score for score in g.unfaithful if _present(score)]
        if g.unfaithful and _present(g.faithful) and len(unfaithful) == len(g.unfaithful):
            complete.append((g.faithful, unfaithful))
    missing = len(groups) - len(complete)
    if not complete:
        return MetaEvaluation(protocol, group, None, 0, missing, reason="no complete faithful/unfaithful pair")
    if protocol == "roc_auc":
        positives = np.array([faithful for faithful, _ in complete], dtype=float)
        negatives = np.array([score for _, scores in complete for score in scores], dtype=float)
        return MetaEvaluation(protocol, group, 100.0 * roc_auc(positives, negatives), len(complete), missing)
    if protocol == "consistency":
        wins = sum(score < faithful for faithful, scores in complete for score in scores)
        total = sum(len(scores) for _, scores in complete)
        return MetaEvaluation(protocol, group, 100.0 * wins / total, len(complete), missing)
    wins = sum(all(faithful > score for score in scores) for faithful, scores in complete)
    return MetaEvaluation(protocol, group, 100.0 * wins / len(complete), len(complete), missing)


def meta_evaluate_by_type(protocol: str, groups: Sequence[PairGroup]) -> list[MetaEvaluation]:
    """The overall row followed by one row per error type (in alphabetical order)."""
    rows = [meta_evaluate(protocol, groups)]
    for error_type in sorted({g.error_type for g in groups if g.error_type}):
        rows.append(meta_evaluate(protocol, [g for g in groups if g.error_type == error_type], error_type))
    return rows


# --- binary labels: ROC AUC and balanced accuracy with a tuned threshold ----------------------------


def _finite(value: object) -> TypeGuard[float]:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def binary_labels(scores: Sequence[float | None], threshold: float) -> list[int | None]:
    """A human score as faithful (1, the score is at least `threshold`) or unfaithful (0); a missing or
    non-finite score gives no label."""
    if not _finite(threshold):
        raise ValueError(f"the threshold must be a finite number, got {threshold!r}")
    return [None if not _finite(score) else FAITHFUL if score >= threshold else UNFAITHFUL for score in scores]


def _complete(labels: Sequence[int | None], scores: Sequence[float | None]) -> tuple[np.ndarray, int]:
    """Indexes of the summaries with a 0/1 label and a finite score, and how many lacked one."""
    if len(labels) != len(scores):
        raise ValueError(f"{len(labels)} labels but {len(scores)} scores")
    for label in labels:
        if label not in (None, FAITHFUL, UNFAITHFUL) or isinstance(label, float):
            raise ValueError(f"a label is 1 (faithful), 0 (unfaithful) or None, got {label!r}")
    keep = np.array([label is not None and _finite(score) for label, score in zip(labels, scores, strict=True)])
    return np.flatnonzero(keep), int((~keep).sum()) if keep.size else 0


def binary_roc_auc(
    labels: Sequence[int | None], scores: Sequence[float | None], group: str = OVERALL
) -> MetaEvaluation:
    """ROC AUC (percent) of the metric as a classifier of faithful summaries, on any binary-labelled data."""
    used, missing = _complete(labels, scores)
    y = np.array([labels[i] for i in used], dtype=int)
    x = np.array([scores[i] for i in used], dtype=float)
    if y.size == 0 or y.min() == y.max():
        reason = "ROC AUC needs faithful and unfaithful summaries with a score"
        return MetaEvaluation("roc_auc", group, None, int(y.size), missing, reason=reason)
    return MetaEvaluation("roc_auc", group, 100.0 * roc_auc(x[y == FAITHFUL], x[y == UNFAITHFUL]), int(y.size), missing)


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """The threshold t (faithful predicted when score >= t) with the highest balanced accuracy, and that
    accuracy (a fraction). Candidates are the lowest score (everything faithful) and every midpoint between
    two adjacent distinct scores, so tied scores always fall on the same side; among equally good
    thresholds the lowest wins. Both classes must be present."""
    distinct, inverse = np.unique(scores, return_inverse=True)
    positives = np.bincount(inverse, weights=labels == FAITHFUL, minlength=distinct.size)
    negatives = np.bincount(inverse, weights=labels == UNFAITHFUL, minlength=distinct.size)
    n_pos, n_neg = positives.sum(), negatives.sum()
    # Cut i predicts unfaithful for the distinct scores before i: cut 0 is "everything faithful".
    below_pos = np.concatenate([[0.0], np.cumsum(positives)[:-1]])
    below_neg = np.concatenate([[0.0], np.cumsum(negatives)[:-1]])
    accuracy = ((n_pos - below_pos) / n_pos + below_neg / n_neg) / 2.0
    best = int(np.argmax(accuracy))
    threshold = distinct[0] if best == 0 else (distinct[best - 1] + distinct[best]) / 2.0
    return float(threshold), float(accuracy[best])


def _balanced_accuracy(labels: np.ndarray, predicted: np.ndarray) -> tuple[float, float, float]:
    tpr = float(np.mean(predicted[labels == FAITHFUL] == FAITHFUL))
    tnr = float(np.mean(predicted[labels == UNFAITHFUL] == UNFAITHFUL))
    return (tpr + tnr) / 2.0, tpr, tnr


def _both_classes(labels: np.ndarray) -> bool:
    return bool(labels.size) and labels.min() != labels.max()


@dataclass(frozen=True)
class BalancedAccuracy:
    """Balanced accuracy (percent; the mean of the true-positive and true-negative rates, faithful being
    positive) of the metric thresholded at `threshold`, on the test summaries (`split` protocol) or on
    every summary predicted out of fold (`cross_validation`, with `folds` and `seed`)."""

    protocol: str  # "split" or "cross_validation"
    value: float | None
    threshold: float | None
    n_tune: int  # summaries the threshold was tuned on (validation split; all of them for cross-validation)
    n_test: int  # summaries scored
    n_missing: int  # without a label or a score
    n_other: int = 0  # in neither split
    true_positive_rate: float | None = None
    true_negative_rate: float | None = None
    roc_auc: float | None = None  # percent, on the scored summaries
    folds: int | None = None
    seed: int | None = None
    fold_thresholds: tuple[float, ...] = ()
    ci_low: float | None = None
    ci_high: float | None = None
    n_bootstrap: int = 0
    n_bootstrap_undefined: int = 0
    group: str = OVERALL
    reason: str = ""
    splits: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "protocol": BALANCED_ACCURACY,
            "tuning": self.protocol,
            "group": self.group,
            "value": self.value,
            "threshold": self.threshold,
            "true_positive_rate": self.true_positive_rate,
            "true_negative_rate": self.true_negative_rate,
            "roc_auc": self.roc_auc,
            "n_tune": self.n_tune,
            "n_test": self.n_test,
            "n_missing": self.n_missing,
            "n_other": self.n_other,
            "splits": dict(self.splits),
            "folds": self.folds,
            "seed": self.seed,
            "fold_thresholds": list(self.fold_thresholds),
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_bootstrap": self.n_bootstrap,
            "n_bootstrap_undefined": self.n_bootstrap_undefined,
            "reason": self.reason,
        }


def _stratified_folds(labels: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """A fold number per summary: each class shuffled and dealt round the folds."""
    fold = np.empty(labels.size, dtype=np.int64)
    for label in (FAITHFUL, UNFAITHFUL):
        members = rng.permutation(np.flatnonzero(labels == label))
        fold[members] = np.arange(members.size) % folds
    return fold


def _bootstrap_accuracy(
    labels: np.ndarray, predicted: np.ndarray, resamples: int, seed: int
) -> tuple[float | None, float | None, int, int]:
    """Percentile interval (percent) of balanced accuracy over the scored summaries drawn with replacement."""
    if resamples <= 0:
        return None, None, 0, 0
    rng = np.random.default_rng(seed)
    columns = np.column_stack(
        [
            labels == FAITHFUL,
            (labels == FAITHFUL) & (predicted == FAITHFUL),
            labels == UNFAITHFUL,
            (labels == UNFAITHFUL) & (predicted == UNFAITHFUL),
        ]
    ).astype(float)
    values = []
    for size in batch_sizes(resamples, labels.size):
        pos, true_pos, neg, true_neg = np.asarray(resample_rows(labels.size, size, rng) @ columns).T
        with np.errstate(divide="ignore", invalid="ignore"):
            values.append(np.where((pos > 0) & (neg > 0), 50.0 * (true_pos / pos + true_neg / neg), np.nan))
    low, high, used = percentile_interval(np.concatenate(values))
    return low, high, used, resamples - used


def balanced_accuracy(
    labels: Sequence[int | None],
    scores: Sequence[float | None],
    *,
    splits: Sequence[str | None] | None = None,
    validation: str = "val",
    test: str = "test",
    folds: int = 5,
    seed: int = 0,
    bootstrap: int = 1000,
    group: str = OVERALL,
) -> BalancedAccuracy:
    """Balanced accuracy of the metric with a tuned threshold (see the module docstring).

    `labels`: 1 faithful, 0 unfaithful, None unknown (binary_labels turns a human score into them);
    `scores`: the metric's, higher meaning more faithful; `splits`: each summary's split, compared with
    `validation` and `test` (summaries in neither are counted in `n_other`). Summaries without a label or a
    finite score are left out and counted. The bootstrap resamples the scored summaries with the threshold
    fixed.
    """
    used, missing = _complete(labels, scores)
    y_all = np.array([labels[i] for i in used], dtype=int)
    x_all = np.array([scores[i] for i in used], dtype=float)
    names = {"validation": validation, "test": test}
    if splits is not None:
        if len(splits) != len(labels):
            raise ValueError(f"{len(labels)} labels but {len(splits)} splits")
        present = sorted({str(split) for split in splits if split is not None})
        for role, name in names.items():
            if name not in present:
                raise ValueError(
                    f"no summary is in the {role} split {name!r} (splits present: {', '.join(present) or 'none'})"
                )
        split_of = np.array([splits[i] for i in used], dtype=object)
        tune, score = split_of == validation, split_of == test
        n_other = sum(split not in (validation, test) for split in splits)
        base: dict[str, Any] = {
            "protocol": "split",
            "n_missing": missing,
            "n_other": n_other,
            "group": group,
            "splits": names,
        }
        base["seed"] = seed
        y_tune, x_tune, y_test, x_test = y_all[tune], x_all[tune], y_all[score], x_all[score]
        counts: dict[str, Any] = {"n_tune": int(y_tune.size), "n_test": int(y_test.size)}
        if not _both_classes(y_tune):
            reason = f"the validation split {validation!r} needs faithful and unfaithful summaries with a score"
            return BalancedAccuracy(value=None, threshold=None, reason=reason, **counts, **base)
        threshold, _ = best_threshold(y_tune, x_tune)
        if not _both_classes(y_test):
            reason = f"the test split {test!r} needs faithful and unfaithful summaries with a score"
            return BalancedAccuracy(value=None, threshold=threshold, reason=reason, **counts, **base)
        predicted = (x_test >= threshold).astype(int)
        extra: dict[str, Any] = {}
    else:
        if folds < 2:
            raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
        base = {"protocol": "cross_validation", "n_missing": missing, "group": group, "seed": seed}
        y_test, x_test = y_all, x_all
        counts = {"n_tune": int(y_all.size), "n_test": int(y_all.size)}
        smaller = min(int((y_all == FAITHFUL).sum()), int((y_all == UNFAITHFUL).sum()))
        if smaller < 2:
            reason = "cross-validation needs at least 2 faithful and 2 unfaithful summaries with a score"
            return BalancedAccuracy(value=None, threshold=None, folds=folds, reason=reason, **counts, **base)
        # Every training part must hold both classes: no more folds than the smaller class has summaries.
        folds = min(folds, smaller)
        fold = _stratified_folds(y_all, folds, np.random.default_rng(seed))
        predicted = np.empty(y_all.size, dtype=int)
        fold_thresholds = []
        for k in range(folds):
            held_out = fold == k
            cut, _ = best_threshold(y_all[~held_out], x_all[~held_out])
            fold_thresholds.append(cut)
            predicted[held_out] = (x_all[held_out] >= cut).astype(int)
        threshold, _ = best_threshold(y_all, x_all)  # the threshold to use on new data
        extra = {"folds": folds, "fold_thresholds": tuple(fold_thresholds)}
    value, tpr, tnr = _balanced_accuracy(y_test, predicted)
    low, high, n_bootstrap, n_undefined = _bootstrap_accuracy(y_test, predicted, bootstrap, seed)
    auc = 100.0 * roc_auc(x_test[y_test == FAITHFUL], x_test[y_test == UNFAITHFUL])
    return BalancedAccuracy(
        value=100.0 * value,
        threshold=threshold,
        true_positive_rate=tpr,
        true_negative_rate=tnr,
        roc_auc=auc,
        ci_low=low,
        ci_high=high,
        n_bootstrap=n_bootstrap,
        n_bootstrap_undefined=n_undefined,
        **counts,
        **base,
        **extra,
    )
