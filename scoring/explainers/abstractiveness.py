"""Abstractiveness of each summary sentence (FEQA, Durmus et al. 2020, section 2.1). No Django here.

Words are spaCy tokens, lowercased, without punctuation. Each summary sentence gets the first type that
fits, from least to most abstractive:
    sentence_extraction  the sentence equals a source sentence
    span_extraction      it is a contiguous part of one source sentence
    word_extraction      it is a subsequence of one source sentence's words (words deleted)
    perfect_fusion       it is pieced together from parts of k > 1 source sentences in their original order
    none                 none of these
plus the share of its n-grams (n = 1, 2, 3) that never occur in the source. The summary's scores are the
shares of novel n-grams over all its sentences; the headline score is the share of novel trigrams (FEQA's
abstractiveness measure). A summary with fewer than three words has no trigram, hence no score.

Payload (summary offsets into the summary, `source` offsets into the document):
    {"sentences": [{"start", "end", "text", "type", "k", "source": [{"index", "start", "end"}],
                    "novel": {"1": 0.2, "2": 0.5, "3": 0.8}, "novel_words": [[start, end], ...]}],
     "types": {"span_extraction": 1, ...}}
`k` is the number of source sentences (1 for the extraction types, None for "none"); `source` lists the
source sentence parts each sentence was built from; `novel_words` are the summary words absent from the source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from corpus.nlp import words_lower
from scoring.explainers.base import EMPTY_SUMMARY, DocumentInput, Explained, SummaryInput, rounded

if TYPE_CHECKING:
    from spacy.language import Language

METRIC = "abstractiveness"
CODE_VERSION = "1"
TYPES = ("sentence_extraction", "span_extraction", "word_extraction", "perfect_fusion", "none")
Word = tuple[int, int, str]  # start, end, lowercased text


@dataclass(frozen=True, slots=True)
class AbstractivenessConfig:
    def as_dict(self) -> dict[str, Any]:
        return {"metric": METRIC, "code_version": CODE_VERSION, "words": "spacy_lower_no_punct", "ngrams": [1, 2, 3]}


@dataclass(frozen=True, slots=True)
class Piece:
    sentence: int  # index of the source sentence
    start: int  # first and one-past-last word of that sentence
    end: int


@dataclass(frozen=True, slots=True)
class Extraction:
    type: str
    pieces: tuple[Piece, ...] = ()

    @property
    def k(self) -> int | None:
        return len({piece.sentence for piece in self.pieces}) if self.pieces else None


def _find(needle: Sequence[str], haystack: Sequence[str]) -> int:
    """Start of the first occurrence of needle as a contiguous run in haystack, or -1."""
    width = len(needle)
    for begin in range(len(haystack) - width + 1):
        if list(haystack[begin : begin + width]) == list(needle):
            return begin
    return -1


def _subsequence(needle: Sequence[str], haystack: Sequence[str]) -> list[int] | None:
    positions, cursor = [], 0
    for word in needle:
        while cursor < len(haystack) and haystack[cursor] != word:
            cursor += 1
        if cursor == len(haystack):
            return None
        positions.append(cursor)
        cursor += 1
    return positions


def classify(summary: Sequence[str], sources: Sequence[Sequence[str]]) -> Extraction:
    """The FEQA extraction type of one summary sentence (its words) against the source sentences (theirs)."""
    if not summary:
        return Extraction("none")
    for index, source in enumerate(sources):
        if list(source) == list(summary):
            return Extraction("sentence_extraction", (Piece(index, 0, len(source)),))
    for index, source in enumerate(sources):
        begin = _find(summary, source)
        if begin >= 0:
            return Extraction("span_extraction", (Piece(index, begin, begin + len(summary)),))
    for index, source in enumerate(sources):
        positions = _subsequence(summary, source)
        if positions is not None:
            return Extraction("word_extraction", tuple(Piece(index, p, p + 1) for p in positions))
    pieces = _perfect_fusion(summary, sources)
    if pieces is not None and len(pieces) > 1:
        return Extraction("perfect_fusion", pieces)
    return Extraction("none")


def _perfect_fusion(summary: Sequence[str], sources: Sequence[Sequence[str]]) -> tuple[Piece, ...] | None:
    """The fewest contiguous pieces of source sentences, in increasing sentence order, that spell the summary.

    From a given summary position, the longest piece a sentence offers is always the best choice from
    that sentence (what is left is a suffix of what a shorter piece would leave, and suffixes of pieces
    are pieces), so only longest pieces need to be tried.
    """
    occurrences: dict[str, list[tuple[int, int]]] = {}
    for index, source in enumerate(sources):
        for position, word in enumerate(source):
            occurrences.setdefault(word, []).append((index, position))

    def longest(at: int) -> dict[int, tuple[int, int]]:
        """Per source sentence: (start word, length) of its longest piece matching the summary from `at`."""
        best: dict[int, tuple[int, int]] = {}
        for index, position in occurrences.get(summary[at], []):
            source = sources[index]
            length = 0
            while at + length < len(summary) and position + length < len(source):
                if source[position + length] != summary[at + length]:
                    break
                length += 1
            if length > best.get(index, (0, 0))[1]:
                best[index] = (position, length)
        return best

    @cache
    def cover(at: int, after: int) -> tuple[Piece, ...] | None:
        if at == len(summary):
            return ()
        result: tuple[Piece, ...] | None = None
        for index, (position, length) in longest(at).items():
            if index <= after:
                continue
            rest = cover(at + length, index)
            if rest is not None and (result is None or len(rest) + 1 < len(result)):
                result = (Piece(index, position, position + length), *rest)
        return result

    return cover(0, -1)


def ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


class AbstractivenessExplainer:
    def __init__(self, nlp: Language) -> None:
        self.nlp = nlp

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        results = []
        for document, group in zip(documents, summaries, strict=True):
            spans = document.sentence_spans()
            source_words = [
                [(start + offset, end + offset, word) for start, end, word in words]
                for (offset, _), words in zip(
                    spans, words_lower(self.nlp, [document.text[s:e] for s, e in spans]), strict=True
                )
            ]
            plain = [[word for _, _, word in words] for words in source_words]
            everything = [word for words in plain for word in words]
            source_ngrams = {n: set(ngrams(everything, n)) for n in (1, 2, 3)}
            results.append([self._explain(summary, source_words, plain, source_ngrams) for summary in group])
        return results

    def _explain(
        self,
        summary: SummaryInput,
        source_words: list[list[Word]],
        plain: list[list[str]],
        source_ngrams: dict[int, set[tuple[str, ...]]],
    ) -> Explained:
        if not summary.text.strip():
            return Explained.undefined(EMPTY_SUMMARY)
        spans = summary.sentence_spans()
        totals: Counter[int] = Counter()
        novel_totals: Counter[int] = Counter()
        types: Counter[str] = Counter()
        sentences = []
        for (offset, end), words in zip(
            spans, words_lower(self.nlp, [summary.text[s:e] for s, e in spans]), strict=True
        ):
            words = [(s + offset, e + offset, word) for s, e, word in words]
            plain_summary = [word for _, _, word in words]
            extraction = classify(plain_summary, plain)
            types[extraction.type] += 1
            novel: dict[str, float | None] = {}
            for n in (1, 2, 3):
                grams = ngrams(plain_summary, n)
                missing = sum(1 for gram in grams if gram not in source_ngrams[n])
                totals[n] += len(grams)
                novel_totals[n] += missing
                novel[str(n)] = rounded(missing / len(grams)) if grams else None
            sentences.append(
                {
                    "start": offset,
                    "end": end,
                    "text": summary.text[offset:end],
                    "type": extraction.type,
                    "k": extraction.k,
                    "source": [
                        {
                            "index": piece.sentence,
                            "start": source_words[piece.sentence][piece.start][0],
                            "end": source_words[piece.sentence][piece.end - 1][1],
                        }
                        for piece in extraction.pieces
                    ],
                    "novel": novel,
                    "novel_words": [[s, e] for s, e, word in words if (word,) not in source_ngrams[1]],
                }
            )
        scores = {f"novel_{n}": (novel_totals[n] / totals[n] if totals[n] else None) for n in (1, 2, 3)}
        payload = {"sentences": sentences, "types": dict(types)}
        if scores["novel_3"] is None:
            reason = "the summary has fewer than three words, so it has no trigram to compare"
            return Explained(score=None, scores=scores, payload=payload, error=reason)
        return Explained(score=scores["novel_3"], scores=scores, payload=payload)
