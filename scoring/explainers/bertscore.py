"""BERTScore with word alignments (thesis eq. 3.2-3.4; Zhang et al. 2020). No Django here.

Candidate = the summary, reference = the source document: precision averages, over summary tokens,
the cosine similarity of the most similar source token, so every summary token gets an aligned
source token; that alignment is the explanation annotators judge.

Two ways to treat the encoder's special tokens ([CLS]/[SEP], <s>/</s>):
- "strip" (the thesis's implementation): they are removed from both sides before matching;
- "package" (the bert-score package): they stay as match candidates but get zero weight.
With strategy "first512", special_tokens "package", no idf and the same model and layer, P/R/F equal
bert_score.score(cands=summaries, refs=documents, model_type=..., num_layers=layer).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch

from scoring.encoders import TokenEncoder, Tokenized
from scoring.text import Span, WordSpan

METRIC = "bertscore"
CODE_VERSION = "1"

Strategy = Literal["sentences", "first512", "windows"]
SpecialTokens = Literal["strip", "package"]
STRATEGIES: tuple[str, ...] = ("sentences", "first512", "windows")
SPECIAL_TOKEN_MODES: tuple[str, ...] = ("strip", "package")


@dataclass(frozen=True, slots=True)
class BertScoreConfig:
    model: str
    layer: int
    strategy: Strategy = "sentences"
    special_tokens: SpecialTokens = "strip"
    idf: bool = False
    window_overlap: int = 128

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.special_tokens not in SPECIAL_TOKEN_MODES:
            raise ValueError(f"special_tokens must be one of {', '.join(SPECIAL_TOKEN_MODES)}")

    @classmethod
    def package_compatible(cls, model: str, layer: int, *, idf: bool = False) -> BertScoreConfig:
        return cls(model=model, layer=layer, strategy="first512", special_tokens="package", idf=idf)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": METRIC, "code_version": CODE_VERSION, **asdict(self)}


@dataclass(frozen=True, slots=True)
class SourceText:
    text: str
    sentences: Sequence[Span] = ()


@dataclass(frozen=True, slots=True)
class SummaryText:
    text: str
    words: Sequence[WordSpan] = ()


@dataclass(slots=True)
class SourceEmbedding:
    text: str
    embeddings: torch.Tensor  # tokens x dim, L2-normalised
    offsets: list[Span]
    special: list[bool]
    input_ids: list[int]
    truncated: bool


@dataclass(slots=True)
class AlignedToken:
    start: int
    end: int
    text: str
    similarity: float
    aligned_start: int | None  # None when the best match is a special token (package mode)
    aligned_end: int | None
    aligned_text: str
    weight: float
    word: int | None


@dataclass(slots=True)
class Word:
    start: int
    end: int
    text: str
    stopword: bool
    punct: bool
    tokens: list[int] = field(default_factory=list)
    similarity: float | None = None  # the lowest similarity of its tokens: one bad piece flags the word


@dataclass(slots=True)
class BertScoreResult:
    precision: float
    recall: float
    f1: float
    tokens: list[AlignedToken]
    words: list[Word]
    source_token_count: int
    summary_truncated: bool
    source_truncated: bool

    @property
    def scores(self) -> dict[str, float]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1}

    def payload(self) -> dict[str, Any]:
        return {
            "tokens": [
                {
                    "start": t.start,
                    "end": t.end,
                    "text": t.text,
                    "similarity": round(t.similarity, 6),
                    "aligned": None if t.aligned_start is None else [t.aligned_start, t.aligned_end],
                    "aligned_text": t.aligned_text,
                    "weight": t.weight,
                    "word": t.word,
                }
                for t in self.tokens
            ],
            "words": [
                {
                    "start": w.start,
                    "end": w.end,
                    "text": w.text,
                    "stopword": w.stopword,
                    "punct": w.punct,
                    "tokens": w.tokens,
                    "similarity": None if w.similarity is None else round(w.similarity, 6),
                }
                for w in self.words
            ],
            "source_token_count": self.source_token_count,
            "truncated": {"summary": self.summary_truncated, "source": self.source_truncated},
        }


@dataclass(frozen=True, slots=True)
class BertScoreFailure:
    """The score is undefined for this pair; `reason` says why (stored instead of a score)."""

    reason: str


@dataclass(frozen=True, slots=True)
class IdfWeights:
    weights: Mapping[int, float]
    unseen: float  # weight of a token that occurs in no document of the collection

    def get(self, token_id: int) -> float:
        return self.weights.get(token_id, self.unseen)


def idf_weights(token_id_sets: Iterable[set[int]], *, package_formula: bool) -> IdfWeights:
    """Inverse document frequency per token id over a collection of documents.

    The thesis (eq. 3.3) uses log M - log df; a token seen in no document would get an infinite
    weight there, so it is weighted as if seen once (log M). The bert-score package uses
    log((M + 1) / (df + 1)) and log(M + 1) for unseen tokens; package-compatible mode uses that.
    """
    counts: dict[int, int] = {}
    documents = 0
    for ids in token_id_sets:
        documents += 1
        for token_id in ids:
            counts[token_id] = counts.get(token_id, 0) + 1
    if package_formula:
        return IdfWeights(
            {token: math.log((documents + 1) / (count + 1)) for token, count in counts.items()},
            unseen=math.log(documents + 1),
        )
    return IdfWeights(
        {token: math.log(documents) - math.log(count) for token, count in counts.items()},
        unseen=math.log(documents) if documents else 0.0,
    )


class BertScoreExplainer:
    def __init__(self, encoder: TokenEncoder, config: BertScoreConfig, idf: IdfWeights | None = None) -> None:
        if config.idf and idf is None:
            raise ValueError("config.idf is on: pass the idf weights (see idf_weights)")
        self.encoder = encoder
        self.config = config
        self.idf = idf if config.idf else None

    # -- sources ----------------------------------------------------------------------------------
    def source_inputs(self, source: SourceText) -> tuple[list[Tokenized], list[tuple[int, int]] | None]:
        """The encoder inputs for one source document under the configured long-document strategy."""
        if not source.text.strip():
            return [], None
        if self.config.strategy == "first512":
            return [self.encoder.tokenize(source.text)], None
        if self.config.strategy == "windows":
            return self.encoder.tokenize_windows(source.text, overlap=self.config.window_overlap)
        sentences = list(source.sentences) or [(0, len(source.text))]
        return [self.encoder.tokenize(source.text[s:e], offset=s) for s, e in sentences], None

    def embed_sources(self, sources: Sequence[SourceText]) -> list[SourceEmbedding]:
        """Embed many documents in one sorted, batched pass (each document is encoded once)."""
        plans = [self.source_inputs(source) for source in sources]
        flat = [item for inputs, _ in plans for item in inputs]
        vectors = iter(self.encoder.embed(flat))
        return [
            self._stitch(source.text, inputs, keep, [next(vectors) for _ in inputs])
            for source, (inputs, keep) in zip(sources, plans, strict=True)
        ]

    def _stitch(
        self,
        text: str,
        inputs: list[Tokenized],
        keep: list[tuple[int, int]] | None,
        vectors: list[torch.Tensor],
    ) -> SourceEmbedding:
        rows: list[torch.Tensor] = []
        offsets: list[Span] = []
        special: list[bool] = []
        ids: list[int] = []
        strip = self.config.special_tokens == "strip"
        for number, (item, emb) in enumerate(zip(inputs, vectors, strict=True)):
            content_positions = [i for i, flag in enumerate(item.special) if not flag]
            if keep is not None:
                low, high = keep[number]
                kept_content = set(content_positions[low:high])
            else:
                kept_content = set(content_positions)
            selected = [i for i, flag in enumerate(item.special) if (i in kept_content) or (flag and not strip)]
            rows.append(emb[selected])
            offsets.extend(item.offsets[i] for i in selected)
            special.extend(item.special[i] for i in selected)
            ids.extend(item.input_ids[i] for i in selected)
        embeddings = torch.cat(rows) if rows else torch.zeros((0, 0))
        return SourceEmbedding(text, embeddings, offsets, special, ids, any(item.truncated for item in inputs))

    # -- summaries --------------------------------------------------------------------------------
    def explain(self, pairs: Sequence[tuple[SourceEmbedding, SummaryText]]) -> list[BertScoreResult | BertScoreFailure]:
        """Score and align each (embedded source, summary) pair; summaries are embedded in one batch."""
        tokenized = [self.encoder.tokenize(summary.text) if summary.text.strip() else None for _, summary in pairs]
        vectors = iter(self.encoder.embed([item for item in tokenized if item is not None]))
        results: list[BertScoreResult | BertScoreFailure] = []
        for (source, summary), item in zip(pairs, tokenized, strict=True):
            if item is None:
                results.append(BertScoreFailure("the summary is empty"))
                continue
            embedding = next(vectors)
            if not source.offsets:
                results.append(BertScoreFailure("the source document is empty"))
                continue
            results.append(self._match(source, summary, item, embedding))
        return results

    def _weights(self, ids: Sequence[int], special: Sequence[bool]) -> torch.Tensor:
        if self.idf is None:
            values = [0.0 if flag else 1.0 for flag in special]
        else:
            values = [0.0 if flag else self.idf.get(i) for i, flag in zip(ids, special, strict=True)]
        return torch.tensor(values, dtype=torch.float32)

    def _match(
        self, source: SourceEmbedding, summary: SummaryText, item: Tokenized, embedding: torch.Tensor
    ) -> BertScoreResult | BertScoreFailure:
        rows = list(range(len(item.input_ids)))
        if self.config.special_tokens == "strip":
            rows = [i for i in rows if not item.special[i]]
        if not any(not item.special[i] for i in rows):
            return BertScoreFailure("the summary has no tokens the encoder can embed")
        summary_ids = [item.input_ids[i] for i in rows]
        summary_special = [item.special[i] for i in rows]
        similarity = embedding[rows] @ source.embeddings.T
        best, best_index = similarity.max(dim=1)
        recall_best = similarity.max(dim=0).values
        summary_weights = self._weights(summary_ids, summary_special)
        source_weights = self._weights(source.input_ids, source.special)
        if float(summary_weights.sum()) <= 0 or float(source_weights.sum()) <= 0:
            return BertScoreFailure("all token weights are zero (every token is special or has idf 0)")
        precision = float((best * summary_weights).sum() / summary_weights.sum())
        recall = float((recall_best * source_weights).sum() / source_weights.sum())
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

        words = [Word(w.start, w.end, summary.text[w.start : w.end], w.is_stop, w.is_punct) for w in summary.words]
        word_starts = [w.start for w in words]
        tokens: list[AlignedToken] = []
        for row, token_weight, sim, match in zip(
            rows, summary_weights.tolist(), best.tolist(), best_index.tolist(), strict=True
        ):
            if item.special[row]:
                continue
            start, end = item.offsets[row]
            word_index = bisect.bisect_right(word_starts, start) - 1
            if word_index < 0 or start >= words[word_index].end:
                word_index = None
            aligned = None if source.special[match] else source.offsets[match]
            tokens.append(
                AlignedToken(
                    start=start,
                    end=end,
                    text=summary.text[start:end],
                    similarity=sim,
                    aligned_start=aligned[0] if aligned else None,
                    aligned_end=aligned[1] if aligned else None,
                    aligned_text=source.text[aligned[0] : aligned[1]] if aligned else "",
                    weight=token_weight,
                    word=word_index,
                )
            )
            if word_index is not None:
                word = words[word_index]
                word.tokens.append(len(tokens) - 1)
                word.similarity = sim if word.similarity is None else min(word.similarity, sim)
        return BertScoreResult(
            precision=precision,
            recall=recall,
            f1=f1,
            tokens=tokens,
            words=words,
            source_token_count=int(sum(1 for flag in source.special if not flag)),
            summary_truncated=item.truncated,
            source_truncated=source.truncated,
        )
