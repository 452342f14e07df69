"""Hallucinated spans: turning span markings into labels, and BERTScore as a highlighter (thesis 6.1).

Text and offsets in, dataclasses out; no Django here. Offsets are 0-based and end-exclusive.

Agreement on spans is measured on labels derived from them:
- per word: each word of the summary (the words of `words.word_tokens` without its punctuation marks: runs
  of letters and digits) is "hallucinated" for an annotator when one of the annotator's spans overlaps it,
  else "faithful";
- per summary: "any span" when the annotator marked at least one span, else "no span".
An annotator who marked nothing still takes part (every word "faithful").
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from words import is_punctuation, word_tokens

Span = tuple[int, int]
Key = TypeVar("Key", bound=Hashable)  # a summary's key (its id)
HALLUCINATED, FAITHFUL = "hallucinated", "faithful"
ANY_SPAN, NO_SPAN = "any span", "no span"
THRESHOLDS = tuple(round(0.80 + 0.01 * step, 2) for step in range(20))  # 0.80 ... 0.99


def word_offsets(text: str) -> list[Span]:
    """The words the span analysis labels: the tasks' words (words.word_tokens) without the punctuation
    marks, so a span that takes in or leaves out a comma or full stop marks the same words."""
    return [(start, end) for word, start, end in word_tokens(text) if not is_punctuation(word)]


def _overlaps(word: Span, spans: Sequence[Span]) -> bool:
    return any(start < word[1] and word[0] < end for start, end in spans)


def word_labels(
    summaries: Mapping[Key, tuple[str, Mapping[str, Sequence[Span]]]],
) -> dict[tuple[Key, int], dict[str, str]]:
    """(summary, word index) -> annotator -> hallucinated/faithful, from each annotator's spans."""
    labelled: dict[tuple[Key, int], dict[str, str]] = {}
    for summary, (text, by_annotator) in summaries.items():
        for index, word in enumerate(word_offsets(text)):
            labelled[(summary, index)] = {
                annotator: HALLUCINATED if _overlaps(word, spans) else FAITHFUL
                for annotator, spans in by_annotator.items()
            }
    return labelled


def summary_labels(
    summaries: Mapping[Key, tuple[str, Mapping[str, Sequence[Span]]]],
) -> dict[Key, dict[str, str]]:
    return {
        summary: {annotator: ANY_SPAN if spans else NO_SPAN for annotator, spans in by_annotator.items()}
        for summary, (_, by_annotator) in summaries.items()
    }


def majority_characters(text: str, annotator_spans: Sequence[Sequence[Span]]) -> list[bool]:
    """Per character: inside the spans of more than half of the annotators (thesis 6.1's ground truth)."""
    votes = [0] * len(text)
    for spans in annotator_spans:
        marked = [False] * len(text)
        for start, end in spans:
            for position in range(max(0, start), min(end, len(text))):
                marked[position] = True
        for position, flag in enumerate(marked):
            votes[position] += flag
    half = len(annotator_spans) / 2
    return [count > half for count in votes]


@dataclass(frozen=True)
class HighlightSummary:
    """One summary: its text, its BERTScore tokens (start, end, similarity) and each annotator's spans."""

    text: str
    tokens: Sequence[tuple[int, int, float]]
    annotator_spans: Sequence[Sequence[Span]]


@dataclass(frozen=True)
class ThresholdScore:
    threshold: float
    precision: float | None
    recall: float | None
    f1: float | None
    accuracy: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int

    def as_dict(self) -> dict[str, float | None]:
        return {
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "accuracy": self.accuracy,
            "tp": self.true_positives,
            "fp": self.false_positives,
            "fn": self.false_negatives,
            "tn": self.true_negatives,
        }


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def highlighter_scores(
    summaries: Sequence[HighlightSummary], thresholds: Sequence[float] = THRESHOLDS
) -> list[ThresholdScore]:
    """Tokens with similarity below the threshold are flagged unfaithful; every non-space character of
    every summary is then one binary decision, scored against the majority of the human spans.

    Whitespace is left out: no token covers it, so counting it would only reward spans that include it.
    """
    counts = {threshold: [0, 0, 0, 0] for threshold in thresholds}  # tp, fp, fn, tn
    for summary in summaries:
        truth = majority_characters(summary.text, summary.annotator_spans)
        # Lowest similarity of any token covering each character (None when no token covers it).
        lowest: list[float | None] = [None] * len(summary.text)
        for start, end, similarity in summary.tokens:
            for position in range(max(0, start), min(end, len(summary.text))):
                current = lowest[position]
                lowest[position] = similarity if current is None else min(current, similarity)
        for position, character in enumerate(summary.text):
            if character.isspace():
                continue
            lowest_here = lowest[position]
            for threshold in thresholds:
                flagged = lowest_here is not None and lowest_here < threshold
                cell = (0 if flagged else 2) if truth[position] else (1 if flagged else 3)
                counts[threshold][cell] += 1
    scores = []
    for threshold in thresholds:
        tp, fp, fn, tn = counts[threshold]
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        f1 = None
        if precision is not None and recall is not None and precision + recall > 0:
            f1 = 2 * precision * recall / (precision + recall)
        scores.append(
            ThresholdScore(threshold, precision, recall, f1, _ratio(tp + tn, tp + fp + fn + tn), tp, fp, fn, tn)
        )
    return scores
