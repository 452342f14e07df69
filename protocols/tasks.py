"""The annotation tasks: their choices, how an item is cut into units, and what a valid submission is.

No database access here. A task's units come from the item's frozen explanation payload (BERTScore:
the summary's content words with their aligned source tokens; QGQA: two statements per question;
entailment: the summary sentences with their top-k source sentences), from the summary itself (the
QAGS and FEQA protocols: its sentences; factuality: the whole summary) or from nothing (the Maynez
protocol marks spans, the BUMP protocol edits the text). Every view, the submission service, the
agreement code and the importers look tasks up here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from protocols.alignment import alignment_state, word_alignment
from protocols.minimal_edit import edit_diff
from words import word_tokens

MAX_NOTE_CHARS = 2000
MAX_EDIT_CHARS = 5000
# Maynez et al. mark each hallucination once: the spans of one submission may not overlap.
SPANS_MAY_OVERLAP = False
# What an attention-check item's summary is (docs/CROWD_CHECKS.md).
FAITHFUL = "faithful"
UNFAITHFUL = "unfaithful"
EXPECTATIONS = (FAITHFUL, UNFAITHFUL)


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    label: str
    key: str  # keyboard shortcut in the annotation view
    numeric: float | None = None


@dataclass(frozen=True, slots=True)
class Unit:
    index: int
    text: str
    start: int | None = None
    end: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # What the annotator is asked about this unit; empty: the task's one statement.
    prompt: str = ""
    # The unit's own choices when they differ from the task's (the FEQA protocol asks four questions).
    choices: tuple[Choice, ...] | None = None
    # Asked only when unit `requires[0]` got one of the labels `requires[1]` (FEQA's decision tree).
    requires: tuple[int, tuple[str, ...]] | None = None


@dataclass(frozen=True, slots=True)
class Submission:
    """What an annotator sends for one item; each task uses the parts it needs."""

    labels: Mapping[Any, Any] = field(default_factory=dict)
    notes: Mapping[Any, Any] = field(default_factory=dict)
    spans: Sequence[Any] = ()
    edit: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CleanJudgement:
    unit_index: int
    unit_text: str
    label: str
    start: int | None = None
    end: int | None = None
    note: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "unit_index": self.unit_index,
            "unit_text": self.unit_text,
            "label": self.label,
            "start": self.start,
            "end": self.end,
            "note": self.note,
            "data": dict(self.data),
        }


class SubmissionError(ValueError):
    """A submission that cannot be stored; `messages` says what is wrong, one line per problem."""

    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = list(messages)


@dataclass(frozen=True, slots=True)
class TaskDefinition:
    key: str
    name: str
    unit_name: str
    choices: tuple[Choice, ...]
    # Metrics whose explanation defines the units, in order of preference (e.g. QAGS, else its cloze fallback).
    explanation_metrics: tuple[str, ...] = ()
    # Span tasks store one judgement per marked span (offsets in the summary) instead of one per unit.
    spans: bool = False
    # Edit tasks store the annotator's rewrite of the summary with its diff (the BUMP protocol).
    edit: bool = False
    # Ordinal scales (their choices carry numbers) get ordinal agreement and min-max spreads.
    ordinal: bool = False
    # Each judged unit needs a short written explanation (QAGS protocol).
    note_required: bool = False
    # The task works on reference summaries only (BUMP edits a reference into an unfaithful one).
    references_only: bool = False
    # Which annotation component the browser shows: words, qgqa, entailment, sentences, spans, edit.
    view: str = "sentences"
    description: str = ""
    steps: tuple[str, ...] = ()
    # The attention checks this task can grade (docs/CROWD_CHECKS.md): a summary that must be judged
    # faithful, one that must be judged unfaithful; CHECK_RULES says what passing one means.
    checks: tuple[str, ...] = EXPECTATIONS

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(choice.value for choice in self.choices)

    @property
    def explanation_metric(self) -> str | None:
        return self.explanation_metrics[0] if self.explanation_metrics else None

    @property
    def whole_item(self) -> bool:
        """Annotators mark or edit the whole item (spans, an edit) rather than label shared units: agreement
        and adjudication take the item as one decision."""
        return self.spans or self.edit

    def numeric(self, value: str) -> float | None:
        return next((choice.numeric for choice in self.choices if choice.value == value), None)

    def choices_for(self, unit: Unit) -> tuple[Choice, ...]:
        return unit.choices if unit.choices is not None else self.choices

    def units(
        self,
        *,
        summary_text: str,
        payload: Mapping[str, Any] | None = None,
        summary_sentences: Sequence[Sequence[int]] = (),
        params: Mapping[str, Any] | None = None,
        document_text: str = "",
    ) -> list[Unit]:
        builder = UNIT_BUILDERS.get(self.key)
        if builder is not None:
            return builder(ItemSource(summary_text, summary_sentences, payload or {}, params or {}, document_text))
        if self.spans:
            return []
        if self.unit_name == "summary sentence":
            return [
                Unit(index=i, text=text, start=s, end=e)
                for i, (text, s, e) in enumerate(sentence_texts(summary_text, summary_sentences))
            ]
        return [Unit(index=0, text=summary_text, start=0, end=len(summary_text))]

    def applicable(self, units: Sequence[Unit], labels: Mapping[int, str]) -> list[Unit]:
        """The units that are asked, given the labels so far: a follow-up question only after its trigger."""
        asked: set[int] = set()
        result = []
        for unit in units:  # parents come before the units that depend on them
            if unit.requires is not None:
                parent, triggers = unit.requires
                if parent not in asked or labels.get(parent) not in triggers:
                    continue
            asked.add(unit.index)
            result.append(unit)
        return result

    def unit_state(self, unit: Unit) -> dict[str, Any]:
        """A unit as the browser gets it."""
        return {
            "index": unit.index,
            "text": unit.text,
            "start": unit.start,
            "end": unit.end,
            "prompt": unit.prompt,
            "choices": [{"value": c.value, "label": c.label, "key": c.key} for c in self.choices_for(unit)],
            "requires": list(unit.requires) if unit.requires else None,
            **dict(unit.extra),
        }

    def check_outcome(
        self, target: CheckTarget, *, judgements: Sequence[JudgedUnit], units: Sequence[Unit] = ()
    ) -> CheckOutcome:
        """Whether the judgements of one attention-check item pass the check (None: this task's submission says
        nothing about it, e.g. no QGQA question asks about the swapped entity). `units`: the item's units
        (`units()`; span tasks have none)."""
        if target.expected not in self.checks:
            return CheckOutcome(None, f"task {self.key!r} grades no {target.expected} checks")
        return CHECK_RULES[self.key](target, judgements, units)

    def clean(
        self,
        submission: Submission,
        *,
        units: Sequence[Unit],
        summary_text: str,
        params: Mapping[str, Any] | None = None,
    ) -> list[CleanJudgement]:
        """The judgements a complete, valid submission stores; SubmissionError lists every problem."""
        if self.spans:
            return _clean_spans(self, submission, summary_text)
        if self.edit:
            return _clean_edit(self, submission, summary_text, params or {})
        return _clean_units(self, submission, units)


def _unexpected_parts(task: TaskDefinition, submission: Submission, allowed: str) -> list[str]:
    given = {
        "labels": bool(submission.labels),
        "notes": bool(submission.notes),
        "spans": bool(submission.spans),
        "edit": bool(submission.edit),
    }
    takes = {"labels": {"labels", "notes"}, "spans": {"spans"}, "edit": {"edit"}}[allowed]
    return [f"task {task.key!r} takes no {part}" for part, present in given.items() if present and part not in takes]


def _unit_number(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def _clean_units(task: TaskDefinition, submission: Submission, units: Sequence[Unit]) -> list[CleanJudgement]:
    errors = _unexpected_parts(task, submission, "labels")
    by_index = {unit.index: unit for unit in units}
    labels: dict[int, str] = {}
    for raw_index, label in submission.labels.items():
        index = _unit_number(raw_index)
        if index is None:
            errors.append(f"unit {raw_index!r} is not a unit number")
        elif index not in by_index:
            errors.append(f"unit {index} does not exist in this item")
        elif not isinstance(label, str) or label not in {choice.value for choice in task.choices_for(by_index[index])}:
            values = ", ".join(choice.value for choice in task.choices_for(by_index[index]))
            errors.append(f"{label!r} is not a choice of task {task.key!r} for unit {index} (choices: {values})")
        else:
            labels[index] = label
    notes: dict[int, str] = {}
    for raw_index, note in submission.notes.items():
        index = _unit_number(raw_index)
        if index is None or index not in by_index:
            errors.append(f"note for unit {raw_index!r}: no such unit in this item")
        elif not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
            errors.append(f"note for unit {index}: text of at most {MAX_NOTE_CHARS} characters")
        elif note.strip():
            notes[index] = note.strip()
    if errors:
        raise SubmissionError(errors)

    asked = task.applicable(units, labels)
    asked_indexes = {unit.index for unit in asked}
    for index in sorted(set(labels) - asked_indexes):
        parent, triggers = by_index[index].requires or (None, ())
        errors.append(
            f"unit {index} does not apply: it is asked only when unit {parent} is {' or '.join(map(repr, triggers))}"
        )
    missing = [unit.index for unit in asked if unit.index not in labels]
    if missing:
        errors.append(f"{len(missing)} unit(s) still need a label.")
    if task.note_required:
        unexplained = [index for index in sorted(labels) if index not in notes]
        if unexplained:
            errors.append(
                f"unit(s) {', '.join(map(str, unexplained))} need a short explanation of the decision "
                "(the QAGS protocol asks for one per sentence)"
            )
    if errors:
        raise SubmissionError(errors)
    return [
        CleanJudgement(
            unit_index=unit.index, unit_text=unit.text, label=labels[unit.index], note=notes.get(unit.index, "")
        )
        for unit in asked
    ]


def whole_number(value: object) -> TypeGuard[int]:
    """An int that is not a bool (JSON's true/false are not offsets)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _clean_spans(task: TaskDefinition, submission: Submission, summary_text: str) -> list[CleanJudgement]:
    errors = _unexpected_parts(task, submission, "spans")
    if not isinstance(submission.spans, list | tuple):
        raise SubmissionError([*errors, "spans must be a list of {start, end, label} objects"])
    length = len(summary_text)
    spans: list[tuple[int, int, str, int]] = []
    for number, raw in enumerate(submission.spans, start=1):
        if not isinstance(raw, Mapping):
            errors.append(f"span {number}: give an object with start, end and label")
            continue
        start, end, label = raw.get("start"), raw.get("end"), raw.get("label")
        if not (whole_number(start) and whole_number(end)):
            errors.append(f"span {number}: start and end must be whole numbers (character offsets)")
            continue
        if start < 0 or end > length:
            errors.append(f"span {number} ({start}-{end}) lies outside the summary (characters 0-{length})")
        elif start >= end:
            errors.append(f"span {number} ({start}-{end}): start must be before end")
        elif not summary_text[start:end].strip():
            errors.append(f"span {number} ({start}-{end}) marks only white space")
        elif not isinstance(label, str) or label not in task.values:
            errors.append(
                f"span {number}: {label!r} is not a choice of task {task.key!r} (choices: {', '.join(task.values)})"
            )
        else:
            spans.append((start, end, label, number))
    ordered = sorted(spans)
    reaching = None  # the span that reaches furthest to the right so far
    for start, end, _, number in ordered:
        if not SPANS_MAY_OVERLAP and reaching is not None and start < reaching[1]:
            first, second = sorted([(reaching[2], reaching[0], reaching[1]), (number, start, end)])
            errors.append(
                f"spans {first[0]} ({first[1]}-{first[2]}) and {second[0]} ({second[1]}-{second[2]}) overlap; "
                "mark each hallucination once"
            )
        if reaching is None or end > reaching[1]:
            reaching = (start, end, number)
    if errors:
        raise SubmissionError(errors)
    return [
        CleanJudgement(unit_index=position, unit_text=summary_text[start:end], label=label, start=start, end=end)
        for position, (start, end, label, _) in enumerate(ordered)
    ]


def _clean_edit(
    task: TaskDefinition, submission: Submission, reference: str, params: Mapping[str, Any]
) -> list[CleanJudgement]:
    errors = _unexpected_parts(task, submission, "edit")
    edit = submission.edit
    if not isinstance(edit, Mapping) or not isinstance(edit.get("text"), str):
        raise SubmissionError([*errors, "edit: give an object with the edited summary as 'text'"])
    text, label = edit["text"], edit.get("label")
    note = edit.get("note") or ""
    requested = params.get("error_type")
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
        errors.append(f"edit: the note is text of at most {MAX_NOTE_CHARS} characters")
        note = ""
    if len(text) > MAX_EDIT_CHARS:
        errors.append(f"edit: the edited summary has {len(text)} characters; at most {MAX_EDIT_CHARS}")
    allowed = {requested, NOT_POSSIBLE} if requested else {FREESTYLE, *BUMP_ERROR_TYPES}
    if not isinstance(label, str) or label not in allowed:
        errors.append(f"edit: {label!r} is not allowed here (choose one of: {', '.join(sorted(allowed))})")
    diff = edit_diff(reference, text)
    if label == NOT_POSSIBLE:
        if not note.strip():
            errors.append("edit: say in the note why this error type cannot be introduced")
    elif diff.unchanged:
        errors.append("edit: the summary is unchanged; introduce one error by a minimal edit")
    if errors or not isinstance(label, str):
        raise SubmissionError(errors)
    data = {"requested_type": requested or FREESTYLE, "reference": reference, "edited": text, "diff": diff.as_dict()}
    return [CleanJudgement(unit_index=0, unit_text=text, label=label, note=note.strip(), data=data)]


# --- units ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemSource:
    summary_text: str
    summary_sentences: Sequence[Sequence[int]]
    payload: Mapping[str, Any]
    params: Mapping[str, Any]
    document_text: str = ""  # only units that point into the document read it (BERTScore's source words)


def sentence_texts(summary_text: str, sentences: Sequence[Sequence[int]]) -> list[tuple[str, int, int]]:
    """The summary's sentences (text, start, end); the whole summary when no sentence offsets are known."""
    spans = list(sentences) or ([[0, len(summary_text)]] if summary_text.strip() else [])
    return [(summary_text[s:e], s, e) for s, e in spans]


def word_spans(text: str) -> list[list[int]]:
    """Words and punctuation marks as [start, end] offsets: what span selection snaps to."""
    return [[start, end] for _, start, end in word_tokens(text)]


def bertscore_units(payload: Mapping[str, Any], document_text: str = "") -> list[Unit]:
    """Content words of the summary (no stopwords, no punctuation), each with the whole source words its
    pieces align to (protocols.alignment, which needs the document text for that; without it a piece's
    source is its aligned token, enough to check a submission, which reads only the unit indexes).

    The unit index is the word's index in the explanation payload, so it stays stable whatever the
    stopword filter shows.
    """
    return [
        Unit(
            index=word.index,
            text=word.text,
            start=word.start,
            end=word.end,
            extra={
                "aligned": [[source.start, source.end] for source in word.sources],
                "aligned_text": word.source_text,
                "similarity": word.score,
                "alignment": alignment_state(word),
            },
        )
        for word in word_alignment(payload, document_text=document_text).important
    ]


def qgqa_units(payload: Mapping[str, Any]) -> list[Unit]:
    """Two statements per kept question: 2n "answerable from the summary", 2n + 1 "similar meaning"."""
    kept = [question for question in payload.get("questions", []) if question.get("kept")]
    units = []
    for number, question in enumerate(kept):
        for offset, statement in enumerate(QGQA_STATEMENTS):
            units.append(
                Unit(
                    index=2 * number + offset,
                    text=question["question"],
                    prompt=statement,
                    extra={
                        "question_number": number,
                        "questions": len(kept),
                        "statement": statement,
                        "summary_answer": question["summary_answer"],
                        "source_answer": question["source_answer"],
                        "f1": question.get("f1"),
                    },
                )
            )
    return units


def entailment_units(payload: Mapping[str, Any]) -> list[Unit]:
    """One unit per summary sentence, with the k source sentences most similar to it."""
    return [
        Unit(
            index=i,
            text=sentence["text"],
            start=sentence["start"],
            end=sentence["end"],
            prompt=ENTAILMENT_PROMPT,
            extra={"top": sentence.get("top", [])},
        )
        for i, sentence in enumerate(payload.get("sentences", []))
    ]


def sentence_consistency_units(source: ItemSource) -> list[Unit]:
    return [
        Unit(index=i, text=text, start=s, end=e, prompt=SENTENCE_CONSISTENCY_PROMPT)
        for i, (text, s, e) in enumerate(sentence_texts(source.summary_text, source.summary_sentences))
    ]


def feqa_units(source: ItemSource) -> list[Unit]:
    """FEQA's decision tree as four units per summary sentence; the last three are asked only when they apply.

    4i meaningful / nonsensical; 4i+1 grammatical / minor problems (if meaningful); 4i+2 faithful /
    unfaithful (if meaningful); 4i+3 hallucination / contradiction (if unfaithful).
    """
    units = []
    for i, (text, s, e) in enumerate(sentence_texts(source.summary_text, source.summary_sentences)):
        base = 4 * i
        for offset, (prompt, choices, requires) in enumerate(FEQA_QUESTIONS):
            units.append(
                Unit(
                    index=base + offset,
                    text=text,
                    start=s,
                    end=e,
                    prompt=prompt,
                    choices=choices,
                    requires=(base + requires[0], requires[1]) if requires else None,
                    extra={"sentence": i, "question": offset},
                )
            )
    return units


def bump_units(source: ItemSource) -> list[Unit]:
    """One unit: the reference summary to edit, with the error type requested (none: freestyle)."""
    requested = source.params.get("error_type")
    prompt = (
        f"Introduce exactly one {BUMP_TYPE_NAMES[requested]} by a minimal edit."
        if requested in BUMP_TYPE_NAMES
        else "Introduce exactly one error of any kind by a minimal edit (freestyle)."
    )
    return [
        Unit(
            index=0,
            text=source.summary_text,
            start=0,
            end=len(source.summary_text),
            prompt=prompt,
            extra={"error_type": requested or FREESTYLE},
        )
    ]


UNIT_BUILDERS: dict[str, Callable[[ItemSource], list[Unit]]] = {
    "bertscore": lambda source: bertscore_units(source.payload, source.document_text),
    "qgqa": lambda source: qgqa_units(source.payload),
    "entailment": lambda source: entailment_units(source.payload),
    "sentence_consistency": sentence_consistency_units,
    "feqa": feqa_units,
    "bump": bump_units,
}

# --- attention checks ------------------------------------------------------------------------------------
# What passing a check item means, per task (docs/CROWD_CHECKS.md). A check item is a summary whose answer is
# known: copied verbatim from the document (expected faithful) or corrupted (expected unfaithful, with the
# corrupted characters as `span` where known). protocols/attention.py generates and parses them.


class JudgedUnit(Protocol):
    """A stored judgement as the check rules read it (CleanJudgement, or the Judgement model)."""

    @property
    def unit_index(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def start(self) -> int | None: ...
    @property
    def end(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class CheckTarget:
    """The answer a careful annotator gives on a check item: the summary is `expected`; an unfaithful one's
    error lies in characters span[0]:span[1] of `summary_text` (None: somewhere)."""

    summary_text: str
    expected: str
    span: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    passed: bool | None  # None: the submission says nothing about the check (it is left out of the counts)
    reason: str


def _overlaps(start: int | None, end: int | None, span: tuple[int, int]) -> bool:
    return start is not None and end is not None and start < span[1] and span[0] < end


def _targeted(target: CheckTarget, units: Sequence[Unit]) -> list[Unit]:
    """The units an unfaithful check is about: those overlapping its span (all units without a span)."""
    if target.span is None:
        return list(units)
    return [unit for unit in units if _overlaps(unit.start, unit.end, target.span)] or list(units)


def _grade_sentences(
    target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit], *, good: set[str], bad: set[str]
) -> CheckOutcome:
    """Unit-per-sentence tasks: faithful checks need every unit in `good`; unfaithful ones need a unit that
    holds the span with the error in `bad`."""
    labels = {judgement.unit_index: judgement.label for judgement in judgements}
    if not units:
        return CheckOutcome(None, "the item has no units")
    if target.expected == FAITHFUL:
        wrong = [unit.index for unit in units if labels.get(unit.index) not in good]
        if wrong:
            return CheckOutcome(False, f"a faithful summary was not judged faithful (units {_numbers(wrong)})")
        return CheckOutcome(True, "every unit judged faithful")
    targeted = _targeted(target, units)
    if any(labels.get(unit.index) in bad for unit in targeted):
        return CheckOutcome(True, "the sentence with the error was judged unfaithful")
    return CheckOutcome(
        False, f"the sentence with the error was judged faithful (units {_numbers(u.index for u in targeted)})"
    )


def _numbers(indexes: Iterable[int]) -> str:
    return ", ".join(str(index) for index in indexes)


def _check_factuality(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    whole = [Unit(index=0, text=target.summary_text, start=0, end=len(target.summary_text))]
    return _grade_sentences(target, judgements, units or whole, good={"yes"}, bad={"no"})


def _check_sentence_consistency(
    target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]
) -> CheckOutcome:
    return _grade_sentences(target, judgements, units, good={"yes"}, bad={"no"})


def _check_entailment(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    # A verbatim sentence's own source sentence is among its top-k: "Most" or "All" of its facts are there.
    # A corrupted one keeps most of its facts, so anything but "All" passes.
    return _grade_sentences(target, judgements, units, good={"most", "all"}, bad={"none", "few", "some", "most"})


def _check_feqa(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    """Per summary sentence (units 4i..4i+3): faithful checks need 'meaningful' and 'faithful' for every
    sentence; unfaithful ones 'nonsensical' or 'unfaithful' for a sentence holding the corrupted span."""
    labels = {judgement.unit_index: judgement.label for judgement in judgements}
    sentences = [unit for unit in units if unit.index % len(FEQA_QUESTIONS) == 0]
    if not sentences:
        return CheckOutcome(None, "the item has no sentences")

    def verdict(unit: Unit) -> str | None:
        meaning, faithful = labels.get(unit.index), labels.get(unit.index + 2)
        if meaning == "nonsensical" or faithful == "unfaithful":
            return UNFAITHFUL
        return FAITHFUL if meaning == "meaningful" and faithful == "faithful" else None

    if target.expected == FAITHFUL:
        wrong = [unit.index // 4 for unit in sentences if verdict(unit) != FAITHFUL]
        if wrong:
            return CheckOutcome(
                False, f"a faithful sentence was not judged meaningful and faithful ({_numbers(wrong)})"
            )
        return CheckOutcome(True, "every sentence judged meaningful and faithful")
    if any(verdict(unit) == UNFAITHFUL for unit in _targeted(target, sentences)):
        return CheckOutcome(True, "the sentence with the error was judged nonsensical or unfaithful")
    return CheckOutcome(False, "the sentence with the error was judged meaningful and faithful")


def _check_spans(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    """Maynez protocol: nothing marked in a faithful summary; a marked span overlapping the corrupted part of
    an unfaithful one (any span when the check gives none). The span's type is not graded."""
    marked = [(j.start, j.end) for j in judgements if j.start is not None and j.end is not None]
    if target.expected == FAITHFUL:
        if marked:
            return CheckOutcome(False, f"{len(marked)} span(s) marked in a faithful summary")
        return CheckOutcome(True, "nothing marked in a faithful summary")
    span = target.span
    if span is None:
        return CheckOutcome(bool(marked), "a span was marked" if marked else "nothing marked in an unfaithful summary")
    if any(_overlaps(start, end, span) for start, end in marked):
        return CheckOutcome(True, f"the span with the error {span[0]}-{span[1]} was marked")
    return CheckOutcome(
        False,
        f"the span with the error {span[0]}-{span[1]} ({target.summary_text[span[0] : span[1]]!r}) was not marked",
    )


def _answer_key(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .,;:'\"")


def _same_answer(first: str, second: str) -> bool:
    return _answer_key(first) == _answer_key(second)


def _check_qgqa(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    """The 'similar meaning' statements (units 2n + 1) the check decides: in a verbatim summary, those whose
    two answers are the same text must be 'correct'; in a corrupted one, those whose summary answer lies in
    the span with the error and differs from the source answer must be 'incorrect'. None when no question asks
    about it."""
    labels = {judgement.unit_index: judgement.label for judgement in judgements}
    decided: list[tuple[int, str]] = []
    for unit in units:
        if unit.index % 2 == 0:
            continue
        summary_answer, source_answer = unit.extra.get("summary_answer"), unit.extra.get("source_answer")
        if not isinstance(summary_answer, Mapping) or not isinstance(source_answer, Mapping):
            continue
        same = _same_answer(str(summary_answer.get("text", "")), str(source_answer.get("text", "")))
        if target.expected == FAITHFUL and same:
            decided.append((unit.index, "correct"))
        elif target.expected == UNFAITHFUL and not same:
            inside = target.span is None or _overlaps(
                summary_answer.get("start"), summary_answer.get("end"), target.span
            )
            if inside:
                decided.append((unit.index, "incorrect"))
    if not decided:
        return CheckOutcome(None, "no question asks about what the check decides")
    wrong = [index for index, expected in decided if labels.get(index) != expected]
    if wrong:
        return CheckOutcome(False, f"statement(s) {_numbers(wrong)} judged against the check")
    return CheckOutcome(True, f"{len(decided)} decided statement(s) judged as expected")


def _check_bertscore(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    """A verbatim summary: every word aligned to the same word in the source is judged 'correct'. (The task
    judges alignments, not the summary: a corrupted summary decides nothing, see TaskDefinition.checks.)"""
    labels = {judgement.unit_index: judgement.label for judgement in judgements}
    decided = [unit.index for unit in units if _same_answer(unit.text, str(unit.extra.get("aligned_text", "")))]
    if not decided:
        return CheckOutcome(None, "no word is aligned to the same source word")
    wrong = [index for index in decided if labels.get(index) != "correct"]
    if wrong:
        return CheckOutcome(False, f"word(s) {_numbers(wrong)} aligned to the same word not judged correct")
    return CheckOutcome(True, f"{len(decided)} identical alignment(s) judged correct")


def _check_nothing(target: CheckTarget, judgements: Sequence[JudgedUnit], units: Sequence[Unit]) -> CheckOutcome:
    return CheckOutcome(None, "this task has no attention checks")


CHECK_RULES: dict[str, Callable[[CheckTarget, Sequence[JudgedUnit], Sequence[Unit]], CheckOutcome]] = {
    "bertscore": _check_bertscore,
    "qgqa": _check_qgqa,
    "entailment": _check_entailment,
    "sentence_consistency": _check_sentence_consistency,
    "feqa": _check_feqa,
    "factuality": _check_factuality,
    "hallucination_spans": _check_spans,
    "bump": _check_nothing,
}

# --- definitions ---------------------------------------------------------------------------------------

QGQA_STATEMENTS = (
    "The question can be answered using the summary.",
    "The highlighted text spans have a similar meaning.",
)
ENTAILMENT_PROMPT = "How many facts of this summary sentence can be found in the highlighted source sentences?"
SENTENCE_CONSISTENCY_PROMPT = "Is this sentence supported by the article?"

CORRECT_INCORRECT = (
    Choice("correct", "Correct", "1", 1.0),
    Choice("incorrect", "Incorrect", "2", 0.0),
    Choice("dont_know", "Don't know", "3", None),
)

FEQA_MEANING = (Choice("meaningful", "Meaningful", "1", 1.0), Choice("nonsensical", "Nonsensical", "2", 0.0))
FEQA_GRAMMAR = (
    Choice("grammatical", "Grammatical", "1", 1.0),
    Choice("minor_problems", "Minor grammatical problems", "2", 0.0),
)
FEQA_FAITHFUL = (Choice("faithful", "Faithful", "1", 1.0), Choice("unfaithful", "Unfaithful", "2", 0.0))
FEQA_ERROR = (
    Choice("hallucination", "Absent from the source (hallucination)", "1"),
    Choice("contradiction", "Conflicts with the source (contradiction)", "2"),
)
# (prompt, choices, (question it depends on, labels that trigger it)) per FEQA question.
FEQA_QUESTIONS: tuple[tuple[str, tuple[Choice, ...], tuple[int, tuple[str, ...]] | None], ...] = (
    ("Can you make sense of this sentence (read it on its own)?", FEQA_MEANING, None),
    ("Is it grammatical, or does it have minor problems a reader can easily fix?", FEQA_GRAMMAR, (0, ("meaningful",))),
    ("Is the sentence faithful to the source document?", FEQA_FAITHFUL, (0, ("meaningful",))),
    ("Is the wrong information absent from the source, or does it conflict with it?", FEQA_ERROR, (2, ("unfaithful",))),
)

# BUMP's error taxonomy (seed 003, Table 1): three semantic-frame errors, each intrinsic (built from
# information in the article) or extrinsic (information not in the article), plus coreference errors.
BUMP_ERROR_TYPES = (
    "intrinsic_predicate",
    "extrinsic_predicate",
    "intrinsic_entity",
    "extrinsic_entity",
    "intrinsic_circumstance",
    "extrinsic_circumstance",
    "coreference",
)
BUMP_TYPE_NAMES = {
    "intrinsic_predicate": "intrinsic predicate error",
    "extrinsic_predicate": "extrinsic predicate error",
    "intrinsic_entity": "intrinsic entity error",
    "extrinsic_entity": "extrinsic entity error",
    "intrinsic_circumstance": "intrinsic circumstance error",
    "extrinsic_circumstance": "extrinsic circumstance error",
    "coreference": "coreference error",
}
BUMP_TYPE_HELP = {
    "predicate": "the verb (what happens) no longer matches the article",
    "entity": "who or what takes part (subject or object) no longer matches the article",
    "circumstance": "the time, duration or place of the event is wrong (a changed quantity is an entity error)",
    "coreference": "a pronoun or reference points to the wrong antecedent, or to none",
    "intrinsic": "use words or facts that occur in the article",
    "extrinsic": "use words or facts that are not in the article",
}
FREESTYLE = "freestyle"
NOT_POSSIBLE = "not_possible"
BUMP_MODES = ("taxonomy", "freestyle")

TASKS: dict[str, TaskDefinition] = {
    task.key: task
    for task in (
        TaskDefinition(
            key="bertscore",
            name="BERTScore word alignment",
            unit_name="word",
            choices=CORRECT_INCORRECT,
            explanation_metrics=("bertscore",),
            view="words",
            checks=(FAITHFUL,),
            description="Judge the source word BERTScore aligned to each content word of the summary (thesis 5.1).",
            steps=(
                "Read the full summary to get context information.",
                "Focus a highlighted summary word (hover or Tab); the source word BERTScore aligned it to lights up"
                " (a word made of several pieces may light several; i lists its pieces and their similarities).",
                "Read both highlighted words and the words around them.",
                "Judge the statement: the summary word has a similar meaning as the highlighted source word.",
                "Choose Correct, Incorrect or Don't know for every highlighted word.",
                "When every word is judged, submit.",
            ),
        ),
        TaskDefinition(
            key="qgqa",
            name="QGQA question and answers",
            unit_name="statement",
            choices=CORRECT_INCORRECT,
            explanation_metrics=("qags", "qags_cloze"),
            view="qgqa",
            description="Judge each generated question and its two answers, one question at a time (thesis 5.1).",
            steps=(
                "Read the question at the top; the arrows move between the questions of this summary.",
                "Find the answer from the summary and the answer from the source, both highlighted.",
                "Judge the first statement: the question can be answered using the summary.",
                "Judge the second statement: the highlighted text spans have a similar meaning.",
                "Choose Correct, Incorrect or Don't know for both statements of every question, then submit.",
            ),
        ),
        TaskDefinition(
            key="entailment",
            name="Top-k entailment",
            unit_name="summary sentence",
            choices=(
                Choice("none", "None", "1", 0.0),
                Choice("few", "Few", "2", 0.25),
                Choice("some", "Some", "3", 0.5),
                Choice("most", "Most of them", "4", 0.75),
                Choice("all", "All", "5", 1.0),
            ),
            explanation_metrics=("entailment",),
            ordinal=True,
            view="entailment",
            description="Say how many facts of each summary sentence the three most similar source sentences hold.",
            steps=(
                "Take the summary sentences one at a time; the current one is framed.",
                "Its three most similar source sentences are highlighted in the document (the view scrolls to them).",
                "Find the facts of the summary sentence in the highlighted sentences.",
                "Choose how many of them are there: None, Few, Some, Most of them or All.",
                "When every sentence is judged, submit.",
            ),
        ),
        TaskDefinition(
            key="sentence_consistency",
            name="QAGS protocol: sentence supported by the article",
            unit_name="summary sentence",
            choices=(Choice("yes", "Yes", "1", 1.0), Choice("no", "No", "2", 0.0)),
            note_required=True,
            view="sentences",
            description="Decide for each summary sentence whether the article supports it, with a short reason.",
            steps=(
                "Read the article.",
                "Take the summary sentences one at a time; the current one is highlighted in the summary.",
                "Decide whether the article supports the sentence: Yes or No. Ungrammatical sentences are not "
                "supported; sentences copied from the article are.",
                "Write a short explanation of each decision.",
                "When every sentence has an answer and an explanation, submit.",
            ),
        ),
        TaskDefinition(
            key="feqa",
            name="FEQA protocol: grammaticality and faithfulness",
            unit_name="question",
            choices=FEQA_MEANING + FEQA_GRAMMAR + FEQA_FAITHFUL + FEQA_ERROR,
            view="sentences",
            description="FEQA's decision tree for every summary sentence: meaning, grammar, faithfulness, error type.",
            steps=(
                "Read the summary sentence on its own: can you make sense of it, or is it nonsensical?",
                "If it makes sense: is it grammatical, or does it have minor problems a reader can easily fix?",
                "If it makes sense: read the source. Is the sentence faithful to it? Do not use general knowledge.",
                "If unfaithful: is the information absent from the source (hallucination) or does it conflict "
                "with it (contradiction)?",
                "Follow-up questions appear only when they apply. When every sentence is done, submit.",
            ),
        ),
        TaskDefinition(
            key="factuality",
            name="Factuality (yes/no)",
            unit_name="summary",
            choices=(Choice("yes", "Factual", "1", 1.0), Choice("no", "Not factual", "2", 0.0)),
            view="sentences",
            description="Decide whether the summary as a whole is factual.",
            steps=(
                "Read the article and the summary.",
                "Decide whether everything the summary says is true: Factual or Not factual.",
                "Submit.",
            ),
        ),
        TaskDefinition(
            key="hallucination_spans",
            name="Maynez protocol: hallucinated spans",
            unit_name="span",
            choices=(Choice("intrinsic", "Intrinsic", "1"), Choice("extrinsic", "Extrinsic", "2")),
            spans=True,
            view="spans",
            description="Mark every hallucinated span of the summary and type it intrinsic or extrinsic.",
            steps=(
                "Read the article and the summary.",
                "Select each span of the summary that the article does not back: drag with the mouse, or move "
                "with the arrow keys and extend with Shift+arrows.",
                "Type each span: intrinsic (it misrepresents information from the article) or extrinsic (it adds "
                "information the article does not have).",
                "Confirm that every hallucination is marked (a faithful summary has none), then submit.",
            ),
        ),
        TaskDefinition(
            key="bump",
            name="BUMP protocol: minimal unfaithful edit",
            unit_name="edit",
            choices=(
                *(Choice(value, BUMP_TYPE_NAMES[value].capitalize(), "") for value in BUMP_ERROR_TYPES),
                Choice(FREESTYLE, "Freestyle error", ""),
                Choice(NOT_POSSIBLE, "Not possible in this summary", ""),
            ),
            edit=True,
            references_only=True,
            view="edit",
            checks=(),
            description="Edit a reference summary minimally so that it holds exactly one error (BUMP, seed 003).",
            steps=(
                "Read the article and its reference summary.",
                "Edit the summary so that it contains exactly one error of the requested type (or, in freestyle, "
                "of any type); change as little as possible and keep it grammatical and plausible.",
                "Check the changes shown below the editor; a warning appears when the edit is not minimal.",
                "If the requested error cannot be introduced, tick 'not possible' and say why.",
                "Submit.",
            ),
        ),
    )
}

# Tasks a researcher can run in a study (all of them: the imported-only tasks take part as protocols too).
STUDY_TASKS = tuple(TASKS)


def get_task(key: str) -> TaskDefinition:
    try:
        return TASKS[key]
    except KeyError:
        raise KeyError(f"unknown task {key!r}; known tasks: {', '.join(sorted(TASKS))}") from None


def unit_statement(task_key: str, unit_index: int | None) -> str:
    """The statement or question a judgement of unit `unit_index` answers, as the annotator read it, where
    the unit's position says it (the exports' `statement` column): QGQA's two statements per question (2n:
    answerable from the summary, 2n + 1: the answers' similar meaning), FEQA's four questions per sentence,
    the entailment and sentence-consistency prompts. "" for tasks with one kind of judgement only."""
    if unit_index is None or unit_index < 0:
        return ""
    if task_key == "qgqa":
        return QGQA_STATEMENTS[unit_index % len(QGQA_STATEMENTS)]
    if task_key == "feqa":
        return FEQA_QUESTIONS[unit_index % len(FEQA_QUESTIONS)][0]
    return {"entailment": ENTAILMENT_PROMPT, "sentence_consistency": SENTENCE_CONSISTENCY_PROMPT}.get(task_key, "")
