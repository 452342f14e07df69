"""Sentence similarity (thesis 3.5, eq. 3.10): BERTScore's greedy matching over sentence embeddings. No Django.

Every summary sentence is aligned to its most similar source sentence (precision) and every source
sentence to its most similar summary sentence (recall); similarity is the cosine of sentence embeddings.
The thesis found the precision variant best, so it is the headline score.

Payload (offsets: summary sentences into the summary, source sentences into the document):
    {"sentences": [{"start", "end", "text", "best": {"index", "start", "end", "similarity"}}],
     "source_sentences": [{"index", "start", "end", "best_summary_sentence", "similarity"}]}
`best.index` / `source_sentences[].index` index the document's sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from scoring.encoders import SentenceEmbedder
from scoring.explainers.base import (
    EMPTY_SOURCE,
    EMPTY_SUMMARY,
    DocumentInput,
    Explained,
    SummaryInput,
    rounded,
)

METRIC = "similarity"
CODE_VERSION = "1"


@dataclass(frozen=True, slots=True)
class SimilarityConfig:
    sentence_model: str

    def as_dict(self) -> dict[str, Any]:
        return {"metric": METRIC, "code_version": CODE_VERSION, "sentence_model": self.sentence_model}


@dataclass(slots=True)
class SentenceVectors:
    """Sentence offsets and embeddings of a batch's documents and of their summaries (flattened)."""

    source_spans: list[list[tuple[int, int]]]
    source_vectors: list[torch.Tensor]
    summary_spans: list[list[tuple[int, int]]]
    summary_vectors: list[torch.Tensor]


def embed_batch(
    embedder: SentenceEmbedder, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
) -> SentenceVectors:
    """Each document's sentences embedded once for all its summaries; summaries in document order."""
    source_spans = [document.sentence_spans() for document in documents]
    flat = [summary for group in summaries for summary in group]
    summary_spans = [summary.sentence_spans() for summary in flat]
    return SentenceVectors(
        source_spans,
        embed_sentences(embedder, [d.text for d in documents], source_spans),
        summary_spans,
        embed_sentences(embedder, [s.text for s in flat], summary_spans),
    )


def embed_sentences(
    embedder: SentenceEmbedder, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
) -> list[torch.Tensor]:
    """Sentence embeddings for each text's sentences, all texts in one batched pass."""
    flat = [text[start:end] for text, text_spans in zip(texts, spans, strict=True) for start, end in text_spans]
    vectors = embedder.embed(flat)
    result, position = [], 0
    for text_spans in spans:
        result.append(vectors[position : position + len(text_spans)])
        position += len(text_spans)
    return result


class SentenceSimilarityExplainer:
    def __init__(self, embedder: SentenceEmbedder) -> None:
        self.embedder = embedder

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        batch = embed_batch(self.embedder, documents, summaries)
        summary_vectors = iter(batch.summary_vectors)
        spans_iter = iter(batch.summary_spans)
        results = []
        for document, spans, vectors, group in zip(
            documents, batch.source_spans, batch.source_vectors, summaries, strict=True
        ):
            row = []
            for summary in group:
                row.append(self._explain(document, spans, vectors, summary, next(spans_iter), next(summary_vectors)))
            results.append(row)
        return results

    def _explain(
        self,
        document: DocumentInput,
        source_spans: list[tuple[int, int]],
        source_vectors: torch.Tensor,
        summary: SummaryInput,
        summary_spans: list[tuple[int, int]],
        summary_vectors: torch.Tensor,
    ) -> Explained:
        if not summary_spans:
            return Explained.undefined(EMPTY_SUMMARY)
        if not source_spans:
            return Explained.undefined(EMPTY_SOURCE)
        similarity = summary_vectors @ source_vectors.T
        best, best_index = similarity.max(dim=1)
        recall_best, recall_index = similarity.max(dim=0)
        precision = float(best.mean())
        recall = float(recall_best.mean())
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        sentences = []
        for (start, end), sim, index in zip(summary_spans, best.tolist(), best_index.tolist(), strict=True):
            source_start, source_end = source_spans[index]
            sentences.append(
                {
                    "start": start,
                    "end": end,
                    "text": summary.text[start:end],
                    "best": {"index": index, "start": source_start, "end": source_end, "similarity": rounded(sim)},
                }
            )
        source_sentences = [
            {"index": i, "start": start, "end": end, "best_summary_sentence": match, "similarity": rounded(sim)}
            for i, ((start, end), sim, match) in enumerate(
                zip(source_spans, recall_best.tolist(), recall_index.tolist(), strict=True)
            )
        ]
        return Explained(
            score=precision,
            scores={"precision": precision, "recall": recall, "f1": f1},
            payload={"sentences": sentences, "source_sentences": source_sentences},
        )
