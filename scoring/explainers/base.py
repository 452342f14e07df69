"""What every explainer takes and returns. No Django here.

An explainer gets a batch of source documents, each with the summaries to explain against it, and returns
one `Explained` per summary. Batching by document lets an explainer embed or parse each document once
for all of its summaries, and batch the model work of many documents together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Span = tuple[int, int]

EMPTY_SUMMARY = "the summary is empty"
EMPTY_SOURCE = "the source document is empty"


@dataclass(frozen=True, slots=True)
class DocumentInput:
    text: str
    sentences: Sequence[Span] = ()  # character offsets of its sentences (spaCy, stored at import)

    def sentence_spans(self) -> list[Span]:
        return sentence_spans_or_whole(self.text, self.sentences)


@dataclass(frozen=True, slots=True)
class SummaryInput:
    text: str
    sentences: Sequence[Span] = ()

    def sentence_spans(self) -> list[Span]:
        return sentence_spans_or_whole(self.text, self.sentences)


@dataclass(slots=True)
class Explained:
    """One summary's result: the headline score (None when undefined, with `error` saying why), all
    variants, and the evidence payload (schemas in docs/EXPLANATIONS.md)."""

    score: float | None
    scores: dict[str, float | None] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @classmethod
    def undefined(cls, reason: str, payload: dict[str, Any] | None = None) -> Explained:
        return cls(score=None, scores={}, payload=payload or {}, error=reason)


class Explainer(Protocol):
    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        """For each document, one result per summary given for it, in order."""
        ...


def sentence_spans_or_whole(text: str, sentences: Sequence[Sequence[int]]) -> list[Span]:
    """The given sentence offsets, or the whole (trimmed) text as one sentence when none were given."""
    spans = [(int(start), int(end)) for start, end in sentences if int(start) < int(end)]
    if spans or not text.strip():
        return spans
    start = len(text) - len(text.lstrip())
    return [(start, len(text.rstrip()))]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rounded(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(float(value), digits)
