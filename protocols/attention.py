"""Attention checks made from the document itself, and the researcher's own checks (docs/CROWD_CHECKS.md).

A faithfulness study has free, unambiguous checks in its sources (issue 14, point 4):
- verbatim: a "summary" that is one document sentence copied as it stands; it must be judged faithful;
- fusion: the first part of one document sentence joined to the last part of another; unfaithful;
- entity_swap: a document sentence with a named entity replaced by another of the same type from elsewhere
  in the document; unfaithful, and span tasks must mark the replacement;
- number_swap: the same with a number (a cardinal, money, percent or quantity entity) whose value differs.

No spaCy and no database here: the caller passes the document's stored sentence offsets
(`Document.sentences`) and, for the swaps, its named entities as `Mention`s, e.g. from
`corpus.nlp.phrases(load_spacy(name), [text], noun_chunks=False)` in a worker or command (web processes never
load spaCy). Everything is seeded: the same document, mentions and seed give the same checks.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocols.decisions import Flag, Thresholds, WorkerDecision, worker_decision
from protocols.tasks import EXPECTATIONS, FAITHFUL, UNFAITHFUL, CheckOutcome, CheckTarget

VERBATIM = "verbatim"
FUSION = "fusion"
ENTITY_SWAP = "entity_swap"
NUMBER_SWAP = "number_swap"
RESEARCHER = "researcher"
GENERATED_KINDS = (VERBATIM, FUSION, ENTITY_SWAP, NUMBER_SWAP)
# What a check tests, as the exports name it: a positive control (must be judged faithful), a negative
# control (must be judged unfaithful) or the researcher's own check (either).
POSITIVE = "positive"
NEGATIVE = "negative"
OWN = "own"


def check_role(kind: str, expected: str) -> str:
    """POSITIVE, NEGATIVE or OWN for a check of `kind` (a generated kind or RESEARCHER) expecting `expected`."""
    if kind == RESEARCHER:
        return OWN
    return POSITIVE if expected == FAITHFUL else NEGATIVE


# spaCy entity labels whose text is a number; the rest are swapped as entities. DATE and TIME are entities:
# their "value" is no single number.
NUMBER_TYPES = frozenset({"CARDINAL", "MONEY", "PERCENT", "QUANTITY"})
# A sentence makes a check when it has this many words (shorter: a headline or fragment; longer: a run-on).
MIN_WORDS = 6
MAX_WORDS = 60
# Words two entities may share and still name different things ("the Senate" and "the House").
SHARED_WORDS_ALLOWED = frozenset({"the", "a", "an", "of", "and", "'s", "in", "for", "de"})
WORD = re.compile(r"\w+(?:'\w+)?")


@dataclass(frozen=True, slots=True)
class Mention:
    """A named entity of the document: character offsets in its text and the spaCy label."""

    start: int
    end: int
    type: str


@dataclass(frozen=True, slots=True)
class AttentionCheck:
    kind: str
    summary_text: str
    expected: str  # faithful or unfaithful
    span: tuple[int, int] | None  # characters of summary_text to mark (the corruption); None for verbatim
    source_sentences: tuple[int, ...]  # indexes into the document's sentences
    replaced: str = ""  # swaps: the document's words taken out
    inserted: str = ""  # swaps: what was put in

    @property
    def target(self) -> CheckTarget:
        return CheckTarget(self.summary_text, self.expected, self.span)

    @property
    def summary_sentences(self) -> list[list[int]]:
        """The check summary's sentence offsets (one sentence), as `Summary.sentences` stores them."""
        return [[0, len(self.summary_text)]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "summary": self.summary_text,
            "expected": self.expected,
            "span": list(self.span) if self.span else None,
            "source_sentences": list(self.source_sentences),
            "replaced": self.replaced,
            "inserted": self.inserted,
        }


