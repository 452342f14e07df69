"""Reads for the analyses: labels per unit, scores per summary, pairs, highlights; and the analyses on them.

The math lives in stats (no Django); these functions fetch what it needs with a fixed
number of queries (streamed where the rows can run into the millions) and hand it over.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db.models import Count, F, FilteredRelation, FloatField, Max, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from accounts.selectors import model_rater_accounts
from corpus.models import Dataset, HumanScore, MetricScore, Summary
from corpus.selectors import primary_human_score
from protocols.tasks import TASKS, TaskDefinition, get_task
from scoring.models import Explanation
from stats import correlation as corr
from stats.agreement import (
    LEVELS,
    AnnotatorAgreement,
    CodedLabels,
    FleissKappa,
    ItemAgreement,
    Value,
    add_outcomes,
    annotator_agreement_rows,
    annotator_agreements,
    annotator_outcomes,
    fleiss_kappa,
    item_agreements,
    krippendorff_alpha,
    majority_label,
    percent_agreement,
)
from stats.crowd_quality import CrowdJudgement, labels_aggregate
from stats.enhanced import (
    AGGREGATED,
    AGGREGATIONS,
    ENHANCED_TASKS,
    FINAL,
    VARIANTS,
    EnhancedRow,
    enhanced_score,
    enhanced_table,
)
from stats.metaeval import MetaEvaluation, PairGroup, meta_evaluate, meta_evaluate_by_type
from stats.spans import (
    ANY_SPAN,
    FAITHFUL,
    HALLUCINATED,
    NO_SPAN,
    HighlightSummary,
    Span,
    highlighter_scores,
    summary_labels,
    word_labels,
)
from stats.tally import LabelTally, coded_tally, tally_fleiss_kappa
from studies.models import AgreementTally, Assignment, FinalLabel, Judgement, Study, StudyItem, StudyTask
from studies.selectors.access import studies_readable
from studies.selectors.participation import ACCEPTED, JUDGEMENT_SETS, counted, excluded_annotator_ids
from studies.selectors.studies import TaskProgress, study_task_progress
from studies.selectors.tallies import (
    DONT_KNOW_AS_INCORRECT,
    MIN_OTHER_RATERS,
    TALLY_MAX_AGE,
    tallied_task,
    tally_current,
    tally_variant,
)
from studies.services.tallies import agreement_tally_store

COEFFICIENTS = ("fleiss", "krippendorff", "percent")
SPAN_UNITS = ("word", "summary")
# Separates a computed metric from one of its score variants: "bertscore.f1" is scores["f1"].
VARIANT_SEPARATOR = "."


class AnalysisError(ValueError):
    """A request the data cannot answer (unknown name, wrong level for the task); the message says why."""


# --- which judgements -------------------------------------------------------------------------------


def study_task_get(*, task: str, study: Study | None = None, dataset: Dataset | None = None) -> StudyTask:
    """A study's task, or the task of a dataset's imported judgements."""
    if study is not None:
        tasks = StudyTask.objects.filter(study=study)
        owner = f"study {study.pk}"
    elif dataset is not None:
        tasks = StudyTask.objects.filter(study__dataset=dataset, study__kind=Study.Kind.IMPORTED)
        owner = f"the imported judgements of dataset {dataset.name!r}"
    else:
        raise AnalysisError("give a study or a dataset")
    found = tasks.filter(task=task).select_related("study__dataset").first()
    if found is None:
        known = ", ".join(sorted(tasks.values_list("task", flat=True))) or "none"
        raise AnalysisError(f"no task {task!r} in {owner} (tasks: {known})")
    return found


# The one place the analyses read submitted work: every analysis of a study's judgements reads it through
# these two, which leave excluded annotators' work out unless `judgements` is "all"
# (studies.selectors.participation.counted).


def without_checks(queryset: QuerySet[Any], *, assignment: str = "") -> QuerySet[Any]:
    """`queryset` (of assignments, or of rows reaching one through `assignment`) without the attention checks
    a public study mixes into its queue (crowd.models.CrowdCheck): they are items of the study, but their
    labels test the worker and are no data (their outcomes are on the worker quality page)."""
    return queryset.filter(**{f"{assignment}item__crowd_check__isnull": True})


def submitted_assignments(
    *, study_task: StudyTask | None = None, study: Study | None = None, judgements: str = ACCEPTED
) -> QuerySet[Assignment]:
    """The submitted assignments of a study task (or of a whole study) that the analyses count."""
    assignments = Assignment.objects.filter(status=Assignment.Status.SUBMITTED)
    if study_task is not None:
        assignments = assignments.filter(item__study_task=study_task)
    if study is not None:
        assignments = assignments.filter(item__study_task__study=study)
    return counted(without_checks(assignments), judgements=judgements)


def submitted_judgements(
    *, study_task: StudyTask | None = None, study: Study | None = None, judgements: str = ACCEPTED
) -> QuerySet[Judgement]:
    """The judgements of those assignments."""
    rows = Judgement.objects.filter(assignment__status=Assignment.Status.SUBMITTED)
    if study_task is not None:
        rows = rows.filter(assignment__item__study_task=study_task)
    if study is not None:
        rows = rows.filter(assignment__item__study_task__study=study)
    return counted(without_checks(rows, assignment="assignment__"), judgements=judgements, assignment="assignment__")


# --- labels per unit --------------------------------------------------------------------------------

# unit -> annotator -> label. A unit is an item id, or (item id, unit index) for units inside an item: the
# key is Any so that the builders' own key types (int, tuple[int, int]) fit without copying.
Labelled = dict[Any, dict[str, str]]


def _label_rows(study_task: StudyTask, judgements: str = ACCEPTED) -> QuerySet[Judgement, tuple[int, int, str, str]]:
    """(item id, unit index, annotator, label) of each judgement of the task's submitted assignments that the
    analyses count (`judgements`: accepted work only, or all)."""
    return submitted_judgements(study_task=study_task, judgements=judgements).values_list(
        "assignment__item_id", "unit_index", "assignment__annotator__username", "label"
    )


def unit_labels(
    *, study_task: StudyTask, label_map: dict[str, str] | None = None, judgements: str = ACCEPTED
) -> Labelled:
    """(item id, unit index) -> annotator -> label, from submitted assignments (streamed)."""
    labelled: dict[Hashable, dict[str, str]] = defaultdict(dict)
    rows = _label_rows(study_task, judgements)
    mapping = label_map or {}
    # One string object per distinct name and label, not one per row: a million rows hold a few strings.
    strings: dict[str, str] = {}
    for item_id, unit_index, annotator, label in rows.iterator(chunk_size=10000):
        label = mapping.get(label, label)
        labelled[(item_id, unit_index)][strings.setdefault(annotator, annotator)] = strings.setdefault(label, label)
    return dict(labelled)


def coded_unit_labels(
    *, study_task: StudyTask, label_map: dict[str, str] | None = None, judgements: str = ACCEPTED
) -> CodedLabels:
    """unit_labels as arrays (stats.agreement.CodedLabels): the same labels, units numbered in the order
    unit_labels lists them (the order the rows arrive), annotators and labels in order of appearance. For
    hundreds of thousands of judgements: one query, a few passes over its rows, no dict per unit."""
    rows = list(_label_rows(study_task, judgements))
    count = len(rows)
    items = np.fromiter((row[0] for row in rows), dtype=np.int64, count=count)
    indexes = np.fromiter((row[1] for row in rows), dtype=np.int64, count=count)
    annotators: dict[str, int] = {}
    annotator = np.fromiter((annotators.setdefault(row[2], len(annotators)) for row in rows), np.int64, count)
    raw_labels: dict[str, int] = {}
    raw = np.fromiter((raw_labels.setdefault(row[3], len(raw_labels)) for row in rows), np.int64, count)
    mapping = label_map or {}
    mapped = [mapping.get(label, label) for label in raw_labels]
    labels: list[Value] = list(dict.fromkeys(mapped))
    label = np.array([labels.index(value) for value in mapped], dtype=np.int64)[raw]
    keys = items * (int(indexes.max(initial=0)) + 1) + indexes
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # units numbered by their first row
    return CodedLabels(
        unit=rank[inverse.ravel()],
        annotator=annotator,
        label=label,
        n_units=int(first.size),
        annotators=list(annotators),
        labels=labels,
    )


# The human reference "final labels": each unit's final label (studies.models.FinalLabel, adjudication).
FINAL_LABELS = "final"


def final_unit_labels(*, study_task: StudyTask, label_map: dict[str, str] | None = None) -> dict[Hashable, str | None]:
    """(item id, unit index) -> the unit's final label (None while unresolved), keyed like unit_labels."""
    mapping = label_map or {}
    rows = FinalLabel.objects.filter(item__study_task=study_task).values_list("item_id", "unit_index", "label")
    return {
        (item_id, unit_index): mapping.get(label, label) if label else None
        for item_id, unit_index, label in rows.iterator(chunk_size=10000)
    }


