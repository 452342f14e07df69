"""The annotation tasks: their label choices and how an item is cut into units. No database access here.

A task's units come from the item's frozen explanation payload (BERTScore: the summary's content
words with their aligned source tokens) or from the summary itself (factuality: one unit). Every
view, the submission service, the agreement code and the importers look tasks up here.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    explanation_metric: str | None = None
    # Span tasks store one judgement per marked span (offsets in the summary) instead of one per unit.
    spans: bool = False
    steps: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(choice.value for choice in self.choices)

    def units(self, *, summary_text: str, payload: Mapping[str, Any] | None) -> list[Unit]:
        if self.key == "bertscore":
            return bertscore_units(payload or {})
        if self.spans:
            return []
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
            explanation_metric="bertscore",
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
