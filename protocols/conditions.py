"""Controlled conditions of a study (does the metric's highlight anchor the annotator?): what an annotator
sees of the metric's evidence under a condition, and in which order a within-annotator design shows its
conditions. No Django here: units in, units out (docs/EXPLANATIONS.md, "Evidence under a condition").

The evidence is what the metric contributed to the view, beyond the unit itself:
- `bertscore`: the source words each summary word's pieces align to (`aligned`, `aligned_text`,
  `alignment.sources`, each piece's `source`) and the similarities;
- `qgqa`: the answer found in the summary and the one found in the source (`summary_answer`,
  `source_answer`) and their F1;
- `entailment`: the k most similar source sentences of each summary sentence (`top`).

`hidden` removes all of it (the units stay: the annotator still judges each word, question or sentence).
`shuffled` keeps its amount and shape but moves every highlight to another place, drawn by a generator
seeded with the item and the condition, so every annotator of a condition sees the same placebo on an item
and a reload shows it again:
- `bertscore`: each aligned source word becomes a random word of the document (punctuation excluded);
  the similarities stay as stored;
- `qgqa`: each answer becomes a random span of as many words, in the text it was found in (the summary's
  answer in the summary, the source's in the document); an unanswerable answer stays unanswerable, the F1
  stays as stored;
- `entailment`: the top-k sentences become k distinct random sentences of the document, in the stored
  ranks with their similarities.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from protocols.tasks import Unit
from words import is_punctuation, word_tokens

SHOWN = "shown"
HIDDEN = "hidden"
SHUFFLED = "shuffled"
EVIDENCE = (SHOWN, HIDDEN, SHUFFLED)
# The tasks whose view shows metric evidence; a condition may hide or shuffle evidence only in these.
EVIDENCE_TASKS = ("bertscore", "qgqa", "entailment")
DESIGNS = ("between", "within")
# More arms than this is no controlled experiment a crowd of a few dozen can fill.
MAX_CONDITIONS = 6


def condition_order(conditions: Sequence[Any], first: int) -> list[Any]:
    """The order in which an annotator of a within-annotator design meets the conditions: a Latin-square
    row, the conditions rotated to start at the one at index `first` (the annotator's join order modulo
    the number of conditions, so consecutive annotators start at consecutive conditions)."""
    if not conditions:
        return []
    start = first % len(conditions)
    return [*conditions[start:], *conditions[:start]]


def block_of(taken: int, *, total: int, conditions: int) -> int:
    """Which block (0-based) an annotator's item number `taken` + 1 falls in, when `total` items are split
    into `conditions` blocks as equal as possible (the first blocks take the remainder)."""
    if conditions <= 1:
        return 0
    size, extra = divmod(max(total, conditions), conditions)
    # The first `extra` blocks hold size + 1 items.
    boundary = extra * (size + 1)
    if taken < boundary:
        return taken // (size + 1)
    return min(conditions - 1, extra + (taken - boundary) // max(size, 1))


def units_under_evidence(
    *,
    task_key: str,
    units: Sequence[Unit],
    evidence: str,
    seed: str,
    summary_text: str = "",
    document_text: str = "",
    document_sentences: Sequence[Sequence[int]] = (),
) -> list[Unit]:
    """The units as an annotator in a condition with this `evidence` sees them (see the module's text).
    `seed` names the item and the condition (e.g. "item 12 condition 3"): the same seed gives the same
    shuffle. Tasks without metric evidence and the `shown` evidence give the units unchanged."""
    if evidence not in EVIDENCE:
        raise ValueError(f"unknown evidence {evidence!r}; known: {', '.join(EVIDENCE)}")
    if evidence == SHOWN or task_key not in EVIDENCE_TASKS:
        return list(units)
    rng = random.Random(f"{task_key}|{seed}")
    if task_key == "bertscore":
        words = [(start, end, text) for text, start, end in word_tokens(document_text) if not is_punctuation(text)]
        return [replace(unit, extra=_bertscore_extra(unit.extra, evidence, rng, words)) for unit in units]
    if task_key == "qgqa":
        texts = {"summary_answer": summary_text, "source_answer": document_text}
        # The two statement units of one question share its answers: draw them once per question.
        drawn: dict[Any, dict[str, Any]] = {}
        result = []
        for unit in units:
            number = unit.extra.get("question_number", unit.index // 2)
            if number not in drawn:
                drawn[number] = _qgqa_extra(unit.extra, evidence, rng, texts)
            result.append(replace(unit, extra={**unit.extra, **drawn[number]}))
        return result
    sentences = [(int(start), int(end)) for start, end in document_sentences]
    return [replace(unit, extra=_entailment_extra(unit.extra, evidence, rng, sentences)) for unit in units]


def _bertscore_extra(
    extra: Mapping[str, Any], evidence: str, rng: random.Random, words: Sequence[tuple[int, int, str]]
) -> dict[str, Any]:
    alignment = dict(extra.get("alignment") or {})
    pieces = [dict(piece) for piece in alignment.get("pieces", [])]
    if evidence == HIDDEN or not words:
        for piece in pieces:
            piece.update(similarity=None, source=None, aligned_text="")
        alignment.update(score=None, sources=[], pieces=pieces)
        return {**extra, "aligned": [], "aligned_text": "", "similarity": None, "alignment": alignment}
    originals = list(dict.fromkeys((source[0], source[1]) for source in alignment.get("sources", [])))
    # Distinct places, as the stored sources are: as many words light up as under `shown`.
    picks = rng.sample(range(len(words)), min(len(originals), len(words)))
    moved = {original: words[pick] for original, pick in zip(originals, picks, strict=False)}
    for piece in pieces:
        source = piece.get("source")
        if source is not None:
            new = moved.get((source[0], source[1])) or words[rng.randrange(len(words))]
            piece.update(source=list(new), aligned_text=new[2])
    sources = [moved[key] for key in originals if key in moved]
    alignment.update(sources=[list(source) for source in sources], pieces=pieces)
    names = ", ".join(dict.fromkeys(text for _, _, text in sources)) or "a special token"
    return {
        **extra,
        "aligned": [[start, end] for start, end, _ in sources],
        "aligned_text": names,
        "alignment": alignment,
    }


def _random_span(text: str, words: int, rng: random.Random) -> dict[str, Any]:
    tokens = [(start, end) for token, start, end in word_tokens(text) if not is_punctuation(token)]
    if not tokens:
        return {"start": None, "end": None, "text": "", "unanswerable": True}
    length = max(1, min(words, len(tokens)))
    first = rng.randrange(len(tokens) - length + 1)
    start, end = tokens[first][0], tokens[first + length - 1][1]
    return {"start": start, "end": end, "text": text[start:end], "unanswerable": False}


def _qgqa_extra(
    extra: Mapping[str, Any], evidence: str, rng: random.Random, texts: Mapping[str, str]
) -> dict[str, Any]:
    if evidence == HIDDEN:
        return {"summary_answer": None, "source_answer": None, "f1": None}
    result: dict[str, Any] = {}
    for key, text in texts.items():
        answer = extra.get(key)
        if not isinstance(answer, Mapping) or answer.get("unanswerable") or answer.get("start") is None:
            result[key] = answer
            continue
        length = sum(1 for token, _, _ in word_tokens(str(answer.get("text", ""))) if not is_punctuation(token))
        result[key] = {**answer, **_random_span(text, length, rng)}
    return result


def _entailment_extra(
    extra: Mapping[str, Any], evidence: str, rng: random.Random, sentences: Sequence[tuple[int, int]]
) -> dict[str, Any]:
    top = list(extra.get("top") or [])
    if evidence == HIDDEN or not sentences:
        return {**extra, "top": []}
    chosen = rng.sample(range(len(sentences)), min(len(top), len(sentences)))
    moved = [
        {**entry, "index": index, "start": sentences[index][0], "end": sentences[index][1]}
        for entry, index in zip(top, chosen, strict=False)
    ]
    return {**extra, "top": moved}
