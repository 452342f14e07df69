"""Reads for the inspector: one summary with every explanation, score and judgement, and two summaries of
the same document side by side.

A fixed number of queries per summary, whatever the number of explanations, studies and judgements.
The panels' rows are cut from the explanation payloads (docs/EXPLANATIONS.md) here, so the templates
only lay them out; offsets stay 0-based, end-exclusive code-point offsets as stored.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from analysis.selectors.analysis import labels_table
from corpus.models import Document, HumanScore, MetricScore, Summary
from protocols.alignment import alignment_state, word_alignment
from protocols.tasks import TaskDefinition, get_task
from scoring.metrics import METRIC_ORDER, SPECS, display_name
from scoring.models import Explanation
from stats.spans import HALLUCINATED, THRESHOLDS, word_labels, word_offsets
from studies.models import Assignment, Judgement, Study
from studies.selectors.access import studies_readable

ENTAILMENT_VARIANTS = SPECS["entailment"].score_fields
DEFAULT_THRESHOLD = 0.9


class InspectionError(ValueError):
    """Two summaries that cannot be compared; the message says why."""


def _ranges(*ranges: tuple[int | None, int | None, str]) -> str:
    """[[start, end, class], ...] of the ranges that exist, as the page's scripts read them."""
    return json.dumps([[start, end, name] for start, end, name in ranges if start is not None and end is not None])


# --- one explanation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExplanationView:
    pk: int
    metric: str
    name: str
    config_hash: str
    config: dict[str, Any]
    model_ids: dict[str, Any]
    code_version: str
    score: float | None
    scores: dict[str, Any]
    payload: dict[str, Any]
    error: str
    created_at: datetime

    @property
    def short_hash(self) -> str:
        return self.config_hash[:12]

    @property
    def variants(self) -> list[tuple[str, Any]]:
        return sorted(self.scores.items())


@dataclass(frozen=True)
class Panel:
    """The newest explanation of one metric and what its panel shows of it."""

    metric: str
    name: str
    explanation: ExplanationView
    template: str
    data: dict[str, Any] = field(default_factory=dict)