@dataclass(frozen=True)
class Markings:
    summary_id: int
    text: str
    spans: dict[str, list[Span]]  # annotator -> spans; an annotator who marked nothing has []


def span_markings(*, study_task: StudyTask, judgements: str = ACCEPTED) -> dict[int, Markings]:
    """item id -> the summary and every annotator's spans, from submitted assignments."""
    items: dict[int, Markings] = {}
    assignments = submitted_assignments(study_task=study_task, judgements=judgements)
    for item_id, annotator, summary_id, text in assignments.values_list(
        "item_id", "annotator__username", "item__summary_id", "item__summary__text"
    ).iterator(chunk_size=10000):
        items.setdefault(item_id, Markings(summary_id, text, {})).spans[annotator] = []
    spans = (
        submitted_judgements(study_task=study_task, judgements=judgements)
        .filter(start__isnull=False, end__isnull=False)
        .values_list("assignment__item_id", "assignment__annotator__username", "start", "end")
    )
    # start and end are filtered non-null.
    rows = cast("Iterator[tuple[int, str, int, int]]", spans.iterator(chunk_size=10000))
    for item_id, annotator, start, end in rows:
        items[item_id].spans[annotator].append((start, end))
    return items


def task_labels(
    *,
    study_task: StudyTask,
    dont_know_as_incorrect: bool = False,
    span_units: Iterable[str] = ("word",),
    judgements: str = ACCEPTED,
) -> tuple[TaskDefinition, dict[str, Labelled]]:
    """The labels agreement is computed on, fetched once: {"unit": ...} for judged units; for span tasks
    {"word": ..., "summary": ...} (each summary word hallucinated or not, each summary any span or not)."""
    task = get_task(study_task.task)
    if task.spans:
        units = list(span_units)
        for unit in units:
            if unit not in SPAN_UNITS:
                raise AnalysisError(f"span unit must be one of {', '.join(SPAN_UNITS)}")
        markings = {
            item: (m.text, m.spans) for item, m in span_markings(study_task=study_task, judgements=judgements).items()
        }
        return task, {
            unit: dict(word_labels(markings)) if unit == "word" else dict(summary_labels(markings)) for unit in units
        }
    label_map = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
    return task, {"unit": unit_labels(study_task=study_task, label_map=label_map, judgements=judgements)}


# --- agreement --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementReport:
    study_task: StudyTask
    coefficient: str
    result: Any  # FleissKappa, KrippendorffAlpha or PercentAgreement
    span_unit: str | None
    dont_know_as_incorrect: bool
    judgements: str = ACCEPTED

    def as_dict(self) -> dict[str, object]:
        return {
            "study": self.study_task.study_id,
            "dataset": self.study_task.study.dataset.name,
            "task": self.study_task.task,
            "judgements": self.judgements,
            "dont_know_as_incorrect": self.dont_know_as_incorrect,
            "span_unit": self.span_unit,
            **self.result.as_dict(),
        }


def _numeric_values(task: TaskDefinition, labelled: Labelled, level: str) -> dict[Hashable, list[float | None]]:
    if all(choice.numeric is None for choice in task.choices):
        raise AnalysisError(
            f"the {level} level needs labels on a numeric scale; the labels of task {task.key!r} "
            f"({', '.join(task.values)}) are categories: use --level nominal"
        )
    return {unit: [task.numeric(label) for label in labels.values()] for unit, labels in labelled.items()}


def agreement_of(task: TaskDefinition, labelled: Labelled, coefficient: str, level: str = "nominal") -> Any:
    """One coefficient over labels already fetched: FleissKappa, KrippendorffAlpha or PercentAgreement."""
    if coefficient not in COEFFICIENTS:
        raise AnalysisError(f"coefficient must be one of {', '.join(COEFFICIENTS)}")
    if level not in LEVELS:
        raise AnalysisError(f"level must be one of {', '.join(LEVELS)}")
    ratings = {unit: list(labels.values()) for unit, labels in labelled.items()}
    if coefficient == "fleiss":
        return fleiss_kappa(ratings)
    if coefficient == "percent":
        return percent_agreement(ratings)
    if task.spans and level != "nominal":
        raise AnalysisError(f"span tasks have nominal labels (hallucinated or not): the {level} level does not apply")
    if level == "nominal":
        return krippendorff_alpha(ratings, "nominal")
    return krippendorff_alpha(_numeric_values(task, labelled, level), level)


def agreement_compute(
    *,
    study_task: StudyTask,
    coefficient: str = "fleiss",
    level: str = "nominal",
    dont_know_as_incorrect: bool = False,
    span_unit: str = "word",
    judgements: str = ACCEPTED,
) -> AgreementReport:
    task, labels = task_labels(
        study_task=study_task,
        dont_know_as_incorrect=dont_know_as_incorrect,
        span_units=[span_unit],
        judgements=judgements,
    )
    result = agreement_of(task, next(iter(labels.values())), coefficient, level)
    span = span_unit if task.spans else None
    return AgreementReport(study_task, coefficient, result, span, dont_know_as_incorrect, judgements)


