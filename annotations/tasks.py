"""The annotation tasks: their label choices and how an item is cut into units. No database access here.

A task's units come from the item's frozen explanation payload (BERTScore: the summary's content
words with their aligned source tokens) or from the summary itself (factuality: one unit). Every
view, the submission service, the agreement code and the importers look tasks up here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


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
    # Ordinal scales (their choices carry numbers) get ordinal agreement and min-max spreads.
    ordinal: bool = False
    # Each judged unit needs a short written explanation (QAGS protocol).
    note_required: bool = False
    steps: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(choice.value for choice in self.choices)

    @property
    def explanation_metric(self) -> str | None:
        return self.explanation_metrics[0] if self.explanation_metrics else None

    def numeric(self, value: str) -> float | None:
        return next((choice.numeric for choice in self.choices if choice.value == value), None)

    def units(
        self,
        *,
        summary_text: str,
        payload: Mapping[str, Any] | None = None,
        summary_sentences: Sequence[Sequence[int]] = (),
    ) -> list[Unit]:
        builder = UNIT_BUILDERS.get(self.key)
        if builder is not None:
            return builder(payload or {})
        if self.spans:
            return []
        if self.unit_name == "summary sentence":
            spans = list(summary_sentences) or ([[0, len(summary_text)]] if summary_text.strip() else [])
            return [Unit(index=i, text=summary_text[s:e], start=s, end=e) for i, (s, e) in enumerate(spans)]
        return [Unit(index=0, text=summary_text, start=0, end=len(summary_text))]


def bertscore_units(payload: Mapping[str, Any]) -> list[Unit]:
    """Content words of the summary (no stopwords, no punctuation), each with its aligned source tokens.

    The unit index is the word's index in the explanation payload, so it stays stable whatever the
    stopword filter shows.
    """
    tokens = payload.get("tokens", [])
    units = []
    for index, word in enumerate(payload.get("words", [])):
        if word["stopword"] or word["punct"] or not word["tokens"]:
            continue
        pieces = [tokens[t] for t in word["tokens"]]
        aligned = [piece["aligned"] for piece in pieces if piece["aligned"] is not None]
        units.append(
            Unit(
                index=index,
                text=word["text"],
                start=word["start"],
                end=word["end"],
                extra={
                    "aligned": aligned,
                    "aligned_text": " ".join(piece["aligned_text"] for piece in pieces if piece["aligned"]),
                    "similarity": word["similarity"],
                },
            )
        )
    return units


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
                    extra={
                        "question_number": number,
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
            extra={"top": sentence.get("top", [])},
        )
        for i, sentence in enumerate(payload.get("sentences", []))
    ]


UNIT_BUILDERS: dict[str, Callable[[Mapping[str, Any]], list[Unit]]] = {
    "bertscore": bertscore_units,
    "qgqa": qgqa_units,
    "entailment": entailment_units,
}

QGQA_STATEMENTS = (
    "The question can be answered using the summary.",
    "The highlighted text spans have a similar meaning.",
)

CORRECT_INCORRECT = (
    Choice("correct", "Correct", "1", 1.0),
    Choice("incorrect", "Incorrect", "2", 0.0),
    Choice("dont_know", "Don't know", "3", None),
)

TASKS: dict[str, TaskDefinition] = {
    task.key: task
    for task in (
        TaskDefinition(
            key="bertscore",
            name="BERTScore word alignment",
            unit_name="word",
            choices=CORRECT_INCORRECT,
            explanation_metrics=("bertscore",),
            steps=(
                "Read the full summary to get context information.",
                "Focus a highlighted summary word (hover or Tab); the source word BERTScore aligned it to lights up.",
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
        ),
        TaskDefinition(
            key="sentence_consistency",
            name="Sentence supported by the article (QAGS protocol)",
            unit_name="summary sentence",
            choices=(Choice("yes", "Yes", "1", 1.0), Choice("no", "No", "2", 0.0)),
            note_required=True,
        ),
        TaskDefinition(
            key="factuality",
            name="Factuality (yes/no)",
            unit_name="summary",
            choices=(Choice("yes", "Factual", "1", 1.0), Choice("no", "Not factual", "2", 0.0)),
        ),
        TaskDefinition(
            key="hallucination_spans",
            name="Hallucinated spans",
            unit_name="span",
            choices=(Choice("intrinsic", "Intrinsic", "1"), Choice("extrinsic", "Extrinsic", "2")),
            spans=True,
        ),
    )
}

# Tasks a researcher can run in a study today (the others hold imported crowd labels).
STUDY_TASKS = ("bertscore",)


def get_task(key: str) -> TaskDefinition:
    try:
        return TASKS[key]
    except KeyError:
        raise KeyError(f"unknown task {key!r}; known tasks: {', '.join(sorted(TASKS))}") from None
