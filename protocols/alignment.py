"""BERTScore's alignment per word: the one place where the token-level payload becomes what people read.

BERTScore aligns encoder tokens (word pieces), so a summary word such as "measles" (pieces "me", "as",
"les") can have each piece aligned inside a different source word or a different occurrence of one.
Shown as stored, the source side reads "me as les" with fragments lit inside words. This module derives,
from the stored payload (docs/EXPLANATIONS.md, `bertscore`), for each summary word:
- its pieces, each with its similarity and the whole source word(s) its aligned token lies in;
- the distinct whole source words of all its pieces (what a view lights);
- its score: the lowest similarity of its pieces (the payload's `words[].similarity`; see `AlignedWord`).

Summary words are the payload's `words` (their index is the `bertscore` task's unit index, and they carry
the stopword and punctuation flags that decide which words are judged); source words are the project's
one word tokenizer (the `words` package) over the document text. Used by the `bertscore` task's units (the
task view), the inspector and, through those units, the human-enhanced metric. No Django here.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from words import is_punctuation, word_tokens

# Why a derivation is partial, as the views say it.
NO_WORDS = "the explanation stores no words: summary words come from the word tokenizer, stopwords unknown"
NO_DOCUMENT = "no document text: each piece's source is its aligned token, not the whole word"


@dataclass(frozen=True, slots=True)
class SourceWord:
    """A whole word of the source document (0-based, end-exclusive offsets into the document text)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Piece:
    """One encoder token of a summary word and where BERTScore aligned it."""

    start: int  # offsets into the summary text
    end: int
    text: str
    similarity: float | None
    aligned: tuple[int, int] | None  # the aligned source token; None: a special token ([CLS], <s>, ...)
    aligned_text: str
    source: SourceWord | None  # the whole source word(s) the aligned token lies in; None: a special token


@dataclass(frozen=True, slots=True)
class AlignedWord:
    """One summary word with its pieces.

    `score` is the lowest similarity of its pieces: the annotators of the `bertscore` task judge a word as
    a whole, and the human-enhanced metric (thesis 5.2) gives each important word one value, 1 only when
    the word is similar to its source word; a word is that similar only as far as its worst piece is (one
    piece aligned elsewhere makes the word's alignment wrong). The mean would let two good pieces hide a
    wrong one. It equals the payload's `words[].similarity` and the highlighter's per-character rule.
    """

    index: int  # index in the payload's `words`: the `bertscore` task's unit index
    start: int
    end: int
    text: str
    stopword: bool
    punct: bool
    pieces: tuple[Piece, ...]
    sources: tuple[SourceWord, ...]  # distinct, in the order of the pieces
    score: float | None

    @property
    def important(self) -> bool:
        """A word the `bertscore` task asks about ("important words", thesis 5.2): a content word with pieces."""
        return not self.stopword and not self.punct and bool(self.pieces)

    @property
    def source_text(self) -> str:
        """The source words, as a reader names them, each text once ("a special token" when every piece
        matched one): the two occurrences of "measles" read "measles"."""
        return ", ".join(dict.fromkeys(word.text for word in self.sources)) or "a special token"


@dataclass(frozen=True, slots=True)
class WordAlignment:
    words: tuple[AlignedWord, ...]
    notes: tuple[str, ...] = ()  # why the derivation is partial (NO_WORDS, NO_DOCUMENT); empty: complete

    @property
    def important(self) -> list[AlignedWord]:
        return [word for word in self.words if word.important]