@dataclass(frozen=True)
class ItemRow:
    item_id: int
    unit: int | None  # None for span tasks, whose rows are whole summaries
    agreement: ItemAgreement
    summary_id: int | None = None  # for the link to the inspector
    unit_text: str = ""  # the word, sentence or question judged


@dataclass(frozen=True)
class AgreementTables:
    items: list[ItemRow]
    annotators: list[AnnotatorAgreement]
    n_items: int  # units rated by two or more annotators (the only ones that can disagree)
    n_single: int = 0  # units rated by one annotator so far, left out of the list


def _item_rows(task: TaskDefinition, labelled: Labelled, limit: int) -> tuple[list[ItemRow], int, int]:
    """The `limit` most disagreed units rated by two or more annotators, how many such units there are,
    and how many units only one annotator rated (one label cannot disagree with anything)."""
    items = item_agreements(labelled, task.numeric if task.ordinal else None)
    shared = [row for row in items if sum(label is not None for label in row.labels.values()) >= 2]
    rows = [
        # Unit keys are item ids, or (item id, unit index) tuples.
        ItemRow(row.item[0], row.item[1], row) if isinstance(row.item, tuple) else ItemRow(row.item, None, row)  # type: ignore[arg-type]
        for row in shared[:limit]
    ]
    return rows, len(shared), len(items) - len(shared)


def _with_summaries_and_unit_texts(rows: list[ItemRow]) -> list[ItemRow]:
    """Each row with its summary (for the inspector link) and the text of its unit, in one query."""
    items = {row.item_id for row in rows}
    if any(row.unit is None for row in rows):
        summaries = dict(StudyItem.objects.filter(pk__in=items).values_list("pk", "summary_id"))
        return [replace(row, summary_id=summaries.get(row.item_id)) for row in rows]
    found = Judgement.objects.filter(assignment__item__in=items).values_list(
        "assignment__item_id", "assignment__item__summary_id", "unit_index", "unit_text"
    )
    summaries = {}
    texts: dict[tuple[int, int | None], str] = {}
    for item_id, summary_id, unit_index, unit_text in found.order_by():
        summaries[item_id] = summary_id
        texts[(item_id, unit_index)] = unit_text
    return [
        replace(row, summary_id=summaries.get(row.item_id), unit_text=texts.get((row.item_id, row.unit), ""))
        for row in rows
    ]


@dataclass(frozen=True)
class AgreementOverview:
    """Everything the analysis pages show about one task's agreement, from one fetch of its labels."""

    study_task: StudyTask
    definition: TaskDefinition
    results: list[dict[str, Any]]  # coefficient, level and the result's fields
    tables: AgreementTables
    undefined_reason: str = ""  # why no coefficient applies to the task at all (then `results` is empty)
    fewest_raters: int | None = None  # the fewest annotators any judged unit has, when fewer than the study's k
    annotators_per_item: int = 0  # the study's k
    # Raters that are LLM judges (judges app): in every coefficient and table, but never counted as people.
    model_raters: tuple[str, ...] = ()
    judgements: str = ACCEPTED  # which judgements it was computed on (studies.selectors.participation)


# Each BUMP annotator writes their own edit of a reference summary for an error type the study asked for;
# two edits are not two ratings of one thing, so there is nothing for a coefficient to compare.
EDIT_AGREEMENT_UNDEFINED = (
    "Agreement is undefined for this task: each annotator writes their own minimal edit for an error type the "
    "study assigned, so no two annotators rate the same thing."
)


def _fewest_raters(labelled: Labelled, annotators_per_item: int, models: Iterable[str] = ()) -> int | None:
    """The fewest people any judged unit has (model raters do not count towards k), when fewer than k."""
    models = set(models)
    counts = [
        sum(label is not None for name, label in labels.items() if name not in models) for labels in labelled.values()
    ]
    fewest = min((count for count in counts if count), default=None)
    return fewest if fewest is not None and fewest < annotators_per_item else None


def agreement_overview(
    *, study_task: StudyTask, dont_know_as_incorrect: bool = False, limit: int = 50, judgements: str = ACCEPTED
) -> AgreementOverview:
    """Every coefficient that applies to the task; the per-annotator table and the `limit` most disagreed
    units (span tasks: coefficients per word, tables per summary)."""
    task, labels = task_labels(
        study_task=study_task,
        dont_know_as_incorrect=dont_know_as_incorrect,
        span_units=SPAN_UNITS,
        judgements=judgements,
    )
    coefficient_labels = labels["word"] if task.spans else labels["unit"]
    table_labels = labels["summary"] if task.spans else labels["unit"]
    k = study_task.study.annotators_per_item
    if task.edit:
        tables = AgreementTables([], annotator_agreements({}), 0, 0)
        return AgreementOverview(study_task, task, [], tables, EDIT_AGREEMENT_UNDEFINED, None, k, judgements=judgements)
    models = model_rater_names(study_task=study_task)
    requests = [("fleiss", "nominal"), ("krippendorff", "nominal"), ("percent", "nominal")]
    if not task.spans and any(choice.numeric is not None for choice in task.choices):
        requests += [("krippendorff", "ordinal"), ("krippendorff", "interval")]
    results = [
        {
            "coefficient": coefficient,
            "level": level if coefficient == "krippendorff" else "",
            **vars(agreement_of(task, coefficient_labels, coefficient, level)),
        }
        for coefficient, level in requests
    ]
    rows, n_items, n_single = _item_rows(task, table_labels, limit)
    tables = AgreementTables(
        _with_summaries_and_unit_texts(rows), annotator_agreements(table_labels), n_items, n_single
    )
    fewest = _fewest_raters(table_labels, k, models)
    return AgreementOverview(study_task, task, results, tables, "", fewest, k, models, judgements)


def model_rater_names(*, study_task: StudyTask) -> tuple[str, ...]:
    """The usernames of the LLM judges (judges app) with work in the task, in order. Imported judgements have
    none (judges.services refuses them): no query for them."""
    if study_task.study.kind != Study.Kind.STUDY:
        return ()
    rows = (
        Assignment.objects.filter(item__study_task=study_task, annotator__in=model_rater_accounts().values("pk"))
        .order_by("annotator__username")
        .values_list("annotator__username", flat=True)
        .distinct()
    )
    return tuple(rows)