# --- generation ----------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [word.casefold() for word in WORD.findall(text)]


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _sentences(text: str, sentences: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """(index, start, end) of the sentences fit for a check: in the text, of a usable length, not repeated."""
    seen: set[str] = set()
    usable = []
    for index, offsets in enumerate(sentences):
        if not isinstance(offsets, list | tuple) or len(offsets) != 2 or not all(_whole(n) for n in offsets):
            continue
        start, end = offsets
        if not 0 <= start < end <= len(text):
            continue
        sentence = text[start:end]
        key = _normal(sentence)
        if key in seen or not MIN_WORDS <= len(_words(sentence)) <= MAX_WORDS:
            seen.add(key)
            continue
        seen.add(key)
        usable.append((index, start, end))
    return usable


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rng(seed: int, kind: str) -> random.Random:
    return random.Random(f"{seed}:{kind}")


def _verbatim(text: str, usable: list[tuple[int, int, int]], rng: random.Random) -> list[AttentionCheck]:
    rng.shuffle(usable)
    return [AttentionCheck(VERBATIM, text[start:end], FAITHFUL, None, (index,)) for index, start, end in usable]


def _cut(sentence: str, rng: random.Random) -> int | None:
    """A character position between two words near the middle of the sentence (40-60% of its words)."""
    bounds = [match.start() for match in re.finditer(r"(?<=\S)\s+(?=\S)", sentence)]
    middle = [b for number, b in enumerate(bounds, start=1) if 0.4 <= number / (len(bounds) + 1) <= 0.6]
    return rng.choice(middle or bounds) if bounds else None


def _fusions(text: str, usable: list[tuple[int, int, int]], rng: random.Random) -> list[AttentionCheck]:
    pairs = [(first, second) for first in usable for second in usable if first[0] != second[0]]
    rng.shuffle(pairs)
    made: list[AttentionCheck] = []
    used: set[int] = set()
    normal_text = _normal(text)
    for (i, s1, e1), (j, s2, e2) in pairs:
        if i in used or j in used:
            continue
        first, second = text[s1:e1], text[s2:e2]
        cut_first, cut_second = _cut(first, rng), _cut(second, rng)
        if cut_first is None or cut_second is None:
            continue
        head, tail = first[:cut_first].rstrip(), second[cut_second:].lstrip()
        fused = f"{head} {tail}"
        if _normal(fused) in normal_text or _normal(tail) in _normal(first):
            continue  # the fusion says what the document says
        made.append(AttentionCheck(FUSION, fused, UNFAITHFUL, (len(head) + 1, len(fused)), (i, j)))
        used.update((i, j))
    return made


UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
)
TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
NUMBER_WORDS = {word: value for value, word in enumerate(UNITS.split())} | {
    word: 10 * (n + 2) for n, word in enumerate(TENS.split())
}
SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
NUMBER_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+|[a-z]+")


def number_value(text: str) -> tuple[float, ...] | None:
    """The numbers a number entity states, in order ("$3.5 million" (3500000.0,), "between 5 and 7" (5.0, 7.0),
    "twenty-five" (25.0,)); None when it states none that can be read."""
    values: list[float] = []
    current: float | None = None
    for token in NUMBER_TOKEN.findall(text.casefold().replace("-", " ")):
        if token[0].isdigit() or token[0] == ".":
            if current is not None:
                values.append(current)
            current = float(token.replace(",", ""))
        elif token in NUMBER_WORDS:
            word = NUMBER_WORDS[token]
            if current is not None and current % 100 == 0 and 0 < word < 100 and current >= 20:
                current += word  # "one hundred five", "twenty five"
            elif current is not None and current >= 20 and current % 10 == 0 and word < 10:
                current += word
            else:
                if current is not None:
                    values.append(current)
                current = float(word)
        elif token in SCALES and current is not None:
            current *= SCALES[token]
        elif current is not None and token not in {"and", "point"}:
            values.append(current)
            current = None
    if current is not None:
        values.append(current)
    return tuple(values) or None


def _different_things(first: str, second: str) -> bool:
    """Two entity texts that cannot name the same thing: no word in common ("Obama" / "Barack Obama" share one)."""
    return not (set(_words(first)) & set(_words(second))) - SHARED_WORDS_ALLOWED


