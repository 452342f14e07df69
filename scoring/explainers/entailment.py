"""Top-k entailment (thesis eq. 3.5-3.7; Falke et al. 2019). No Django here.

For each summary sentence s_i: the k source sentences most similar to it by sentence-embedding cosine
(k = 3 by default), and, with an NLI model E(premise, hypothesis):
    s2s   = max over source sentences d of E(d, s_i)                       (eq. 3.5)
    d2s   = E(whole document, s_i), the document cut to the model's input  (eq. 3.6)
    top2s = E(the top-k sentences joined in document order, s_i)           (eq. 3.7)
Each variant's summary score is the mean over summary sentences; top2s is the headline score.
Without an NLI model the top-k sentences are still computed and every probability is None, with the
reason in the payload (the annotation task judges the top-k sentences, not the probability).
Payload schema: docs/EXPLANATIONS.md, section `entailment`.
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
    mean,
    rounded,
)
from scoring.explainers.similarity import embed_batch
from scoring.metrics import SPECS
from scoring.nlp_models import NliModel

METRIC = "entailment"
CODE_VERSION = "1"
VARIANTS = SPECS[METRIC].score_fields  # ("s2s", "d2s", "top2s")


@dataclass(frozen=True, slots=True)
class EntailmentConfig:
    sentence_model: str
    nli_model: str = ""  # empty: no NLI model, probabilities are not computed
    k: int = 3

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": METRIC,
            "code_version": CODE_VERSION,
            "sentence_model": self.sentence_model,
            "nli_model": self.nli_model,
            "k": self.k,
        }


class TopKEntailmentExplainer:
    def __init__(
        self,
        embedder: SentenceEmbedder,
        nli: NliModel | None,
        config: EntailmentConfig,
        *,
        no_nli_reason: str = "no NLI model is configured",
    ) -> None:
        self.embedder = embedder
        self.nli = nli
        self.config = config
        self.no_nli_reason = no_nli_reason

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        batch = embed_batch(self.embedder, documents, summaries)
        source_spans, source_vectors = batch.source_spans, batch.source_vectors
        summary_spans, summary_vectors = batch.summary_spans, batch.summary_vectors

        # Top-k per summary sentence, then every NLI pair of the batch in one deduplicated, batched call.
        plans: list[list[_SentencePlan] | None] = []
        pairs: dict[tuple[str, str], int] = {}
        position = 0
        for document, spans, vectors, group in zip(documents, source_spans, source_vectors, summaries, strict=True):
            for summary in group:
                sentences, vectors_i = summary_spans[position], summary_vectors[position]
                position += 1
                if not sentences or not spans:
                    plans.append(None)
                    continue
                plans.append(self._plan(document, spans, vectors, summary, sentences, vectors_i, pairs))
        probabilities = []
        if self.nli is not None and pairs:
            probabilities = self.nli.entailment(list(pairs))

        results: list[list[Explained]] = []
        flat_plans = iter(plans)
        for group in summaries:
            row = []
            for summary in group:
                plan = next(flat_plans)
                if plan is None:
                    row.append(Explained.undefined(EMPTY_SUMMARY if not summary.text.strip() else EMPTY_SOURCE))
                else:
                    row.append(self._result(plan, probabilities))
            results.append(row)
        return results

    def _plan(
        self,
        document: DocumentInput,
        source_spans: list[tuple[int, int]],
        source_vectors: torch.Tensor,
        summary: SummaryInput,
        sentences: list[tuple[int, int]],
        vectors: torch.Tensor,
        pairs: dict[tuple[str, str], int],
    ) -> list[_SentencePlan]:
        def pair(premise: str, hypothesis: str) -> int:
            return pairs.setdefault((premise, hypothesis), len(pairs))

        similarity = vectors @ source_vectors.T
        k = min(self.config.k, len(source_spans))
        top_similarity, top_index = similarity.topk(k, dim=1)
        plans = []
        for i, (start, end) in enumerate(sentences):
            hypothesis = summary.text[start:end]
            top = [
                {"index": index, "start": source_spans[index][0], "end": source_spans[index][1], "similarity": sim}
                for sim, index in zip(top_similarity[i].tolist(), top_index[i].tolist(), strict=True)
            ]
            plan = _SentencePlan(start, end, hypothesis, top)
            if self.nli is not None:
                plan.s2s = [pair(document.text[s:e], hypothesis) for s, e in source_spans]
                plan.d2s = pair(document.text, hypothesis)
                in_order = sorted(entry["index"] for entry in top)
                paragraph = " ".join(document.text[source_spans[j][0] : source_spans[j][1]] for j in in_order)
                plan.top2s = pair(paragraph, hypothesis)
            plans.append(plan)
        return plans

    def _result(self, plans: list[_SentencePlan], probabilities: list[Any]) -> Explained:
        computed = self.nli is not None
        sentences = []
        per_variant: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
        d2s_truncated = False
        for plan in plans:
            entailment: dict[str, float | None] = dict.fromkeys(VARIANTS)
            s2s_best = None
            if computed:
                assert plan.s2s is not None, "with a model loaded, every plan has its sentence pairs"
                s2s_values = [probabilities[i].probability for i in plan.s2s]
                s2s_best = max(range(len(s2s_values)), key=s2s_values.__getitem__)
                entailment = {
                    "s2s": s2s_values[s2s_best],
                    "d2s": probabilities[plan.d2s].probability,
                    "top2s": probabilities[plan.top2s].probability,
                }
                d2s_truncated = d2s_truncated or probabilities[plan.d2s].premise_truncated
                for variant in VARIANTS:
                    # With a model loaded every variant has its probability (set just above), never None.
                    per_variant[variant].append(float(entailment[variant]))  # type: ignore[arg-type]
            sentences.append(
                {
                    "start": plan.start,
                    "end": plan.end,
                    "text": plan.text,
                    "top": [{**entry, "similarity": rounded(entry["similarity"])} for entry in plan.top],
                    "entailment": {variant: rounded(value) for variant, value in entailment.items()},
                    "s2s_best": s2s_best,
                }
            )
        scores = {variant: mean(values) if computed else None for variant, values in per_variant.items()}
        nli = {
            "model": self.nli.model_id if self.nli else self.config.nli_model,
            "computed": computed,
            "reason": "" if computed else self.no_nli_reason,
            "entailment_index": self.nli.entailment_index if self.nli else None,
            "d2s_truncated": d2s_truncated,
        }
        return Explained(
            score=scores["top2s"],
            scores=scores,
            payload={"k": self.config.k, "sentences": sentences, "nli": nli},
        )


@dataclass(slots=True)
class _SentencePlan:
    start: int
    end: int
    text: str
    top: list[dict[str, Any]]
    s2s: list[int] | None = None  # indices into the batch's NLI pairs
    d2s: int = -1
    top2s: int = -1