def labels_table(
    task: TaskDefinition, annotators: Iterable[str], judgements: Iterable[tuple[str, int, str, str]]
) -> dict[str, dict[str, str]]:
    """unit (its number and text) -> annotator -> label, from (annotator, unit index, unit text, label) in
    unit order. For span tasks a single row lists each annotator's spans ("none" when nothing was marked)."""
    if task.spans:
        marked: dict[str, list[str]] = {name: [] for name in annotators}
        for name, _, unit_text, label in judgements:
            marked[name].append(f"“{unit_text}” ({label})")
        return {"marked spans": {name: "; ".join(spans) or "none" for name, spans in marked.items()}}
    rows: dict[str, dict[str, str]] = {}
    for name, unit_index, unit_text, label in judgements:
        unit = f"{unit_index}: {unit_text}" if unit_text else str(unit_index)
        rows.setdefault(unit, {})[name] = label
    return rows


def item_labels(*, item: StudyItem, judgements: str = ACCEPTED) -> dict[str, dict[str, str]]:
    """One item's labels: unit -> annotator -> label (see labels_table)."""
    assignments = submitted_assignments(study_task=item.study_task, judgements=judgements).filter(item=item)
    names = dict(assignments.values_list("pk", "annotator__username"))
    labelled = (
        Judgement.objects.filter(assignment__in=list(names))
        .order_by("unit_index", "assignment_id")
        .values_list("assignment_id", "unit_index", "unit_text", "label")
    )
    rows = ((names[assignment], index, text, label) for assignment, index, text, label in labelled)
    return labels_table(get_task(item.study_task.task), names.values(), rows)


# --- scores per summary -----------------------------------------------------------------------------


def dataset_summaries(*, dataset: Dataset) -> list[tuple[int, str]]:
    """(summary id, system) of every summary of the dataset."""
    return list(
        Summary.objects.filter(document__dataset=dataset)
        .order_by("document__external_id", "external_id")
        .values_list("id", "system")
    )


def summary_documents(*, dataset: Dataset) -> dict[int, int]:
    """summary id -> its document id, for the document-level correlation."""
    return dict(Summary.objects.filter(document__dataset=dataset).values_list("id", "document_id").order_by())


def human_names(*, dataset: Dataset) -> list[str]:
    return sorted(
        HumanScore.objects.filter(summary__document__dataset=dataset)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )


@dataclass(frozen=True)
class HumanScoreChoices:
    names: list[str]
    primary: str | None


def human_score_choices(*, dataset: Dataset) -> HumanScoreChoices:
    """The dataset's human score names and the one every analysis dropdown starts with (one query)."""
    counts = dict(
        HumanScore.objects.filter(summary__document__dataset=dataset)
        .values("name")
        .annotate(n=Count("id"))
        .order_by("name")
        .values_list("name", "n")
    )
    return HumanScoreChoices(names=sorted(counts), primary=primary_human_score(counts, dataset.primary_human_score))


def _newest_configs(dataset: Dataset) -> dict[str, str]:
    """metric -> config hash of its most recent explanation in the dataset."""
    rows = (
        Explanation.objects.filter(summary__document__dataset=dataset)
        .values("metric", "config_hash")
        .annotate(newest=Max("created_at"))
        .order_by("metric", "newest")
    )
    return {row["metric"]: row["config_hash"] for row in rows}


def metric_names(*, dataset: Dataset) -> list[str]:
    """Imported metric names, then computed ones: "<metric>" and "<metric>.<variant>" for each score variant."""
    imported = sorted(
        MetricScore.objects.filter(summary__document__dataset=dataset)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )
    computed = []
    for metric, digest in sorted(_newest_configs(dataset).items()):
        computed.append(metric)
        sample = (
            Explanation.objects.filter(summary__document__dataset=dataset, metric=metric, config_hash=digest)
            .exclude(scores={})
            .values_list("scores", flat=True)
            .first()
        )
        computed += [f"{metric}{VARIANT_SEPARATOR}{variant}" for variant in sorted(sample or {})]
    return imported + [name for name in computed if name not in imported]


def metric_values(*, dataset: Dataset, name: str, summary_ids: Iterable[int] | None = None) -> dict[int, float | None]:
    """summary id -> the metric's score, for the summaries that have one (a computed explanation that failed
    gives None). An imported MetricScore of that name wins; otherwise the name is a computed metric
    ("bertscore", its headline score) or one of its variants ("bertscore.f1"), read from the dataset's most
    recent configuration of that metric (the rule of summaries_with_metric_score, which this reads through)."""
    summaries = Summary.objects.filter(document__dataset=dataset)
    if summary_ids is not None:
        summaries = summaries.filter(pk__in=list(summary_ids))
    scored = summaries_with_metric_score(summaries, dataset=dataset, name=name, alias="value")
    # value_row and value are the aliases summaries_with_metric_score adds, which django-stubs cannot follow.
    return dict(scored.filter(value_row__isnull=False).values_list("pk", "value"))  # type: ignore[misc]


def summaries_with_metric_score(
    summaries: QuerySet[Summary], *, dataset: Dataset, name: str, alias: str = "metric_value"
) -> QuerySet[Summary]:
    """`summaries` annotated with `alias`, the metric score `metric_values` reads, by the same rule: an imported
    MetricScore of that name wins, otherwise the computed metric or variant of the dataset's most recent
    configuration. A join on a unique key (one row per summary at most), so the database filters and sorts
    100,000 summaries by it in one pass."""
    joined = f"{alias}_row"
    if MetricScore.objects.filter(summary__document__dataset=dataset, name=name).exists():
        imported = FilteredRelation("metric_scores", condition=Q(metric_scores__name=name))
        summaries = summaries.annotate(**{joined: imported})
        return summaries.annotate(**{alias: F(f"{joined}__value")})
    configs = _newest_configs(dataset)
    metric, _, variant = name.partition(VARIANT_SEPARATOR)
    scored = Explanation.objects.filter(
        summary__document__dataset=dataset, metric=metric, config_hash=configs.get(metric)
    )
    if metric not in configs or (variant and not scored.filter(scores__has_key=variant).exists()):
        known = ", ".join(metric_names(dataset=dataset)) or "none"
        raise AnalysisError(f"no metric {name!r} in dataset {dataset.name!r} (metrics: {known})")
    condition = Q(explanations__metric=metric, explanations__config_hash=configs[metric])
    summaries = summaries.annotate(**{joined: FilteredRelation("explanations", condition=condition)})
    value = Cast(KeyTextTransform(variant, f"{joined}__scores"), FloatField()) if variant else F(f"{joined}__score")
    return summaries.annotate(**{alias: value})


def summaries_with_human_score(
    summaries: QuerySet[Summary], *, dataset: Dataset, name: str, alias: str = "human_value"
) -> QuerySet[Summary]:
    """`summaries` annotated with `alias`, the imported human score `name` (see summaries_with_metric_score)."""
    if not HumanScore.objects.filter(summary__document__dataset=dataset, name=name).exists():
        known = ", ".join(human_names(dataset=dataset)) or "none"
        raise AnalysisError(f"no human score {name!r} in dataset {dataset.name!r} (human scores: {known})")
    joined = f"{alias}_row"
    summaries = summaries.annotate(**{joined: FilteredRelation("human_scores", condition=Q(human_scores__name=name))})
    return summaries.annotate(**{alias: F(f"{joined}__value")})