def _swaps(
    text: str,
    usable: list[tuple[int, int, int]],
    mentions: Sequence[Mention],
    rng: random.Random,
    *,
    numbers: bool,
) -> list[AttentionCheck]:
    kind = NUMBER_SWAP if numbers else ENTITY_SWAP
    chosen = [
        m
        for m in mentions
        if _whole(m.start) and _whole(m.end) and 0 <= m.start < m.end <= len(text) and m.type
        if (m.type in NUMBER_TYPES) == numbers
    ]
    normal_text = _normal(text)
    made: list[AttentionCheck] = []
    rng.shuffle(usable)
    for index, start, end in usable:
        sentence = text[start:end]
        inside = [m for m in chosen if start <= m.start and m.end <= end]
        rng.shuffle(inside)
        for mention in inside:
            original = text[mention.start : mention.end]
            value = number_value(original) if numbers else None
            if numbers and value is None:
                continue
            candidates = sorted(
                {
                    text[other.start : other.end]
                    for other in chosen
                    if other.type == mention.type and not (start <= other.start and other.end <= end)
                }
            )
            fitting = [
                replacement
                for replacement in candidates
                if _normal(replacement) not in _normal(sentence)
                and (
                    number_value(replacement) not in (None, value)
                    if numbers
                    else _different_things(original, replacement)
                )
            ]
            if not fitting:
                continue
            replacement = rng.choice(fitting)
            offset = mention.start - start
            swapped = sentence[:offset] + replacement + sentence[mention.end - start :]
            if _normal(swapped) in normal_text:
                continue
            span = (offset, offset + len(replacement))
            made.append(AttentionCheck(kind, swapped, UNFAITHFUL, span, (index,), original, replacement))
            break
    return made


def attention_checks(
    *,
    text: str,
    sentences: Sequence[Sequence[int]],
    mentions: Sequence[Mention] = (),
    seed: int = 0,
    kinds: Iterable[str] = GENERATED_KINDS,
    per_kind: int = 1,
) -> list[AttentionCheck]:
    """Up to `per_kind` checks of each kind in `kinds` from one document (fewer when the document has no
    fitting sentence, pair or entity), kinds in the order given. Each check uses different sentences of
    the document within its kind."""
    unknown = [kind for kind in kinds if kind not in GENERATED_KINDS]
    if unknown:
        raise ValueError(f"unknown check kind(s) {', '.join(unknown)} (kinds: {', '.join(GENERATED_KINDS)})")
    if per_kind < 0:
        raise ValueError("per_kind must not be negative")
    usable = _sentences(text, sentences)
    checks: list[AttentionCheck] = []
    for kind in kinds:
        rng = _rng(seed, kind)
        if kind == VERBATIM:
            made = _verbatim(text, list(usable), rng)
        elif kind == FUSION:
            made = _fusions(text, list(usable), rng)
        else:
            made = _swaps(text, list(usable), mentions, rng, numbers=kind == NUMBER_SWAP)
        checks.extend(made[:per_kind])
    return checks


# --- the researcher's own checks -------------------------------------------------------------------------

MAX_CHECK_LINES = 10_000
MAX_SUMMARY_CHARS = 5_000
MAX_DOCUMENT_ID_CHARS = 200  # Document.external_id
CHECK_FIELDS = ("document", "summary", "expected", "span")


@dataclass(frozen=True, slots=True)
class ResearcherCheck:
    line: int
    document: str  # the document's id in the study's dataset (Document.external_id)
    summary_text: str
    expected: str
    span: tuple[int, int] | None = None

    @property
    def target(self) -> CheckTarget:
        return CheckTarget(self.summary_text, self.expected, self.span)


class CheckFileError(ValueError):
    """A check file that cannot be used; `messages` names the line and field of every problem."""

    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = list(messages)


