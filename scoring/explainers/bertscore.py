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
from typing import TYPE_CHECKING, Any, Literal

import torch

from corpus.nlp import Span, WordSpan, word_spans
from scoring.encoders import TokenEncoder, Tokenized
from scoring.explainers.base import DocumentInput, Explained, SummaryInput
from scoring.metrics import SPECIAL_TOKEN_MODES, STRATEGIES

if TYPE_CHECKING:
    from spacy.language import Language

METRIC = "bertscore"
CODE_VERSION = "1"

Strategy = Literal["sentences", "first512", "windows"]
SpecialTokens = Literal["strip", "package"]


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
    weights: torch.Tensor | None = None  # token weights, computed once per source


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
    def scores(self) -> dict[str, float | None]:
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
    def __init__(
        self,
        encoder: TokenEncoder,
        config: BertScoreConfig,
        idf: IdfWeights | None = None,
        nlp: Language | None = None,
    ) -> None:
        if config.idf and idf is None:
            raise ValueError("config.idf is on: pass the idf weights (see idf_weights)")
        self.encoder = encoder
        self.config = config
        self.idf = idf if config.idf else None
        self.nlp = nlp

    # -- sources ----------------------------------------------------------------------------------
    def source_inputs(self, source: SourceText) -> tuple[list[Tokenized], list[tuple[int, int]] | None]:
        """The encoder inputs for one source document under the configured long-document strategy."""
        return self._source_inputs([source])[0]

    def _source_inputs(
        self, sources: Sequence[SourceText]
    ) -> list[tuple[list[Tokenized], list[tuple[int, int]] | None]]:
        plans: list[tuple[list[Tokenized], list[tuple[int, int]] | None]] = []
        pieces: list[tuple[int, str, int]] = []  # (source, text, offset) tokenized together below
        for number, source in enumerate(sources):
            plans.append(([], None))
            if not source.text.strip():
                continue
            if self.config.strategy == "windows":
                plans[number] = self.encoder.tokenize_windows(source.text, overlap=self.config.window_overlap)
            elif self.config.strategy == "first512":
                pieces.append((number, source.text, 0))
            else:
                for start, end in list(source.sentences) or [(0, len(source.text))]:
                    pieces.append((number, source.text[start:end], start))
        tokenized = self.encoder.tokenize_many([text for _, text, _ in pieces], offsets=[o for _, _, o in pieces])
        for (number, _, _), item in zip(pieces, tokenized, strict=True):
            plans[number][0].append(item)
        return plans

    def embed_sources(self, sources: Sequence[SourceText]) -> list[SourceEmbedding]:
        """Embed many documents in one sorted, batched pass (each document is encoded once)."""
        plans = self._source_inputs(sources)
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
            if selected and selected == list(range(selected[0], selected[-1] + 1)):
                rows.append(emb[selected[0] : selected[-1] + 1])  # a slice, not a gather: the usual case
            else:
                rows.append(emb[selected])
            offsets.extend(item.offsets[i] for i in selected)
            special.extend(item.special[i] for i in selected)
            ids.extend(item.input_ids[i] for i in selected)
        embeddings = (rows[0] if len(rows) == 1 else torch.cat(rows)) if rows else torch.zeros((0, 0))
        return SourceEmbedding(text, embeddings, offsets, special, ids, any(item.truncated for item in inputs))

    # -- summaries --------------------------------------------------------------------------------
    def explain(self, pairs: Sequence[tuple[SourceEmbedding, SummaryText]]) -> list[BertScoreResult | BertScoreFailure]:
        """Score and align each (embedded source, summary) pair; summaries are embedded in one batch.

        The similarity matrices of many pairs are computed in a few batched matrix products (pairs grouped
        by their source), not one small product per pair: small operations cost more in dispatch and
        thread synchronisation than in arithmetic.
        """
        texts = [summary.text for _, summary in pairs if summary.text.strip()]
        encoded = iter(self.encoder.tokenize_many(texts))
        tokenized = [next(encoded) if summary.text.strip() else None for _, summary in pairs]
        vectors = iter(self.encoder.embed([item for item in tokenized if item is not None]))
        results: list[BertScoreResult | BertScoreFailure | None] = [None] * len(pairs)
        matches: list[_Pending] = []
        for index, ((source, _), item) in enumerate(zip(pairs, tokenized, strict=True)):
            if item is None:
                results[index] = BertScoreFailure("the summary is empty")
                continue
            embedding = next(vectors)
            if not source.offsets:
                results[index] = BertScoreFailure("the source document is empty")
                continue
            rows = list(range(len(item.input_ids)))
            if self.config.special_tokens == "strip":
                rows = [i for i in rows if not item.special[i]]
            if not any(not item.special[i] for i in rows):
                results[index] = BertScoreFailure("the summary has no tokens the encoder can embed")
                continue
            weights = self._weights([item.input_ids[i] for i in rows], [item.special[i] for i in rows])
            source_weights = self._source_weights(source)
            if float(weights.sum()) <= 0 or float(source_weights.sum()) <= 0:
                results[index] = BertScoreFailure("all token weights are zero (every token is special or has idf 0)")
                continue
            matches.append(_Pending(index, source, item, embedding[rows], rows, weights))
        for pending, (precision, recall, best, best_index) in zip(matches, self._match_all(matches), strict=True):
            summary = pairs[pending.index][1]
            results[pending.index] = self._result(pending, summary, precision, recall, best, best_index)
        return [result for result in results if result is not None]

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        """The common explainer interface (scoring.explainers.base): words come from the spaCy pipeline."""
        if self.nlp is None:
            raise ValueError("explain_batch needs the spaCy pipeline for word segmentation (pass nlp)")
        sources = self.embed_sources([SourceText(d.text, d.sentence_spans()) for d in documents])
        flat = [(source, summary) for source, group in zip(sources, summaries, strict=True) for summary in group]
        words = word_spans(self.nlp, [summary.text for _, summary in flat])
        results = iter(
            self.explain(
                [
                    (source, SummaryText(summary.text, summary_words))
                    for (source, summary), summary_words in zip(flat, words, strict=True)
                ]
            )
        )
        explained: list[list[Explained]] = []
        for group in summaries:
            row = []
            for _ in group:
                result = next(results)
                if isinstance(result, BertScoreFailure):
                    row.append(Explained.undefined(result.reason))
                else:
                    row.append(Explained(result.precision, result.scores, result.payload()))
            explained.append(row)
        return explained

    def _weights(self, ids: Sequence[int], special: Sequence[bool]) -> torch.Tensor:
        if self.idf is None:
            values = [0.0 if flag else 1.0 for flag in special]
        else:
            values = [0.0 if flag else self.idf.get(i) for i, flag in zip(ids, special, strict=True)]
        return torch.tensor(values, dtype=torch.float32)

    def _source_weights(self, source: SourceEmbedding) -> torch.Tensor:
        if source.weights is None:
            source.weights = self._weights(source.input_ids, source.special)
        return source.weights

    def _match_all(self, matches: Sequence[_Pending]) -> list[tuple[float, float, list[float], list[int]]]:
        """P, R and each summary token's best similarity and source token, for every pending pair."""
        groups: dict[int, list[int]] = {}
        for position, pending in enumerate(matches):
            groups.setdefault(id(pending.source), []).append(position)
        out: list[tuple[float, float, list[float], list[int]]] = [(0.0, 0.0, [], [])] * len(matches)
        chunk: list[list[int]] = []
        for members in groups.values():
            chunk.append(members)
            if _chunk_size(matches, chunk) > MATCH_BUDGET:
                if len(chunk) > 1:
                    chunk.pop()
                    self._match_chunk(matches, chunk, out)
                    chunk = [members]
                else:
                    self._match_chunk(matches, chunk, out)
                    chunk = []
        if chunk:
            self._match_chunk(matches, chunk, out)
        return out

    def _match_chunk(
        self,
        matches: Sequence[_Pending],
        chunk: list[list[int]],
        out: list[tuple[float, float, list[float], list[int]]],
    ) -> None:
        """Greedy matching for the pairs of several sources in one batched product.

        Shapes: sources (G, Ld, d); summaries (G, S, Ls, d), S = most summaries of one source in the chunk.
        Padding columns of a source never win a max; padding rows of a summary never count for recall.
        """
        sources = [matches[members[0]].source for members in chunk]
        dim = sources[0].embeddings.shape[1]
        source_len = max(source.embeddings.shape[0] for source in sources)
        per_source = max(len(members) for members in chunk)
        summary_len = max(matches[i].embedding.shape[0] for members in chunk for i in members)
        # Two extra coordinates keep padding out of every max without masking the big similarity tensor:
        # a real summary row has (1, 0) and a padding row (0, -PAD); a real source column (0, 1) and a padding
        # column (-PAD, 0). Real-real products are unchanged (the extra terms are exact zeros); any product
        # with padding is -PAD, below every cosine.
        source_emb = torch.zeros((len(chunk), source_len, dim + 2))
        source_emb[:, :, dim] = -_PAD
        source_weights = torch.zeros((len(chunk), source_len))
        summary_emb = torch.zeros((len(chunk), per_source, summary_len, dim + 2))
        summary_emb[..., dim + 1] = -_PAD
        summary_weights = torch.zeros((len(chunk), per_source, summary_len))
        for g, members in enumerate(chunk):
            source = sources[g]
            length = source.embeddings.shape[0]
            source_emb[g, :length, :dim] = source.embeddings
            source_emb[g, :length, dim] = 0.0
            source_emb[g, :length, dim + 1] = 1.0
            source_weights[g, :length] = self._source_weights(source)
            for s, position in enumerate(members):
                pending = matches[position]
                rows = pending.embedding.shape[0]
                summary_emb[g, s, :rows, :dim] = pending.embedding
                summary_emb[g, s, :rows, dim] = 1.0
                summary_emb[g, s, :rows, dim + 1] = 0.0
                summary_weights[g, s, :rows] = pending.weights
        similarity = torch.bmm(
            summary_emb.view(len(chunk), per_source * summary_len, dim + 2), source_emb.transpose(1, 2)
        ).view(len(chunk), per_source, summary_len, source_len)
        best, best_index = similarity.max(dim=3)
        recall_best = similarity.max(dim=2).values.clamp(min=-1.0)  # padding columns weigh 0 anyway
        precision = (best * summary_weights).sum(-1) / summary_weights.sum(-1).clamp(min=1e-30)
        recall = (recall_best * source_weights[:, None, :]).sum(-1) / source_weights.sum(-1)[:, None]
        best_list, index_list = best.tolist(), best_index.tolist()
        precision_list, recall_list = precision.tolist(), recall.tolist()
        for g, members in enumerate(chunk):
            for s, position in enumerate(members):
                rows = matches[position].embedding.shape[0]
                out[position] = (
                    precision_list[g][s],
                    recall_list[g][s],
                    best_list[g][s][:rows],
                    index_list[g][s][:rows],
                )

    def _result(
        self,
        pending: _Pending,
        summary: SummaryText,
        precision: float,
        recall: float,
        best: list[float],
        best_index: list[int],
    ) -> BertScoreResult:
        source, item = pending.source, pending.item
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        words = [Word(w.start, w.end, summary.text[w.start : w.end], w.is_stop, w.is_punct) for w in summary.words]
        word_starts = [w.start for w in words]
        tokens: list[AlignedToken] = []
        for row, token_weight, sim, match in zip(pending.rows, pending.weights.tolist(), best, best_index, strict=True):
            if item.special[row]:
                continue
            start, end = item.offsets[row]
            word_index: int | None = bisect.bisect_right(word_starts, start) - 1
            if word_index is not None and (word_index < 0 or start >= words[word_index].end):
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


# Similarity entries (pairs x summary tokens x source tokens) per batched product: about 32 MB of floats.
MATCH_BUDGET = 8_000_000
_PAD = 1000.0


@dataclass(slots=True)
class _Pending:
    """A pair waiting for its similarity matrix: the summary rows that take part and their weights."""

    index: int
    source: SourceEmbedding
    item: Tokenized
    embedding: torch.Tensor
    rows: list[int]
    weights: torch.Tensor


def _chunk_size(matches: Sequence[_Pending], chunk: list[list[int]]) -> int:
    source_len = max(matches[members[0]].source.embeddings.shape[0] for members in chunk)
    per_source = max(len(members) for members in chunk)
    summary_len = max(matches[i].embedding.shape[0] for members in chunk for i in members)
    return len(chunk) * per_source * summary_len * source_len