# A human score from a study's own judgements: "study:<study id>:<task>". Per summary, the mean over the
# item's units of the numeric value of each unit's reference label, the `gold`: the majority of the
# annotators' labels (a tie has none) or the unit's final label (studies.models.FinalLabel; unresolved or not
# yet computed: none). A span task's unit is the whole summary: faithful 1, hallucinated 0 (majority: most
# annotators marked no span / some span; final: the adjudicated or automatic decision). Units without a
# reference are left out and counted; a summary with none left has no score.
STUDY_HUMAN_PREFIX = "study:"
MAJORITY_GOLD = "majority"
GOLDS = (MAJORITY_GOLD, FINAL_LABELS)
SPAN_VERDICTS = {NO_SPAN: 1.0, ANY_SPAN: 0.0, FAITHFUL: 1.0, HALLUCINATED: 0.0}


@dataclass(frozen=True)
class HumanSide:
    """The human side of a comparison: summary id -> score, and for a study's judgements which gold it was
    taken from and how many judged units had no reference label (left out)."""

    values: dict[int, float]
    gold: str = ""  # "" for an imported human score
    n_units: int = 0
    n_left_out: int = 0


def _scored_task(task: TaskDefinition) -> bool:
    return task.spans or (not task.edit and any(choice.numeric is not None for choice in task.choices))


def study_human_names(*, dataset: Dataset, user: User | None) -> list[str]:
    """The "study:<id>:<task>" human scores of the dataset: the tasks with a numeric or span verdict of the
    annotation studies the user may read."""
    tasks = StudyTask.objects.filter(
        study__in=studies_readable(user=user), study__dataset=dataset, study__kind=Study.Kind.STUDY
    ).order_by("study_id", "task")
    return [
        f"{STUDY_HUMAN_PREFIX}{study_id}:{key}"
        for study_id, key in tasks.values_list("study_id", "task")
        if key in TASKS and _scored_task(get_task(key))
    ]


def human_side(*, dataset: Dataset, name: str, gold: str = MAJORITY_GOLD, user: User | None = None) -> HumanSide:
    """The human score `name` (imported, or "study:<id>:<task>" from a study the user may read, with `gold`)."""
    if not name.startswith(STUDY_HUMAN_PREFIX):
        return HumanSide(human_values(dataset=dataset, name=name))
    if gold not in GOLDS:
        raise AnalysisError(f"gold must be one of {', '.join(GOLDS)}, got {gold!r}")
    if name not in study_human_names(dataset=dataset, user=user):
        raise AnalysisError(f"no study human score {name!r} in dataset {dataset.name!r} that you can read")
    study_id, _, key = name.removeprefix(STUDY_HUMAN_PREFIX).partition(":")
    study_task = StudyTask.objects.select_related("study").get(study_id=int(study_id), task=key)
    task = get_task(key)
    summaries = dict(StudyItem.objects.filter(study_task=study_task).values_list("pk", "summary_id"))
    references: dict[Hashable, float | None] = {}
    if task.spans:
        units: dict[Any, Any] = summary_labels(
            {item: (m.text, m.spans) for item, m in span_markings(study_task=study_task).items()}
        )
        if gold == FINAL_LABELS:
            finals = final_unit_labels(study_task=study_task)
            references = {item: SPAN_VERDICTS.get(finals.get((item, 0)) or "") for item in units}
        else:
            references = {item: SPAN_VERDICTS.get(str(majority_label(by.values()))) for item, by in units.items()}
    else:
        units = unit_labels(study_task=study_task)
        if gold == FINAL_LABELS:
            finals = final_unit_labels(study_task=study_task)
            references = {unit: task.numeric(finals.get(unit) or "") for unit in units}
        else:
            majorities = {unit: majority_label(by.values()) for unit, by in units.items()}
            references = {
                unit: task.numeric(str(label)) if label is not None else None for unit, label in majorities.items()
            }
    per_summary: dict[int, list[float]] = defaultdict(list)
    for unit, value in references.items():
        # Label tasks' units are (item id, unit index); a span task's unit is its item id.
        item_id: int = unit[0] if isinstance(unit, tuple) else cast(int, unit)
        if value is not None:
            per_summary[summaries[item_id]].append(value)
    values = {summary_id: sum(found) / len(found) for summary_id, found in per_summary.items()}
    left_out = sum(value is None for value in references.values())
    return HumanSide(values, gold, len(references), left_out)


def human_values(*, dataset: Dataset, name: str, summary_ids: Iterable[int] | None = None) -> dict[int, float]:
    scores = HumanScore.objects.filter(summary__document__dataset=dataset, name=name)
    if summary_ids is not None:
        scores = scores.filter(summary_id__in=summary_ids)
    values = dict(scores.values_list("summary_id", "value"))
    if not values and summary_ids is None:
        known = ", ".join(human_names(dataset=dataset)) or "none"
        raise AnalysisError(f"no human score {name!r} in dataset {dataset.name!r} (human scores: {known})")
    return values


# --- correlations -----------------------------------------------------------------------------------


def aligned(
    metric: dict[int, float | None], human: dict[int, float], systems: dict[int, str]
) -> tuple[list[float | None], list[float | None], list[str], list[int]]:
    """Metric and human scores over the summaries that have at least one of them (the others are not
    "missing", they are simply not part of this comparison)."""
    ids = sorted(set(metric) | set(human))
    return [metric.get(i) for i in ids], [human.get(i) for i in ids], [systems[i] for i in ids], ids


def dataset_correlations(
    *,
    dataset: Dataset,
    human: str,
    metrics: list[str] | None = None,
    methods: Iterable[str] = ("pearson",),
    level: str = "summary",
    partial_by: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    gold: str = MAJORITY_GOLD,
    user: User | None = None,
) -> list[dict[str, object]]:
    """One row per metric and method: r, p, n, the bootstrap CI and how many summaries lacked a score. A
    study's judgements as the human side ("study:<id>:<task>", see human_side): by their majority or by the
    final labels (`gold`); each row says how many judged units had no reference label and were left out."""
    methods = list(methods)
    for method in methods:
        if method not in corr.METHODS:
            raise AnalysisError(f"method must be one of {', '.join(corr.METHODS)}")
    if level not in corr.LEVELS:
        raise AnalysisError(f"level must be one of {', '.join(corr.LEVELS)}")
    if partial_by not in (None, "system"):
        raise AnalysisError("only --partial-by system is supported")
    if partial_by and level != "summary":
        raise AnalysisError("a partial correlation controlling for the system needs summary level")
    side = human_side(dataset=dataset, name=human, gold=gold, user=user)
    human_scores = side.values
    names = metrics or metric_names(dataset=dataset)
    systems = dict(dataset_summaries(dataset=dataset))
    documents = summary_documents(dataset=dataset) if level == corr.DOCUMENT_LEVEL else {}
    rows = []
    for name in names:
        xs, ys, groups, ids = aligned(metric_values(dataset=dataset, name=name), human_scores, systems)
        for method in methods:
            if level == "system":
                result = corr.correlate_systems(xs, ys, groups, method=method, bootstrap=bootstrap, seed=seed)
            elif level == corr.DOCUMENT_LEVEL:
                result = corr.correlate_documents(
                    xs, ys, [documents[i] for i in ids], method=method, bootstrap=bootstrap, seed=seed
                )
            else:
                result = corr.correlate(
                    xs,
                    ys,
                    method=method,
                    bootstrap=bootstrap,
                    seed=seed,
                    partial_groups=groups if partial_by else None,
                    partial_by=partial_by or "system",
                )
            reference = {"gold": side.gold, "n_units": side.n_units, "n_left_out": side.n_left_out}
            rows.append({"metric": name, "human": human, **reference, **result.as_dict()})
    return rows