def _clean_text(value: Any) -> str | None:
    """Text safe to store (no NUL, no lone surrogate), or None."""
    if not isinstance(value, str) or "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def _check_line(number: int, raw: str) -> tuple[ResearcherCheck | None, list[str]]:
    where = f"line {number}"
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        return None, [f"{where}: not a JSON object ({exc.msg if isinstance(exc, json.JSONDecodeError) else exc})"]
    if not isinstance(record, dict):
        return None, [f"{where}: not a JSON object"]
    errors = [
        f"{where}, field {key!r}: unknown field (fields: {', '.join(CHECK_FIELDS)})"
        for key in record
        if key not in CHECK_FIELDS
    ]
    document = record.get("document")
    if isinstance(document, int) and not isinstance(document, bool):
        document = str(document)
    document = _clean_text(document)
    if document is None or not document.strip() or len(document) > MAX_DOCUMENT_ID_CHARS:
        errors.append(f"{where}, field 'document': the document's id, text of 1-{MAX_DOCUMENT_ID_CHARS} characters")
    summary = _clean_text(record.get("summary"))
    if summary is None or not summary.strip() or len(summary) > MAX_SUMMARY_CHARS:
        errors.append(f"{where}, field 'summary': text of 1-{MAX_SUMMARY_CHARS} characters (no NUL bytes)")
    expected = record.get("expected")
    if expected not in EXPECTATIONS:
        errors.append(f"{where}, field 'expected': {expected!r} is not one of {', '.join(EXPECTATIONS)}")
    span = record.get("span")
    if span is not None:
        if (
            not isinstance(span, list)
            or len(span) != 2
            or not all(isinstance(value, int) and not isinstance(value, bool) for value in span)
        ):
            errors.append(f"{where}, field 'span': [start, end], two whole numbers (character offsets in the summary)")
            span = None
        elif expected == FAITHFUL:
            errors.append(f"{where}, field 'span': a faithful check has nothing to mark; give no span")
        elif summary is not None and not (0 <= span[0] < span[1] <= len(summary)):
            errors.append(f"{where}, field 'span': {span[0]}-{span[1]} is not inside the summary (0-{len(summary)})")
        elif summary is not None and not summary[span[0] : span[1]].strip():
            errors.append(f"{where}, field 'span': {span[0]}-{span[1]} marks only white space")
    if errors or document is None or summary is None:
        return None, errors
    # No error: `expected` is one of EXPECTATIONS, text.
    return ResearcherCheck(number, document, summary, str(expected), tuple(span) if span else None), []


def researcher_checks(content: str | bytes) -> list[ResearcherCheck]:
    """Parse a JSON lines file of the researcher's checks, one object a line:
    {"document": "<id>", "summary": "...", "expected": "faithful" | "unfaithful", "span": [start, end]}
    (span optional, unfaithful only). Blank lines are skipped. CheckFileError lists every problem."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CheckFileError([f"the file is not UTF-8 text (byte {exc.start})"]) from None
    checks: list[ResearcherCheck] = []
    errors: list[str] = []
    lines = content.splitlines()
    if sum(1 for line in lines if line.strip()) > MAX_CHECK_LINES:
        raise CheckFileError([f"the file has more than {MAX_CHECK_LINES} checks"])
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        check, problems = _check_line(number, raw)
        errors.extend(problems)
        if check is not None:
            checks.append(check)
    if errors:
        raise CheckFileError(errors)
    if not checks:
        raise CheckFileError(["the file has no checks"])
    return checks


# --- decisions -------------------------------------------------------------------------------------------

ATTENTION_THRESHOLDS = Thresholds(warn_at=1, block_at=2)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One worker's answer to one check item, graded by the task (`TaskDefinition.check_outcome`)."""

    worker: str
    item: Hashable
    outcome: CheckOutcome


def attention_decisions(
    results: Iterable[CheckResult], thresholds: Thresholds = ATTENTION_THRESHOLDS
) -> list[WorkerDecision]:
    """Per worker (sorted): warn or block after that many failed checks (one per item); checks the task could
    not grade (passed None) do not count either way."""
    flags: dict[str, list[Flag]] = {}
    for result in results:
        flags.setdefault(result.worker, [])
        if result.outcome.passed is False:
            flags[result.worker].append(Flag("attention", result.item, result.outcome.reason))
    return [worker_decision(worker, flags[worker], {"attention": thresholds}) for worker in sorted(flags)]


def check_pass_rates(results: Iterable[CheckResult]) -> Mapping[str, tuple[int, int]]:
    """Per worker: (passed, graded) checks."""
    rates: dict[str, tuple[int, int]] = {}
    for result in results:
        passed, graded = rates.get(result.worker, (0, 0))
        if result.outcome.passed is not None:
            rates[result.worker] = (passed + bool(result.outcome.passed), graded + 1)
        else:
            rates[result.worker] = (passed, graded)
    return rates
