"""Choosing "controversial" items (thesis 5.2): summaries whose human score and metric scores disagree most.

No Django here. Scores of different metrics live on different scales (BERTScore precision near 0.9,
QAGS F1 anywhere in [0, 1], a Likert human score), so each is turned into its percentile rank among
the candidates first; an item's controversy is the mean distance between the human rank and each
metric's rank.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np


@dataclass(frozen=True, slots=True)
class Controversy:
    key: Hashable
    score: float  # mean |human percentile - metric percentile|, 0 (agree) to 1 (opposite ends)
    human_rank: float
    metric_ranks: dict[str, float]


def percentile_ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks scaled to [0, 1] (ties share their average rank); a single value sits in the middle."""
    if len(values) == 1:
        return np.array([0.5])
    from scipy.stats import rankdata  # scipy.stats takes a second or more to import: only the code that ranks pays

    return np.asarray((rankdata(values, method="average") - 1) / (len(values) - 1))


# An item's key: its id, or a text (one kind in a call, so the keys sort).
Key = TypeVar("Key", int, str)


def controversy_ranking(*, human: Mapping[Key, float], metrics: Mapping[str, Mapping[Key, float]]) -> list[Controversy]:
    """Items that have the human score and every metric, most controversial first (ties: in key order)."""
    if not metrics:
        raise ValueError("compare the human score with at least one metric")
    keys = sorted(key for key in human if all(key in scores for scores in metrics.values()))
    if not keys:
        return []
    human_ranks = percentile_ranks([human[key] for key in keys])
    metric_ranks = {name: percentile_ranks([scores[key] for key in keys]) for name, scores in metrics.items()}
    distance = np.mean([np.abs(human_ranks - ranks) for ranks in metric_ranks.values()], axis=0)
    order = sorted(range(len(keys)), key=lambda i: (-distance[i], i))
    return [
        Controversy(
            key=keys[i],
            score=float(distance[i]),
            human_rank=float(human_ranks[i]),
            metric_ranks={name: float(ranks[i]) for name, ranks in metric_ranks.items()},
        )
        for i in order
    ]