@dataclass(frozen=True)
class ScorePairs:
    """Metric and human score of the summaries that have both, for the plots."""

    metric: list[float]
    human: list[float]
    titles: list[str]


def score_pairs(
    *,
    dataset: Dataset,
    metric: str,
    human: str,
    limit: int = 3000,
    gold: str = MAJORITY_GOLD,
    user: User | None = None,
) -> ScorePairs:
    metric_scores = metric_values(dataset=dataset, name=metric)
    human_scores = human_side(dataset=dataset, name=human, gold=gold, user=user).values
    ids = sorted(i for i in set(metric_scores) & set(human_scores) if metric_scores[i] is not None)[:limit]
    titles = dict(Summary.objects.filter(pk__in=ids).values_list("pk", "document__external_id").order_by())
    systems = dict(dataset_summaries(dataset=dataset))
    return ScorePairs(
        # ids holds only the summaries with both scores.
        [float(metric_scores[i]) for i in ids],  # type: ignore[arg-type]
        [human_scores[i] for i in ids],
        [f"{titles[i]} / {systems[i]}" for i in ids],
    )


# --- human-enhanced metrics -------------------------------------------------------------------------


def _enhanced_rows(
    study: Study, summary_ids: Iterable[int] | None, judgements: str
) -> Iterator[tuple[str, int, int, int, str, int]]:
    """(task, item id, summary id, unit index, label, annotator id) of the study's enhanceable tasks, streamed."""
    rows = submitted_judgements(study=study, judgements=judgements).filter(
        assignment__item__study_task__task__in=ENHANCED_TASKS
    )
    if summary_ids is not None:
        rows = rows.filter(assignment__item__summary_id__in=list(summary_ids))
    return (
        rows.order_by()
        .values_list(
            "assignment__item__study_task__task",
            "assignment__item_id",
            "assignment__item__summary_id",
            "unit_index",
            "label",
            "assignment__annotator_id",
        )
        .iterator(chunk_size=10000)
    )


def study_enhanced_scores(
    *,
    study: Study,
    dont_know_as_incorrect: bool = True,
    summary_ids: Iterable[int] | None = None,
    judgements: str = ACCEPTED,
    crowd_model: str | None = None,
    max_modelled_judgements: int | None = None,
) -> dict[tuple[str, str], dict[int, float | None]]:
    """(task, aggregation) -> summary id -> human-enhanced score. "Don't know" counts as incorrect, as in
    the thesis (footnote 4), unless told otherwise; then it is left out like a missing label. With a
    `crowd_model` (stats.crowd_quality.METHODS) also the variant "aggregated": each unit's label as that
    model aggregates the annotators' labels of the task (a tie: no value for the unit), over at most
    `max_modelled_judgements` judgements a task (AnalysisError beyond: the web's limit)."""
    units: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    summary_of: dict[int, int] = {}
    rows = _enhanced_rows(study, summary_ids, judgements)
    label_map = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else {}
    crowd: dict[str, list[CrowdJudgement]] = defaultdict(list)
    for task_key, item_id, summary_id, unit_index, label, annotator_id in rows:
        mapped = label_map.get(label, label)
        value = get_task(task_key).numeric(mapped)
        summary_of[item_id] = summary_id
        bucket = units[(task_key, item_id)][unit_index]
        if value is not None:
            bucket.append(value)
            if crowd_model is not None:
                crowd[task_key].append(CrowdJudgement(str(annotator_id), (item_id, unit_index), mapped))
    scores: dict[tuple[str, str], dict[int, float | None]] = defaultdict(dict)
    for (task_key, item_id), by_unit in units.items():
        for aggregation in AGGREGATIONS:
            scores[(task_key, aggregation)][summary_of[item_id]] = enhanced_score(task_key, by_unit, aggregation)
    for (task_key, summary_id), by_unit in _final_units(study, summary_ids, label_map).items():
        scores[(task_key, FINAL)][summary_id] = enhanced_score(task_key, by_unit, FINAL)
    for task_key, task_judgements in crowd.items():
        if max_modelled_judgements is not None and len(task_judgements) > max_modelled_judgements:
            raise AnalysisError(
                f"The {task_key} task has {len(task_judgements)} judgements, more than a page fits a crowd model "
                f"to ({max_modelled_judgements}): leave the crowd model out here, or use the human-enhanced export."
            )
        task = get_task(task_key)
        aggregated: dict[int, dict[int, list[float]]] = defaultdict(dict)
        model_labels = labels_aggregate(judgements=task_judgements, method=str(crowd_model)).labels
        for unit, model_label in model_labels.items():
            item_id, unit_index = unit  # type: ignore[misc]  # the units built above are (item, unit index)
            value = None if model_label is None else task.numeric(model_label)
            aggregated[item_id][unit_index] = [] if value is None else [value]
        for item_id, by_unit in aggregated.items():
            scores[(task_key, AGGREGATED)][summary_of[item_id]] = enhanced_score(task_key, by_unit, AGGREGATED)
    return dict(scores)


def _final_units(
    study: Study, summary_ids: Iterable[int] | None, label_map: dict[str, str]
) -> dict[tuple[str, int], dict[int, list[float]]]:
    """(task, summary id) -> unit -> [the numeric value of its final label], for the units of the study's
    enhanceable tasks with a final label (unresolved units and "Don't know", unless mapped, have none)."""
    finals = FinalLabel.objects.filter(
        item__study_task__study=study, item__study_task__task__in=ENHANCED_TASKS
    ).exclude(label="")
    if summary_ids is not None:
        finals = finals.filter(item__summary_id__in=list(summary_ids))
    units: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(dict)
    rows = finals.order_by().values_list("item__study_task__task", "item__summary_id", "unit_index", "label")
    for task_key, summary_id, unit_index, label in rows.iterator(chunk_size=10000):
        value = get_task(task_key).numeric(label_map.get(label, label))
        units[(task_key, summary_id)][unit_index] = [] if value is None else [value]
    return units


