"""Reads for adjudication: the queue of items whose annotators disagree, and one item side by side.

The queue costs a fixed number of queries whatever the study's size (grouped counts per unit and label,
per item and final status, per item of skips; then the shown page of items); the item page reads its
labels, notes, times and final labels in a fixed number too, and the evidence through the inspector's
selector. Final labels themselves are written by review.services.adjudication.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count

from inspector.selectors.inspect import SummaryInspection, summary_inspection
from inspector.selectors.inspect import _ranges as ranges_json
from protocols.tasks import SPANS_MAY_OVERLAP, TaskDefinition, Unit, get_task, word_spans
from review.decisions import Marking, automatic_marking, spans_decision
from stats.agreement import majority_label
from stats.unitizing import TypedSpan, typed_majority_spans
from studies.models import Assignment, FinalLabel, Judgement, Study, StudyItem, StudyTask
from studies.selectors.adjudication import adjudicable_tasks
from studies.selectors.assignments import item_units


def item_markings(
    *, study_task: StudyTask | None = None, item: StudyItem | None = None
) -> dict[int, dict[str, Marking]]:
    """item id -> annotator -> their Marking, from every submitted assignment of the task (or of one item);
    an annotator who marked no span has an empty one."""
    assignments = Assignment.objects.filter(status=Assignment.Status.SUBMITTED)
    if study_task is not None:
        assignments = assignments.filter(item__study_task=study_task)
    if item is not None:
        assignments = assignments.filter(item=item)
    names = dict(assignments.values_list("pk", "annotator__username"))
    items = dict(assignments.values_list("pk", "item_id"))
    spans: dict[int, list[TypedSpan]] = defaultdict(list)
    edits: dict[int, dict[str, Any]] = {}
    rows = Judgement.objects.filter(assignment__in=assignments).values_list(
        "assignment_id", "start", "end", "label", "unit_text", "note", "data"
    )
    for assignment_id, start, end, label, unit_text, note, data in rows.order_by("assignment_id", "unit_index"):
        if start is not None and end is not None:
            spans[assignment_id].append((start, end, label))
        else:
            edits[assignment_id] = {"text": unit_text, "label": label, "note": note, "data": data}
    markings: dict[int, dict[str, Marking]] = defaultdict(dict)
    for pk, name in sorted(names.items(), key=lambda pair: pair[1]):
        markings[items[pk]][name] = Marking(tuple(sorted(spans.get(pk, []))), edits.get(pk))
    return dict(markings)


# The queue shows at most this many items; its filters find the others.
MAX_QUEUE_ROWS = 200
Status = FinalLabel.Status


@dataclass(frozen=True)
class QueueFilters:
    """task: a task key (None: every task); below: items with a unit whose agreement (share of the labels
    equal to the most frequent one) is below it (1.0: any disagreement; above 1: every judged item);
    flagged: only items an annotator marked "cannot judge"; open: only items with a unit no adjudicator
    decided yet that is not unanimous."""

    task: str | None = None
    below: float = 1.0
    flagged: bool = False
    open: bool = False

    def query(self) -> dict[str, str]:
        """The filters as the page's query string keeps them."""
        params = {"below": f"{self.below:g}"}
        if self.task:
            params["task"] = self.task
        if self.flagged:
            params["flagged"] = "1"
        if self.open:
            params["open"] = "1"
        return params


@dataclass
class QueueRow:
    item_id: int
    task: str
    n_units: int = 0
    n_disagreed: int = 0  # units whose labels are not all the same
    lowest_agreement: float = 1.0
    n_raters: int = 0  # the most raters any unit of the item has
    n_skipped: int = 0  # annotators who marked the item "cannot judge"
    statuses: dict[str, int] = field(default_factory=dict)  # final label status -> units
    summary_id: int | None = None
    document: str = ""
    system: str = ""

    @property
    def n_decided(self) -> int:
        return self.statuses.get(Status.ADJUDICATED, 0)


@dataclass(frozen=True)
class Queue:
    rows: list[QueueRow]  # the shown page, most disagreed first
    n_matching: int  # items that pass the filters (rows holds at most MAX_QUEUE_ROWS)
    item_ids: list[int]  # every matching item in queue order, for next/previous
    tasks: list[str]  # the study's tasks