class _SourceWords:
    """The document's words, found by offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = word_tokens(text)
        self.starts = [start for _, start, _ in self.words]

    def covering(self, start: int, end: int) -> SourceWord:
        """The whole word(s) overlapping [start, end): one span from the first one's start to the last one's
        end (a token such as RoBERTa's "'s" spans two words of the tokenizer); the token itself when it
        overlaps no word."""
        first = max(bisect.bisect_right(self.starts, start) - 1, 0)
        if first < len(self.words) and self.words[first][2] <= start:
            first += 1
        last = bisect.bisect_left(self.starts, max(end, start + 1)) - 1
        if first > last or first >= len(self.words):
            return SourceWord(start, end, self.text[start:end])
        low, high = self.words[first][1], self.words[last][2]
        return SourceWord(low, high, self.text[low:high])


# Payloads are parsed JSON: concrete types are checked (abstract ones such as Mapping cost more per token).
def _similarity(value: Any) -> float | None:
    if type(value) not in (float, int) or not math.isfinite(value):
        return None
    return float(value)


def _offsets(value: Any) -> tuple[int, int] | None:
    if type(value) in (list, tuple) and len(value) == 2:
        start, end = value
        if type(start) is int and type(end) is int and 0 <= start <= end:
            return start, end
    return None


def _piece(token: Mapping[str, Any], source_words: _SourceWords | None) -> Piece:
    aligned = _offsets(token.get("aligned"))
    aligned_text = str(token.get("aligned_text", ""))
    if aligned is None:
        source = None
    elif source_words is None:
        source = SourceWord(aligned[0], aligned[1], aligned_text)
    else:
        source = source_words.covering(*aligned)
    return Piece(
        start=int(token["start"]),
        end=int(token["end"]),
        text=str(token.get("text", "")),
        similarity=_similarity(token.get("similarity")),
        aligned=aligned,
        aligned_text=aligned_text,
        source=source,
    )


def _word(index: int, word: Mapping[str, Any], pieces: Sequence[Piece]) -> AlignedWord:
    sources: list[SourceWord] = []
    for piece in pieces:
        if piece.source is not None and piece.source not in sources:
            sources.append(piece.source)
    similarities = [piece.similarity for piece in pieces if piece.similarity is not None]
    return AlignedWord(
        index=index,
        start=int(word["start"]),
        end=int(word["end"]),
        text=str(word.get("text", "")),
        stopword=bool(word.get("stopword", False)),
        punct=bool(word.get("punct", False)),
        pieces=tuple(pieces),
        sources=tuple(sources),
        score=min(similarities) if similarities else None,
    )


def word_alignment(payload: Mapping[str, Any], *, summary_text: str = "", document_text: str = "") -> WordAlignment:
    """The word-level view of a `bertscore` payload.

    Pieces belong to a word by the word's `tokens` list (as stored). Degrades, saying so in `notes`: without
    the payload's `words` (not written by any version so far, but old or foreign rows may lack fields), words
    come from the `words` package over `summary_text` with pieces assigned by offset and no word counted as a
    stopword; without `document_text`, a piece's source is its aligned token. Tokens and words without
    offsets are left out; special tokens are never in the payload's tokens, a piece aligned to one has `source` None.
    """
    notes: list[str] = []
    source_words = _SourceWords(document_text) if document_text else None
    if source_words is None:
        notes.append(NO_DOCUMENT)
    pieces: dict[int, Piece] = {
        number: _piece(token, source_words)
        for number, token in enumerate(payload.get("tokens") or [])
        if type(token) is dict and _offsets([token.get("start"), token.get("end")])
    }
    stored = payload.get("words")
    words: list[AlignedWord] = []
    if isinstance(stored, list):
        for index, word in enumerate(stored):
            if type(word) is not dict or _offsets([word.get("start"), word.get("end")]) is None:
                continue  # a damaged entry: left out, the others keep their indexes
            members = [pieces[t] for t in word.get("tokens", []) if isinstance(t, int) and t in pieces]
            words.append(_word(index, word, members))
    else:
        notes.append(NO_WORDS)
        for index, (text, start, end) in enumerate(word_tokens(summary_text)):
            members = [piece for piece in pieces.values() if piece.start < end and start < piece.end]
            punct = is_punctuation(text)
            words.append(_word(index, {"start": start, "end": end, "text": text, "punct": punct}, members))
    return WordAlignment(tuple(words), tuple(notes))


def alignment_state(word: AlignedWord) -> dict[str, Any]:
    """A word as the browser scripts read it (task view and inspector): what to light and what to say."""
    return {
        "word": word.index,
        "start": word.start,
        "end": word.end,
        "text": word.text,
        "score": word.score,
        "sources": [[source.start, source.end, source.text] for source in word.sources],
        "pieces": [
            {
                "start": piece.start,
                "end": piece.end,
                "text": piece.text,
                "similarity": piece.similarity,
                "source": None if piece.source is None else [piece.source.start, piece.source.end, piece.source.text],
                "aligned_text": piece.aligned_text,
            }
            for piece in word.pieces
        ],
    }