def _bertscore_data(summary: Summary, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Tokens as stored (coloured and flagged one by one) and the word-level view (protocols.alignment):
    focusing a token lights the whole source words of its word and names every piece's similarity."""
    alignment = word_alignment(payload, summary_text=summary.text, document_text=summary.document.text)
    word_of = {(piece.start, piece.end): word.index for word in alignment.words for piece in word.pieces}
    tokens = [
        {
            "start": token["start"],
            "end": token["end"],
            "text": token.get("text", ""),
            "similarity": token.get("similarity"),
            "aligned": token.get("aligned"),
            "aligned_text": token.get("aligned_text", ""),
            "word": word_of.get((token["start"], token["end"])),
        }
        for token in payload.get("tokens", [])
    ]
    return {
        "tokens": tokens,
        "words": [alignment_state(word) for word in alignment.words],
        "notes": list(alignment.notes),
        "truncated": payload.get("truncated", {}),
        "thresholds": {"min": THRESHOLDS[0], "max": THRESHOLDS[-1], "value": DEFAULT_THRESHOLD},
    }


def _answer(answer: Mapping[str, Any] | None) -> dict[str, Any]:
    answer = answer or {}
    unanswerable = bool(answer.get("unanswerable")) or answer.get("start") is None
    return {**answer, "unanswerable": unanswerable}


def _qags_data(summary: Summary, payload: Mapping[str, Any], score: float | None) -> dict[str, Any]:
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for number, question in enumerate(payload.get("questions", []), start=1):
        summary_answer, source_answer = _answer(question.get("summary_answer")), _answer(question.get("source_answer"))
        row = {
            "number": number,
            "question": question.get("question", ""),
            "summary_answer": summary_answer,
            "source_answer": source_answer,
            "f1": question.get("f1"),
            "similarity": question.get("similarity"),
            "filter_reason": question.get("filter_reason", ""),
            "summary_ranges": _ranges((summary_answer.get("start"), summary_answer.get("end"), "answer")),
            "source_ranges": _ranges((source_answer.get("start"), source_answer.get("end"), "answer")),
        }
        (kept if question.get("kept") else dropped).append(row)
    # The score is the mean F1 of the kept questions, so those below the mean are the ones pulling it down.
    for row in kept:
        row["pulls_down"] = score is not None and row["f1"] is not None and row["f1"] < score
    kept.sort(key=lambda row: (row["f1"] is None, row["f1"] if row["f1"] is not None else 0.0, row["number"]))
    return {"kept": kept, "dropped": dropped, "variant": payload.get("variant", ""), "models": payload.get("models")}


def _document_sentence(document: Document, index: int | None) -> str:
    if index is None or not 0 <= index < len(document.sentences):
        return ""
    start, end = document.sentences[index]
    return document.text[start:end]


def _entailment_data(summary: Summary, payload: Mapping[str, Any]) -> dict[str, Any]:
    document = summary.document
    rows = []
    for number, sentence in enumerate(payload.get("sentences", []), start=1):
        top = [
            {**entry, "rank": rank, "text": _document_sentence(document, entry.get("index"))}
            for rank, entry in enumerate(sentence.get("top", []), start=1)
        ]
        probabilities = sentence.get("entailment") or {}
        rows.append(
            {
                "number": number,
                "text": sentence.get("text", ""),
                "start": sentence.get("start"),
                "end": sentence.get("end"),
                "top": top,
                "entailment": [(variant, probabilities.get(variant)) for variant in ENTAILMENT_VARIANTS],
                "s2s_best": sentence.get("s2s_best"),
                "source_ranges": _ranges(*((e["start"], e["end"], f"top rank-{min(e['rank'], 3)}") for e in top)),
            }
        )
    nli = payload.get("nli") or {}
    return {"sentences": rows, "k": payload.get("k"), "nli": nli, "computed": bool(nli.get("computed"))}


def _similarity_data(summary: Summary, payload: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for number, sentence in enumerate(payload.get("sentences", []), start=1):
        best = sentence.get("best") or {}
        rows.append(
            {
                "number": number,
                "text": sentence.get("text", ""),
                "best": best,
                "best_text": _document_sentence(summary.document, best.get("index")),
                "source_ranges": _ranges((best.get("start"), best.get("end"), "top rank-1")),
            }
        )
    return {"sentences": rows}


def _summary_sentences(summary: Summary) -> list[tuple[int, int]]:
    return [(start, end) for start, end in summary.sentences] or [(0, len(summary.text))]


def _entities_data(summary: Summary, payload: Mapping[str, Any]) -> dict[str, Any]:
    by_sentence: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for entity in payload.get("entities", []):
        match = entity.get("match") or {}
        by_sentence[entity.get("sentence") or 0].append(
            {
                **entity,
                "match": match,
                "summary_ranges": _ranges((entity.get("start"), entity.get("end"), "answer")),
                "source_ranges": _ranges((match.get("start"), match.get("end"), "answer")),
            }
        )
    sentences = _summary_sentences(summary)
    rows = [
        {"number": index + 1, "text": summary.text[start:end], "entities": by_sentence.get(index, [])}
        for index, (start, end) in enumerate(sentences)
    ]
    return {"sentences": rows, "source_entity_count": payload.get("source_entity_count")}


def _abstractiveness_data(summary: Summary, payload: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for number, sentence in enumerate(payload.get("sentences", []), start=1):
        novel_words = [summary.text[start:end] for start, end in sentence.get("novel_words", [])]
        novel = sentence.get("novel") or {}
        parts = sentence.get("source", [])
        rows.append(
            {
                "number": number,
                "text": sentence.get("text", ""),
                "type": (sentence.get("type") or "").replace("_", " "),
                "k": sentence.get("k"),
                "novel": [(n, novel.get(n)) for n in ("1", "2", "3")],
                "novel_words": novel_words,
                "source": parts,
                "summary_ranges": _ranges(*((start, end, "novel") for start, end in sentence.get("novel_words", []))),
                "source_ranges": _ranges(*((p.get("start"), p.get("end"), "top rank-1") for p in parts)),
            }
        )
    return {"sentences": rows, "types": payload.get("types", {})}


# Each metric's panel (scoring.metrics.MetricSpec.panel) -> the rows it shows, cut from the payload.
PANEL_DATA: dict[str, Callable[[Summary, Mapping[str, Any], float | None], dict[str, Any]]] = {
    "bertscore": lambda summary, payload, score: _bertscore_data(summary, payload),
    "qags": _qags_data,
    "entailment": lambda summary, payload, score: _entailment_data(summary, payload),
    "similarity": lambda summary, payload, score: _similarity_data(summary, payload),
    "entities": lambda summary, payload, score: _entities_data(summary, payload),
    "abstractiveness": lambda summary, payload, score: _abstractiveness_data(summary, payload),
}
GENERIC_PANEL = "annotations/inspect/_panel_generic.html"


def _panel(summary: Summary, explanation: ExplanationView) -> Panel:
    spec = SPECS.get(explanation.metric)
    build = PANEL_DATA.get(spec.panel) if spec else None
    data = build(summary, explanation.payload, explanation.score) if build and explanation.payload else {}
    template = spec.panel_template if spec and build else GENERIC_PANEL
    return Panel(explanation.metric, explanation.name, explanation, template, data)


def _metric_position(metric: str) -> tuple[int, str]:
    return (METRIC_ORDER.index(metric) if metric in METRIC_ORDER else len(METRIC_ORDER), metric)


# --- judgements -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgementTable:
    """One study task's labels on this summary: a row per unit, a column per annotator."""

    study_id: int
    study_name: str
    imported: bool
    item_id: int
    task: TaskDefinition
    annotators: list[str]
    rows: list[tuple[str, list[str]]]


@dataclass(frozen=True)
class HumanSpans:
    """The hallucinated spans annotators marked, per word: how many of `annotators` marked each word."""

    annotators: int
    words: list[dict[str, Any]]  # start, end, text, marked (count)
    spans: list[dict[str, Any]]  # who, start, end, text, label


def _visible_assignments(summary: Summary, user: User) -> list[tuple[Any, ...]]:
    """Submitted assignments on the summary in the studies the user may read (imported ones included)."""
    return list(
        Assignment.objects.filter(
            item__study_task__study__in=studies_readable(user=user),
            item__summary=summary,
            status=Assignment.Status.SUBMITTED,
        )
        .order_by("item__study_task__study_id", "item__study_task__task", "annotator__username")
        .values_list(
            "pk",
            "annotator__username",
            "item_id",
            "item__study_task__task",
            "item__study_task__study_id",
            "item__study_task__study__name",
            "item__study_task__study__kind",
        )
    )


def _judgements(summary: Summary, user: User) -> tuple[list[JudgementTable], HumanSpans]:
    assignments = _visible_assignments(summary, user)
    by_assignment: dict[int, list[tuple[int, str, str, int | None, int | None]]] = defaultdict(list)
    judgements = (
        Judgement.objects.filter(assignment__in=[row[0] for row in assignments])
        .order_by("unit_index", "assignment_id")
        .values_list("assignment_id", "unit_index", "unit_text", "label", "start", "end")
    )
    for assignment_id, *rest in judgements:
        # The rest of each row is (unit_index, unit_text, label, start, end), as values_list names them.
        by_assignment[assignment_id].append(tuple(rest))  # type: ignore[arg-type]

    items: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in assignments:
        items[row[2]].append(row)
    tables = []
    span_marks: dict[str, list[tuple[int, int]]] = {}
    spans: list[dict[str, Any]] = []
    for item_id, rows in items.items():
        _, _, _, task_key, study_id, study_name, kind = rows[0]
        try:
            task = get_task(task_key)
        except KeyError:
            continue
        names = [row[1] for row in rows]
        # Unit order, annotators in column order within a unit (the sort is stable).
        unit_rows = sorted(
            ((row[1], index, text, label) for row in rows for index, text, label, _, _ in by_assignment[row[0]]),
            key=lambda unit_row: unit_row[1],
        )
        labelled = labels_table(task, names, unit_rows)
        table_rows = [(unit, [labels.get(name, "") for name in names]) for unit, labels in labelled.items()]
        tables.append(
            JudgementTable(study_id, study_name, kind == Study.Kind.IMPORTED, item_id, task, names, table_rows)
        )
        if task.spans:
            for row in rows:
                who = f"{row[1]} ({study_name})"
                marked = [
                    (start, end)
                    for _, _, _, start, end in by_assignment[row[0]]
                    if start is not None and end is not None
                ]
                span_marks[who] = marked
                spans += [
                    {"who": who, "start": start, "end": end, "text": summary.text[start:end], "label": label}
                    for _, _, label, start, end in by_assignment[row[0]]
                    if start is not None and end is not None
                ]
    labels = word_labels({summary.pk: (summary.text, span_marks)}) if span_marks else {}
    words = [
        {
            "start": start,
            "end": end,
            "text": summary.text[start:end],
            "marked": sum(label == HALLUCINATED for label in labels.get((summary.pk, index), {}).values()),
        }
        for index, (start, end) in enumerate(word_offsets(summary.text))
    ]
    spans.sort(key=lambda span: (span["start"], span["who"]))
    return tables, HumanSpans(len(span_marks), [word for word in words if word["marked"]], spans)


# --- one summary ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreRow:
    key: str  # what a comparison lines up: the same name, or the same metric configuration
    name: str
    kind: str  # human, imported metric, computed
    value: float | None
    detail: str = ""


@dataclass(frozen=True)
class Sibling:
    pk: int
    system: str
    external_id: str
    is_reference: bool

    @property
    def label(self) -> str:
        name = self.system if self.system == self.external_id else f"{self.system} ({self.external_id})"
        return f"{name}, reference" if self.is_reference else name


@dataclass(frozen=True)
class SummaryInspection:
    summary: Summary
    panels: list[Panel]  # the newest explanation of each metric, in METRIC_ORDER
    explanations: list[ExplanationView]  # every configuration, newest first within a metric
    scores: list[ScoreRow]
    judgements: list[JudgementTable]
    human_spans: HumanSpans
    siblings: list[Sibling]  # the document's other summaries

    @property
    def document(self) -> Document:
        return self.summary.document

    @property
    def bertscore(self) -> Panel | None:
        return next((panel for panel in self.panels if panel.metric == "bertscore"), None)

    @property
    def script_state(self) -> dict[str, Any]:
        """What the page's script needs: texts, BERTScore tokens and the human marks."""
        bertscore = self.bertscore
        return {
            "summary": self.summary.text,
            "tokens": bertscore.data.get("tokens", []) if bertscore else [],
            "words": bertscore.data.get("words", []) if bertscore else [],
            "humanWords": self.human_spans.words,
            "humanAnnotators": self.human_spans.annotators,
        }


def _explanation_views(summary: Summary) -> list[ExplanationView]:
    rows = Explanation.objects.filter(summary=summary).order_by("metric", "-created_at", "-pk")
    views = [
        ExplanationView(
            pk=row.pk,
            metric=row.metric,
            name=display_name(row.metric),
            config_hash=row.config_hash,
            config=row.config,
            model_ids=row.model_ids,
            code_version=row.code_version,
            score=row.score,
            scores=row.scores or {},
            payload=row.payload or {},
            error=row.error,
            created_at=row.created_at,
        )
        for row in rows
    ]
    return sorted(views, key=lambda view: _metric_position(view.metric))


def _score_rows(summary: Summary, explanations: Sequence[ExplanationView]) -> list[ScoreRow]:
    rows = [
        ScoreRow(f"human:{name}", name, "human", value, source)
        for name, value, source in HumanScore.objects.filter(summary=summary)
        .order_by("name")
        .values_list("name", "value", "source")
    ]
    rows += [
        ScoreRow(f"imported:{name}", name, "imported metric", value, source)
        for name, value, source in MetricScore.objects.filter(summary=summary)
        .order_by("name")
        .values_list("name", "value", "source")
    ]
    for view in explanations:
        detail = f"configuration {view.short_hash}"
        rows.append(ScoreRow(f"{view.metric}:{view.config_hash}", view.name, "computed", view.score, detail))
        rows += [
            ScoreRow(f"{view.metric}.{variant}:{view.config_hash}", f"{view.name} {variant}", "computed", value, detail)
            for variant, value in view.variants
            if isinstance(value, int | float) or value is None
        ]
    return rows


def summary_inspection(*, summary_id: int, user: User) -> SummaryInspection:
    """Everything the inspector shows of one summary. Raises Summary.DoesNotExist for an unknown id."""
    summary = Summary.objects.select_related("document__dataset").get(pk=summary_id)
    explanations = _explanation_views(summary)
    newest: dict[str, ExplanationView] = {}
    for view in explanations:
        newest.setdefault(view.metric, view)
    tables, human_spans = _judgements(summary, user)
    siblings = [
        Sibling(*row)
        for row in Summary.objects.filter(document_id=summary.document_id)
        .exclude(pk=summary.pk)
        .order_by("-is_reference", "system", "external_id")
        .values_list("pk", "system", "external_id", "is_reference")
    ]
    return SummaryInspection(
        summary=summary,
        panels=[_panel(summary, view) for view in newest.values()],
        explanations=explanations,
        scores=_score_rows(summary, explanations),
        judgements=tables,
        human_spans=human_spans,
        siblings=siblings,
    )


# --- two summaries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComparedScore:
    name: str
    kind: str
    detail: str
    a: float | None
    b: float | None
    in_a: bool
    in_b: bool

    @property
    def delta(self) -> float | None:
        return self.b - self.a if self.a is not None and self.b is not None else None


@dataclass(frozen=True)
class SummaryComparison:
    a: SummaryInspection
    b: SummaryInspection
    panels: list[tuple[str, str, Panel | None, Panel | None]]  # metric, its name, A's panel, B's panel
    scores: list[ComparedScore]

    @property
    def document(self) -> Document:
        return self.a.summary.document

    @property
    def summaries(self) -> list[Sibling]:
        """Every summary of the document, for picking another pair."""
        own = Sibling(self.a.summary.pk, self.a.summary.system, self.a.summary.external_id, self.a.summary.is_reference)
        return sorted([own, *self.a.siblings], key=lambda s: (not s.is_reference, s.system, s.external_id))


def summary_comparison(*, a_id: int, b_id: int, user: User) -> SummaryComparison:
    """Two summaries of one document with their panels lined up by metric. Raises Summary.DoesNotExist
    for an unknown id and InspectionError when the summaries belong to different documents."""
    a = summary_inspection(summary_id=a_id, user=user)
    b = summary_inspection(summary_id=b_id, user=user)
    if a.summary.document_id != b.summary.document_id:
        raise InspectionError(
            f"summaries {a_id} and {b_id} belong to different documents "
            f"({a.summary.document.external_id} and {b.summary.document.external_id}); "
            "a comparison shows two summaries of the same document"
        )
    panels_a = {panel.metric: panel for panel in a.panels}
    panels_b = {panel.metric: panel for panel in b.panels}
    metrics = sorted(set(panels_a) | set(panels_b), key=_metric_position)
    scores_a = {row.key: row for row in a.scores}
    scores_b = {row.key: row for row in b.scores}
    keys = list(scores_a) + [key for key in scores_b if key not in scores_a]
    scores = []
    for key in keys:
        row = scores_a.get(key) or scores_b[key]
        in_a, in_b = key in scores_a, key in scores_b
        value_a = scores_a[key].value if in_a else None
        value_b = scores_b[key].value if in_b else None
        scores.append(ComparedScore(row.name, row.kind, row.detail, value_a, value_b, in_a, in_b))
    return SummaryComparison(a, b, [(m, display_name(m), panels_a.get(m), panels_b.get(m)) for m in metrics], scores)
