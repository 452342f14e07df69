"""Human-enhanced metrics (thesis 5.2 "Results"). Numbers in, dataclasses out; no Django here.

The annotators replace one component of a metric: they judge each BERTScore word alignment, each QGQA
answer pair and how many summary facts the top-k source sentences hold. Their labels, aggregated by
majority vote or average vote, give a faithfulness score per summary:
- BERTScore: the mean over the summary's important words of the aggregated word label (1 similar, 0 not);
  the important words are the `bertscore` task's units, one per word however many encoder pieces it has
  (protocols.alignment derives them; docs/EXPLANATIONS.md, "the word-level view");
- QGQA: the mean over the summary's answers of the aggregated "similar meaning" label (unit 2n + 1 of
  the n-th question; unit 2n, "answerable from the summary", is not part of the score);
- Entailment: the aggregated scale value (None 0 ... All 1); with several summary sentences, their mean.
With final labels (issue 16: each unit's one decided label, studies.models.FinalLabel) the same scores are
computed from them: the variant "final", one value per unit; likewise from a crowd model's label per unit
(stats.crowd_quality: Dawid-Skene, MACE, ...; issue 14), the variant "aggregated".
Table 5.6 compares each enhanced score's correlation with the human gold to the original metric's,
with the relative improvement of Pearson's r.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from stats.correlation import Correlation, correlate

AGGREGATIONS = ("majority", "average")
# The score from each unit's final label (one value per unit) instead of a vote over the annotators' labels.
FINAL = "final"
# The score from each unit's label as a crowd model aggregates the annotators' labels (one value per unit).
AGGREGATED = "aggregated"
VARIANTS = (*AGGREGATIONS, FINAL, AGGREGATED)
ENHANCED_TASKS = ("bertscore", "qgqa", "entailment")


def majority_vote(values: Sequence[float]) -> float:
    """The value most annotators chose; on a tie, the median of the tied values (0.5 for a 1:1 yes/no)."""
    counts = Counter(values)
    top = max(counts.values())
    tied = sorted(value for value, count in counts.items() if count == top)
    return tied[0] if len(tied) == 1 else float(statistics.median(tied))


def average_vote(values: Sequence[float]) -> float:
    return sum(values) / len(values)


# A final label is one value per unit: its "vote" is that value (the majority of one).
VOTES: dict[str, Callable[[Sequence[float]], float]] = {
    "majority": majority_vote,
    "average": average_vote,
    FINAL: majority_vote,
    AGGREGATED: majority_vote,
}


def scored_units(task: str, unit_indexes: Sequence[int]) -> list[int]:
    """The units of an item that enter its enhanced score."""
    if task == "qgqa":
        return [index for index in unit_indexes if index % 2 == 1]
    return list(unit_indexes)


def enhanced_score(task: str, units: Mapping[int, Sequence[float]], aggregation: str) -> float | None:
    """The item's human-enhanced score from each unit's numeric labels (missing labels already left out).

    Units without any numeric label are skipped; an item without any scored unit has no score.
    """
    if task not in ENHANCED_TASKS:
        raise ValueError(f"task {task!r} has no human-enhanced metric (tasks: {', '.join(ENHANCED_TASKS)})")
    vote = VOTES[aggregation]
    aggregated = [vote(units[index]) for index in scored_units(task, sorted(units)) if units[index]]
    return sum(aggregated) / len(aggregated) if aggregated else None


@dataclass(frozen=True)
class EnhancedRow:
    """One row of the Table 5.6 layout."""

    task: str
    variant: str  # "original", "majority", "average", "final" or "aggregated"
    pearson: Correlation
    spearman: Correlation
    relative_improvement: float | None  # of Pearson's r over the original metric's; None for the original

    @property
    def method(self) -> str:
        suffix = {
            "original": "original",
            "majority": "enhanced_maj",
            "average": "enhanced_avg",
            FINAL: "enhanced_final",
            AGGREGATED: "enhanced_crowd_model",
        }[self.variant]
        return f"{self.task}_{suffix}"


def enhanced_table(
    task: str,
    human: Sequence[float | None],
    original: Sequence[float | None],
    enhanced: Mapping[str, Sequence[float | None]],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
) -> list[EnhancedRow]:
    """Original metric and its enhanced variants against the human gold, over the same summaries."""

    def row(variant: str, scores: Sequence[float | None], baseline: float | None) -> EnhancedRow:
        pearson = correlate(scores, human, method="pearson", bootstrap=bootstrap, seed=seed)
        spearman = correlate(scores, human, method="spearman", bootstrap=bootstrap, seed=seed)
        improvement = None
        if baseline is not None and pearson.r is not None and baseline != 0.0:
            improvement = (pearson.r - baseline) / abs(baseline)
        return EnhancedRow(task, variant, pearson, spearman, improvement)

    first = row("original", original, None)
    rows = [first]
    for aggregation in VARIANTS:
        if aggregation in enhanced:
            rows.append(row(aggregation, enhanced[aggregation], first.pearson.r))
    return rows