def enhanced_studies(*, dataset: Dataset, user: User | None) -> list[tuple[Study, list[str]]]:
    """The dataset's annotation studies the user may read with tasks that give human-enhanced scores, and
    those tasks."""
    tasks: dict[int, list[str]] = defaultdict(list)
    studies: dict[int, Study] = {}
    for study_task in (
        StudyTask.objects.filter(
            study__in=studies_readable(user=user),
            study__dataset=dataset,
            study__kind=Study.Kind.STUDY,
            task__in=ENHANCED_TASKS,
        )
        .select_related("study")
        .order_by("study_id", "task")
    ):
        studies[study_task.study_id] = study_task.study
        tasks[study_task.study_id].append(study_task.task)
    return [(studies[pk], tasks[pk]) for pk in studies]


def study_original_scores(*, study: Study, task: str) -> dict[int, float | None]:
    """summary id -> the score of the explanation each item of the task showed (frozen at creation)."""
    return dict(
        Explanation.objects.filter(study_items__study_task__study=study, study_items__study_task__task=task)
        .values_list("summary_id", "score")
        .order_by()
    )


def study_enhanced_table(
    *,
    study: Study,
    human: str,
    dont_know_as_incorrect: bool = True,
    bootstrap: int = 1000,
    seed: int = 0,
    judgements: str = ACCEPTED,
    crowd_model: str | None = None,
    max_modelled_judgements: int | None = None,
) -> list[EnhancedRow]:
    """Table 5.6: per enhanceable task of the study, original vs enhanced against the human gold; with final
    labels also the enhanced score computed from them (variant "final"), with a crowd model also from its
    aggregated labels (variant "aggregated")."""
    enhanced = study_enhanced_scores(
        study=study,
        dont_know_as_incorrect=dont_know_as_incorrect,
        judgements=judgements,
        crowd_model=crowd_model,
        max_modelled_judgements=max_modelled_judgements,
    )
    tasks = [task for task in ENHANCED_TASKS if (task, AGGREGATIONS[0]) in enhanced]
    gold = human_values(dataset=study.dataset, name=human)
    rows: list[EnhancedRow] = []
    for task in tasks:
        summary_ids = sorted(enhanced[(task, AGGREGATIONS[0])])
        original = study_original_scores(study=study, task=task)
        rows += enhanced_table(
            task,
            [gold.get(i) for i in summary_ids],
            [original.get(i) for i in summary_ids],
            {
                variant: [enhanced[(task, variant)].get(i) for i in summary_ids]
                for variant in VARIANTS
                if (task, variant) in enhanced
            },
            bootstrap=bootstrap,
            seed=seed,
        )
    return rows


# --- meta-evaluation --------------------------------------------------------------------------------


def dataset_pairs(*, dataset: Dataset) -> dict[str, tuple[int | None, list[int], str]]:
    """pair -> (faithful summary id, unfaithful summary ids, error type), from the summaries' meta
    (`pair`, `faithful`, `error_type`; see docs/IMPORT_FORMATS.md)."""
    pairs: dict[str, tuple[int | None, list[int], str]] = {}
    rows = Summary.objects.filter(document__dataset=dataset, meta__has_key="pair").values_list("id", "meta")
    for summary_id, meta in rows.iterator(chunk_size=10000):
        faithful, unfaithful, error_type = pairs.get(str(meta["pair"]), (None, [], ""))
        if meta.get("faithful"):
            faithful = summary_id
        else:
            unfaithful = [*unfaithful, summary_id]
            error_type = error_type or str(meta.get("error_type") or "")
        pairs[str(meta["pair"])] = (faithful, unfaithful, error_type)
    return pairs


def dataset_meta_evaluation(
    *, dataset: Dataset, protocol: str, metrics: list[str] | None = None, by_error_type: bool = False
) -> list[dict[str, object]]:
    pairs = dataset_pairs(dataset=dataset)
    if not pairs:
        raise AnalysisError(
            f"dataset {dataset.name!r} has no faithful/unfaithful pairs (summaries with meta 'pair' and 'faithful')"
        )
    rows = []
    for name in metrics or metric_names(dataset=dataset):
        scores = metric_values(dataset=dataset, name=name)
        groups = [
            PairGroup(scores.get(faithful) if faithful else None, [scores.get(i) for i in unfaithful], error_type)
            for faithful, unfaithful, error_type in pairs.values()
        ]
        results: list[MetaEvaluation] = (
            meta_evaluate_by_type(protocol, groups) if by_error_type else [meta_evaluate(protocol, groups)]
        )
        rows += [{"metric": name, **result.as_dict()} for result in results]
    return rows


# --- BERTScore as a highlighter ---------------------------------------------------------------------


def highlight_summaries(
    *, dataset: Dataset, user: User | None, task: str = "hallucination_spans"
) -> list[HighlightSummary]:
    """Summaries with both a BERTScore explanation (newest configuration) and human span markings from the
    studies the user may read."""
    configs = _newest_configs(dataset)
    if "bertscore" not in configs:
        raise AnalysisError(
            f"dataset {dataset.name!r} has no BERTScore explanations; "
            f'run: python manage.py score --dataset "{dataset.name}"'
        )
    marked: dict[int, list[list[Span]]] = {}
    for study_task in StudyTask.objects.filter(
        study__in=studies_readable(user=user), study__dataset=dataset, task=task
    ):
        for markings in span_markings(study_task=study_task).values():
            marked.setdefault(markings.summary_id, []).extend(markings.spans.values())
    if not marked:
        seen = "" if user is None else " in the studies you can see"
        raise AnalysisError(f"dataset {dataset.name!r} has no {task} judgements{seen}")
    explanations = Explanation.objects.filter(
        summary_id__in=list(marked), metric="bertscore", config_hash=configs["bertscore"]
    ).values_list("summary_id", "summary__text", "payload")
    return [
        HighlightSummary(
            text=text,
            tokens=[
                (token["start"], token["end"], token["similarity"])
                for token in payload.get("tokens", [])
                if token.get("similarity") is not None
            ],
            annotator_spans=marked[summary_id],
        )
        for summary_id, text, payload in explanations.iterator(chunk_size=500)
    ]


def dataset_highlighter(*, dataset: Dataset, user: User | None) -> list[dict[str, float | None]]:
    return [score.as_dict() for score in highlighter_scores(highlight_summaries(dataset=dataset, user=user))]


@dataclass(frozen=True)
class StudyAgreement:
    """The study page's agreement: Fleiss' kappa per task and each annotator's agreement with the others."""

    tasks: dict[int, FleissKappa]  # study task id -> Fleiss' kappa over its units (span tasks: summary words)
    annotators: dict[str, AnnotatorAgreement]  # username -> pooled over the tasks where agreement is defined
    min_others: int