def adjudication_queue(
    *,
    study: Study,
    filters: QueueFilters,
    limit: int = MAX_QUEUE_ROWS,
    tasks: list[StudyTask] | None = None,
) -> Queue:
    """The study's judged items that pass the filters, most disagreed first (lowest unit agreement, most
    disagreeing units), then by task and position. `tasks`: adjudicable_tasks(study) when already read."""
    study_tasks = tasks if tasks is not None else adjudicable_tasks(study=study)
    names = {study_task.pk: study_task.task for study_task in study_tasks}
    chosen = [pk for pk, name in names.items() if filters.task in (None, name)]
    votes: dict[tuple[int, int], Counter[Hashable]] = defaultdict(Counter)
    item_task: dict[int, int] = {}
    # Span and edit tasks: one unit per item, each annotator's spans or edit one vote (Marking.key).
    whole = [
        study_task for study_task in study_tasks if study_task.pk in chosen and get_task(study_task.task).whole_item
    ]
    for study_task in whole:
        for item_id, by_annotator in item_markings(study_task=study_task).items():
            votes[(item_id, 0)].update(marking.key() for marking in by_annotator.values())
            item_task[item_id] = study_task.pk
    counts = (
        Judgement.objects.filter(
            assignment__item__study_task__in=[pk for pk in chosen if pk not in {t.pk for t in whole}],
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .values_list("assignment__item_id", "assignment__item__study_task_id", "unit_index", "label")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for item_id, task_id, unit_index, label, n in counts.iterator(chunk_size=10000):
        votes[(item_id, unit_index)][label] += n
        item_task[item_id] = task_id
    rows: dict[int, QueueRow] = {}
    for (item_id, _), counter in votes.items():
        row = rows.get(item_id)
        if row is None:
            row = rows[item_id] = QueueRow(item_id, names[item_task[item_id]])
        total = sum(counter.values())
        agreement = max(counter.values()) / total
        row.n_units += 1
        row.n_disagreed += len(counter) > 1
        row.lowest_agreement = min(row.lowest_agreement, agreement)
        row.n_raters = max(row.n_raters, total)
    finals = (
        FinalLabel.objects.filter(item__study_task__in=chosen)
        .values_list("item_id", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for item_id, status, n in finals:
        if item_id in rows:
            rows[item_id].statuses[status] = n
    skips = (
        Assignment.objects.filter(item__study_task__in=chosen, status=Assignment.Status.SKIPPED)
        .values_list("item_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for item_id, n in skips:
        if item_id in rows:
            rows[item_id].n_skipped = n

    def wanted(row: QueueRow) -> bool:
        if row.lowest_agreement >= filters.below:
            return False
        if filters.flagged and not row.n_skipped:
            return False
        return not filters.open or row.n_decided < row.n_disagreed

    matching = sorted(
        (row for row in rows.values() if wanted(row)),
        key=lambda row: (row.lowest_agreement, -row.n_disagreed, row.task, row.item_id),
    )
    shown = matching[:limit]
    items = StudyItem.objects.filter(pk__in=[row.item_id for row in shown]).values_list(
        "pk", "summary_id", "summary__document__external_id", "summary__system"
    )
    details = {pk: (summary_id, document, system) for pk, summary_id, document, system in items}
    for row in shown:
        row.summary_id, row.document, row.system = details[row.item_id]
    return Queue(
        rows=shown,
        n_matching=len(matching),
        item_ids=[row.item_id for row in matching],
        tasks=[study_task.task for study_task in study_tasks],
    )


# --- one item --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rater:
    username: str
    seconds: float  # active time on the item
    comment: str
    guidelines_version: int | None
    skipped: str = ""  # the "cannot judge" reason, for an annotator who skipped the item
    skip_note: str = ""


@dataclass(frozen=True)
class UnitView:
    index: int
    text: str
    prompt: str
    choices: list[dict[str, str]]
    labels: dict[str, str]  # annotator -> label
    notes: dict[str, str]  # annotator -> their note on this unit
    majority: str | None
    agreement: float | None
    final: dict[str, Any]
    cells: list[tuple[str, str]]  # (label, note) of each rater of AdjudicationItem.columns, in that order
    summary_ranges: str = "[]"  # where the unit is in the summary and what it points at in the document,
    source_ranges: str = "[]"  # as the inspector's "reveal" buttons read them


@dataclass(frozen=True)
class WholeItem:
    """A span or edit task's item, decided whole: each annotator's spans or edit, the majority an adjudicator
    can accept (spans: the character-level majority, ties left unmarked; edits: the edit more than half of
    them wrote, else none) and the final decision (final_state, its `data` the final spans or edit)."""

    markings: dict[str, Marking]
    majority: dict[str, Any]  # {"label", "data"}; an edit task's label is "" when no edit has a majority
    final: dict[str, Any]
    words: list[list[int]]  # the summary's words (start, end), as the annotators' span view snaps to them
    n_agreeing: int  # annotators who share the most common spans or edit


@dataclass(frozen=True)
class ItemDecisions:
    """What an adjudicator decides on: every unit with each annotator's label and note, the majority and the
    final label; every annotator with their time and comment (or why they could not judge the item). Span
    and edit tasks have no units: `whole` holds their item's decision."""

    item: StudyItem
    task: TaskDefinition
    raters: list[Rater]
    units: list[UnitView]
    columns: list[str]  # the annotators who submitted the item, in column order
    whole: WholeItem | None

    def whole_state(self) -> dict[str, Any] | None:
        """A span or edit task's item as the page's script and the API get it; None for label tasks."""
        if self.whole is None:
            return None
        return {
            "item": self.item.pk,
            "kind": "spans" if self.task.spans else "edit",
            "summary": self.item.summary.text,
            "words": self.whole.words,
            "choices": [{"value": c.value, "label": c.label, "key": c.key} for c in self.task.choices],
            "spansMayOverlap": SPANS_MAY_OVERLAP,
            "raters": [{"name": name, **marking.as_state()} for name, marking in self.whole.markings.items()],
            "majority": self.whole.majority,
            "final": self.whole.final,
        }


@dataclass(frozen=True)
class AdjudicationItem(ItemDecisions):
    """The page: the decisions, the evidence (the inspector's view of the summary) and the queue around it."""

    inspection: SummaryInspection
    position: int | None  # the item's place in the queue (0-based), None when the filters leave it out
    previous_id: int | None
    next_id: int | None
    n_queue: int

    @property
    def evidence_panels(self) -> list[Any]:
        """The inspector's panels of the metrics whose explanation the task shows (BERTScore has its own card)."""
        return [
            panel
            for panel in self.inspection.panels
            if panel.metric in self.task.explanation_metrics and panel.metric != "bertscore"
        ]

    def script_state(self) -> dict[str, Any]:
        whole = self.whole_state()
        if whole is not None:
            return whole
        return {
            "kind": "labels",
            "item": self.item.pk,
            "units": [
                {
                    "index": unit.index,
                    "text": unit.text,
                    "choices": unit.choices,
                    "majority": unit.majority,
                    "final": unit.final,
                }
                for unit in self.units
            ],
        }


def final_state(row: FinalLabel | None) -> dict[str, Any]:
    if row is None:
        return {
            "label": "",
            "status": "",
            "method": "",
            "by": "",
            "note": "",
            "version": 0,
            "aggregated": "",
            "aggregated_method": "",
            "data": {},
        }
    return {
        "label": row.label,
        "status": row.status,
        "method": row.method,
        "by": row.adjudicated_by.username if row.adjudicated_by_id else "",  # type: ignore[union-attr]
        "note": row.note,
        "version": row.version,
        "aggregated": row.aggregated_label,
        "aggregated_method": row.aggregated_method,
        "data": row.data,
    }


def unit_ranges(unit: Unit) -> tuple[str, str]:
    """The unit's place in the summary and its evidence in the document: BERTScore's aligned source words,
    QGQA's two answers, the entailment task's top source sentences."""
    extra = unit.extra
    summary = [(unit.start, unit.end, "answer")]
    source: list[tuple[int | None, int | None, str]] = []
    if isinstance(extra.get("summary_answer"), dict):
        summary = [(extra["summary_answer"].get("start"), extra["summary_answer"].get("end"), "answer")]
    if isinstance(extra.get("source_answer"), dict):
        source = [(extra["source_answer"].get("start"), extra["source_answer"].get("end"), "answer")]
    for start, end in extra.get("aligned") or []:
        source.append((start, end, "answer"))
    for rank, entry in enumerate(extra.get("top") or [], start=1):
        source.append((entry.get("start"), entry.get("end"), f"top rank-{min(rank, 3)}"))
    return ranges_json(*summary), ranges_json(*source)


def item_decisions(*, item: StudyItem) -> ItemDecisions:
    """One item with every annotator's labels, notes, time and comment and the final labels."""
    task = get_task(item.study_task.task)
    assignments = list(
        Assignment.objects.filter(
            item=item, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED]
        ).values_list(
            "pk",
            "annotator__username",
            "status",
            "time_spent",
            "comment",
            "guidelines_version",
            "skip_reason",
            "skip_note",
        )
    )
    raters = [
        Rater(
            username=name,
            seconds=round(seconds, 1),
            comment=comment,
            guidelines_version=version,
            skipped=Assignment.SkipReason(reason).label if status == Assignment.Status.SKIPPED and reason else "",
            skip_note=note if status == Assignment.Status.SKIPPED else "",
        )
        for _, name, status, seconds, comment, version, reason, note in sorted(assignments, key=lambda row: row[1])
    ]
    names = {pk: name for pk, name, status, *_ in assignments if status == Assignment.Status.SUBMITTED}
    labels: dict[int, dict[str, str]] = defaultdict(dict)
    notes: dict[int, dict[str, str]] = defaultdict(dict)
    for assignment_id, unit_index, label, note in Judgement.objects.filter(assignment__in=list(names)).values_list(
        "assignment_id", "unit_index", "label", "note"
    ):
        labels[unit_index][names[assignment_id]] = label
        if note:
            notes[unit_index][names[assignment_id]] = note
    columns = sorted(names.values())
    finals = {row.unit_index: row for row in FinalLabel.objects.filter(item=item).select_related("adjudicated_by")}
    if task.whole_item:
        whole = whole_item(item=item, task=task, final=finals.get(0))
        return ItemDecisions(item=item, task=task, raters=raters, units=[], columns=columns, whole=whole)
    units = []
    for unit in item_units(item, with_document=True):
        by_annotator = labels.get(unit.index, {})
        counter: Counter[Hashable] = Counter(by_annotator.values())
        summary_ranges, source_ranges = unit_ranges(unit)
        units.append(
            UnitView(
                index=unit.index,
                text=unit.text,
                prompt=unit.prompt,
                choices=[{"value": c.value, "label": c.label, "key": c.key} for c in task.choices_for(unit)],
                labels=dict(sorted(by_annotator.items())),
                notes=notes.get(unit.index, {}),
                majority=majority_label(by_annotator.values()),  # type: ignore[arg-type]
                agreement=max(counter.values()) / len(by_annotator) if by_annotator else None,
                final=final_state(finals.get(unit.index)),
                cells=[(by_annotator.get(name, ""), notes.get(unit.index, {}).get(name, "")) for name in columns],
                summary_ranges=summary_ranges,
                source_ranges=source_ranges,
            )
        )
    return ItemDecisions(item=item, task=task, raters=raters, units=units, columns=columns, whole=None)


def whole_item(*, item: StudyItem, task: TaskDefinition, final: FinalLabel | None) -> WholeItem:
    """A span or edit task's item as the adjudicator decides it (WholeItem)."""
    text = item.summary.text
    markings = item_markings(item=item).get(item.pk, {})
    if task.spans:
        spans = typed_majority_spans(text, [m.spans for m in markings.values()], task.values).spans
        label, data = spans_decision(text, spans)
        majority = {"label": label, "data": data}
    else:
        auto = automatic_marking(task, text, markings)
        majority = {"label": auto.label, "data": auto.data}
    counts = Counter(marking.key() for marking in markings.values())
    return WholeItem(
        markings=markings,
        majority=majority,
        final=final_state(final),
        words=word_spans(text),
        n_agreeing=max(counts.values(), default=0),
    )


def adjudication_item(*, item: StudyItem, user: User, queue: Queue) -> AdjudicationItem:
    """The item's decisions, the evidence (the inspector's view of its summary) and its neighbours in the
    queue."""
    ids = queue.item_ids
    position = ids.index(item.pk) if item.pk in ids else None
    return AdjudicationItem(
        **vars(item_decisions(item=item)),
        inspection=summary_inspection(summary_id=item.summary_id, user=user),
        position=position,
        previous_id=ids[position - 1] if position else None,
        next_id=ids[position + 1] if position is not None and position + 1 < len(ids) else None,
        n_queue=len(ids),
    )
