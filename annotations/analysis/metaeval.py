"""Meta-evaluation of a metric on faithful/unfaithful summary pairs. Numbers in, dataclasses out; no Django.

- consistency (BUMP 4.2, after Gabriel et al. 2021): % of pairs where the unfaithful summary scores
  strictly lower than its faithful counterpart;
- ROC AUC (BUMP 4.2): the metric as a classifier of faithful (1) against unfaithful (0) summaries,
  over every summary of the pairs; ties count one half (Mann-Whitney);
- ranking accuracy (thesis 6.3.1, Falke et al. 2019): % of groups (one faithful summary and one or more
  unfaithful ones) where the faithful summary scores strictly higher than every unfaithful one; ties
  count as wrong. On pairs it equals consistency.
Groups with a missing score are dropped and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

PROTOCOLS = ("consistency", "roc_auc", "ranking")
OVERALL = "overall"


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


def _missing(value: float | None) -> bool:
    return value is None or math.isnan(value)


def meta_evaluate(protocol: str, groups: Sequence[PairGroup], group: str = OVERALL) -> MetaEvaluation:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    complete = [g for g in groups if g.unfaithful and not _missing(g.faithful) and not any(map(_missing, g.unfaithful))]
    missing = len(groups) - len(complete)
    if not complete:
        return MetaEvaluation(protocol, group, None, 0, missing, reason="no complete faithful/unfaithful pair")
    if protocol == "roc_auc":
        positives = np.array([g.faithful for g in complete], dtype=float)
        negatives = np.array([score for g in complete for score in g.unfaithful], dtype=float)
        ranks = stats.rankdata(np.concatenate([positives, negatives]))
        n_pos, n_neg = len(positives), len(negatives)
        auc = (ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
        return MetaEvaluation(protocol, group, 100.0 * float(auc), len(complete), missing)
    if protocol == "consistency":
        wins = sum(score < g.faithful for g in complete for score in g.unfaithful)
        total = sum(len(g.unfaithful) for g in complete)
        return MetaEvaluation(protocol, group, 100.0 * wins / total, len(complete), missing)
    wins = sum(all(g.faithful > score for score in g.unfaithful) for g in complete)
    return MetaEvaluation(protocol, group, 100.0 * wins / len(complete), len(complete), missing)


def meta_evaluate_by_type(protocol: str, groups: Sequence[PairGroup]) -> list[MetaEvaluation]:
    """The overall row followed by one row per error type (in alphabetical order)."""
    rows = [meta_evaluate(protocol, groups)]
    for error_type in sorted({g.error_type for g in groups if g.error_type}):
        rows.append(meta_evaluate(protocol, [g for g in groups if g.error_type == error_type], error_type))
    return rows