def study_agreement(
    *,
    study_tasks: Iterable[StudyTask],
    dont_know_as_incorrect: bool = False,
    judgements: str = ACCEPTED,
    tallies: Mapping[int, LabelTally] | None = None,
) -> StudyAgreement:
    """Over a study's tasks: Fleiss' kappa per task (thesis Table 5.1; footnote 4 maps don't know) and, per
    annotator, the share of their labels equal to the majority of the other annotators of the unit, on units
    with at least MIN_OTHER_RATERS other raters, over every task (span tasks per summary, as on the analysis
    page; BUMP's edits, where agreement is undefined, left out). Label tasks are computed from their tally
    (stats.tally: votes per unit size and each annotator's outcomes), from `tallies` (study task id -> tally)
    where given, else from every label (coded_unit_labels: a study of 300,000 judgements has as many units x
    raters); span tasks from their labels, each task's fetched once."""
    kappas: dict[int, FleissKappa] = {}
    outcomes = []
    for study_task in study_tasks:
        task = get_task(study_task.task)
        if task.edit:
            kappas[study_task.pk] = FleissKappa(None, 0, 0, 0, reason=EDIT_AGREEMENT_UNDEFINED)
        elif task.spans:
            _, labels = task_labels(study_task=study_task, span_units=SPAN_UNITS, judgements=judgements)
            kappas[study_task.pk] = agreement_of(task, labels["word"], "fleiss")
            outcomes.append(annotator_outcomes(labels["summary"], others_only=True, min_others=MIN_OTHER_RATERS))
        else:
            tally = (tallies or {}).get(study_task.pk)
            if tally is None:
                tally = _task_tally(study_task, dont_know_as_incorrect, judgements)
            kappas[study_task.pk] = tally_fleiss_kappa(tally)
            outcomes.append(tally.outcomes)
    annotators = annotator_agreement_rows(add_outcomes(*outcomes), others_only=True, min_others=MIN_OTHER_RATERS)
    return StudyAgreement(kappas, {row.annotator: row for row in annotators}, MIN_OTHER_RATERS)


def _task_tally(study_task: StudyTask, dont_know_as_incorrect: bool, judgements: str) -> LabelTally:
    """A label task's tally from every label."""
    label_map = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
    coded = coded_unit_labels(study_task=study_task, label_map=label_map, judgements=judgements)
    return coded_tally(coded, min_others=MIN_OTHER_RATERS)


def study_tallies(
    *,
    study_tasks: list[StudyTask],
    progress: Mapping[int, TaskProgress],
    dont_know_as_incorrect: bool = False,
    judgements: str = ACCEPTED,
    excluded: Iterable[int] = (),
) -> dict[int, LabelTally]:
    """The tally of each label task of the study, read from its stored row (studies.models.AgreementTally:
    one query for all tasks) where it stands for the task's submitted work (`progress`' state, the excluded
    annotators), else rebuilt from every label and stored (studies.services.tallies explains why a stored
    tally never leaves out a submission)."""
    excluded = sorted(excluded)
    variant = tally_variant(dont_know_as_incorrect=dont_know_as_incorrect, judgements=judgements)
    labelled = [task for task in study_tasks if tallied_task(task.task)]
    rows = (
        {row.study_task_id: row for row in AgreementTally.objects.filter(study_task__in=labelled)} if labelled else {}
    )
    now = timezone.now()
    tallies = {}
    for study_task in labelled:
        state = progress[study_task.pk].submitted_state if study_task.pk in progress else ()
        row = rows.get(study_task.pk)
        entry = row.variants.get(variant) if row is not None else None
        tally = tally_current(entry, state=state, excluded=excluded, judgements=judgements, now=now)
        if tally is None:
            tally = _task_tally(study_task, dont_know_as_incorrect, judgements)
            agreement_tally_store(
                study_task=study_task, seen=row, variant=variant, tally=tally, state=state, excluded=excluded
            )
        tallies[study_task.pk] = tally
    return tallies


# A bound on how long a change that bypasses the services (a judgement edited in the admin) goes unseen.
STUDY_AGREEMENT_CACHE_SECONDS = int(TALLY_MAX_AGE.total_seconds())


def study_agreement_cached(
    *,
    study: Study,
    study_tasks: list[StudyTask],
    progress: Mapping[int, TaskProgress],
    dont_know_as_incorrect: bool = False,
    judgements: str = ACCEPTED,
    excluded: Iterable[int] = (),
) -> StudyAgreement:
    """study_agreement, kept in the cache under the state of each task's submitted work (`progress`, from
    studies.selectors.studies.study_task_progress: submitted count, newest id, latest change). Agreement
    reads only submitted work, and every submission, import or withdrawal changes that state, so a page
    after a change computes afresh and every later one costs no query of its own. Computing afresh reads
    the label tasks' stored tallies (study_tallies: a row per task, which each submission keeps up to date)
    and the labels of span tasks only. `excluded`: the ids of the study's excluded annotators
    (studies.selectors.participation.excluded_annotator_ids), part of the key for accepted work."""
    excluded = list(excluded)
    state = ";".join(
        f"{task.pk}:{task.task}:{progress[task.pk].submitted_state if task.pk in progress else ()}"
        for task in study_tasks
    )
    if judgements == ACCEPTED:
        # Excluding or reinstating an annotator changes accepted work without touching any assignment.
        state += ";excluded:" + ",".join(str(pk) for pk in sorted(excluded))
    digest = hashlib.sha256(state.encode()).hexdigest()[:32]
    key = f"study-agreement:3:{study.pk}:{int(dont_know_as_incorrect)}:{judgements}:{digest}"
    agreement = cache.get(key)
    if agreement is None:
        tallies = study_tallies(
            study_tasks=study_tasks,
            progress=progress,
            dont_know_as_incorrect=dont_know_as_incorrect,
            judgements=judgements,
            excluded=excluded,
        )
        agreement = study_agreement(
            study_tasks=study_tasks,
            dont_know_as_incorrect=dont_know_as_incorrect,
            judgements=judgements,
            tallies=tallies,
        )
        cache.set(key, agreement, STUDY_AGREEMENT_CACHE_SECONDS)
    return cast(StudyAgreement, agreement)


def study_tallies_refresh(*, study: Study) -> int:
    """Bring every variant (don't know as incorrect or not, accepted or all work) of the stored tallies of the
    study's label tasks up to date (study_tallies), so that the page's first view reads no label: after a
    deployment, an import or an exclusion. Returns the number of label tasks."""
    study_tasks = list(study.tasks.all())
    progress = study_task_progress(study=study, study_tasks=study_tasks)
    excluded = list(excluded_annotator_ids(study=study))
    for dont_know_as_incorrect in (False, True):
        for judgements in JUDGEMENT_SETS:
            study_tallies(
                study_tasks=study_tasks,
                progress=progress,
                dont_know_as_incorrect=dont_know_as_incorrect,
                judgements=judgements,
                excluded=excluded,
            )
    return sum(tallied_task(task.task) for task in study_tasks)
