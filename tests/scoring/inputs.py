"""Explainer inputs for one document and its summaries, with spaCy's sentence offsets (as import stores them)."""

from __future__ import annotations

from typing import Any

from corpus.nlp import sentence_spans
from scoring.explainers.base import DocumentInput, SummaryInput


def explainer_inputs(
    nlp: Any, document: str, summaries: list[str]
) -> tuple[list[DocumentInput], list[list[SummaryInput]]]:
    spans = sentence_spans(nlp, [document, *summaries])
    summary_inputs = [SummaryInput(text, text_spans) for text, text_spans in zip(summaries, spans[1:], strict=True)]
    return [DocumentInput(document, spans[0])], [summary_inputs]
