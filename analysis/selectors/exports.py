"""Rows for the judgement exports, streamed from the database."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db.models import F, FilteredRelation, Q, QuerySet

from analysis.selectors.analysis import (
    enhanced_studies,
    human_names,
    human_values,
    metric_names,
    metric_values,
    study_enhanced_scores,
    without_checks,
)
from corpus.models import Dataset, Summary
from crowd.models import ANNOTATION
from protocols.attention import check_role
from protocols.tasks import TASKS, unit_statement
from stats.enhanced import VARIANTS
from studies.models import FinalLabel, Participation, Study
from studies.selectors.participation import ACCEPTED, counted, judgement_set_check
from studies.selectors.studies import study_judgements_in_order, study_skips_in_order

# The judgement exports' columns with their types (annotations/exports.py COLUMN_TYPES); docs/EXPORTS.md says
# what each one means.
JUDGEMENT_COLUMN_TYPES: dict[str, str] = {
    "study": "integer",
    "task": "text",
    "guidelines_version": "integer",
    "condition": "text",
    "annotator": "text",
    "annotator_platform": "text",
    "worker_id": "text",
    "excluded": "boolean",
    "dataset": "text",
    "document": "text",
    "summary_id": "integer",
    "system": "text",
    "unit_index": "integer",
    "statement": "text",
    "unit_text": "text",
    "span_start": "integer",
    "span_end": "integer",
    "label": "text",
    "note": "text",
    "data": "json",
    "created_at": "text",
    "updated_at": "text",
    "seconds_spent_on_item": "number",
    "comment": "text",
    "explanation_metric": "text",
    "explanation_model": "json",
    "explanation_config": "json",
    "cannot_judge": "text",
    "cannot_judge_note": "text",
    "final_label": "text",
    "final_status": "text",
    "final_method": "text",
    "final_by": "text",
    "final_data": "json",
    "phase": "text",
    "check_kind": "text",
    "check_source": "text",
    "check_expected": "text",
    "check_passed": "boolean",
}
EXPORT_FIELDS = tuple(JUDGEMENT_COLUMN_TYPES)
NO_FINAL_LABEL = {"final_label": "", "final_status": "", "final_method": "", "final_by": "", "final_data": {}}

# Whether a study's judgement export holds the attention checks a public study mixes into its queue: left out
# by default (their labels test the worker and are no data), included on request and marked by `phase`.
CHECKS_EXCLUDE = "exclude"
CHECKS_INCLUDE = "include"
CHECK_SETS = (CHECKS_EXCLUDE, CHECKS_INCLUDE)
# Where a judgement was made (the `phase` column): an item of the study, or an attention check. Training
# answers are no judgements: the crowd training export holds them (crowd.selectors.crowd).
ANNOTATION_PHASE = ANNOTATION
ATTENTION_CHECK_PHASE = "attention_check"


def check_set_from(raw: str | None) -> str:
    """A page's `?checks=`: CHECKS_INCLUDE when it says "include", CHECKS_EXCLUDE otherwise (like
    judgement_set_from; the API refuses an unknown value instead)."""
    return CHECKS_INCLUDE if raw == CHECKS_INCLUDE else CHECKS_EXCLUDE


def _check_columns(kind: str | None, expected: str | None, passed: bool | None) -> dict[str, Any]:
    """The phase and check columns of a row; a row of no attention check has empty check columns."""
    if kind is None:
        return {
            "phase": ANNOTATION_PHASE,
            "check_kind": "",
            "check_source": "",
            "check_expected": "",
            "check_passed": None,
        }
    return {
        "phase": ATTENTION_CHECK_PHASE,
        "check_kind": check_role(kind, expected or ""),
        "check_source": kind,
        "check_expected": expected or "",
        "check_passed": passed,
    }


def study_judgement_rows(
    *, study: Study, judgements: str = ACCEPTED, checks: str = CHECKS_EXCLUDE
) -> Iterator[dict[str, Any]]:
    """Every judgement of a study as flat rows, streamed from the database in chunks; then a row per item an
    annotator could not judge (no label; `cannot_judge` says why). Accepted work only (excluded annotators
    left out) unless `judgements` is "all"; each row names the annotator's platform, worker id and whether
    they are excluded. A public study's attention checks are left out unless `checks` is CHECKS_INCLUDE; then
    their rows say so in `phase` and carry the check's kind, expectation and whether the worker passed it."""
    judgement_set_check(judgements)
    if checks not in CHECK_SETS:
        raise ValueError(f"checks must be one of {', '.join(CHECK_SETS)} (got {checks!r})")
    standing = _standing(study)
    yield from _judgement_rows(study, judgements, checks, standing)
    yield from _skip_rows(study, judgements, checks, standing)


def _checks_kept(queryset: QuerySet[Any], checks: str, *, assignment: str = "") -> QuerySet[Any]:
    return queryset if checks == CHECKS_INCLUDE else without_checks(queryset, assignment=assignment)


Standing = dict[int, dict[str, Any]]
INTERNAL_STANDING = {"annotator_platform": Participation.Platform.INTERNAL.value, "worker_id": "", "excluded": False}


def _standing(study: Study) -> Standing:
    """annotator id -> the export's platform, worker id and exclusion columns (one query, one row per
    annotator with a participation; the others are internal and not excluded)."""
    return {
        annotator: {"annotator_platform": platform, "worker_id": external_id, "excluded": excluded}
        for annotator, platform, external_id, excluded in Participation.objects.filter(study=study).values_list(
            "annotator_id", "platform", "external_id", "excluded"
        )
    }


def _judgement_rows(study: Study, judgements: str, checks: str, standing: Standing) -> Iterator[dict[str, Any]]:
    # The unit's final label (studies.models.FinalLabel) joined in the same query: one row per judgement.
    # A span or edit task's item has one final decision (unit 0) for all its rows: read once per item.
    whole = _whole_item_finals(study)
    rows = counted(
        _checks_kept(study_judgements_in_order(study=study), checks, assignment="assignment__"),
        judgements=judgements,
        assignment="assignment__",
    ).annotate(
        final=FilteredRelation(
            "assignment__item__final_labels",
            condition=Q(assignment__item__final_labels__unit_index=F("unit_index")),
        )
    )
    rows = rows.values_list(
        "assignment__item_id",
        "assignment__annotator_id",
        "assignment__item__study_task__task",
        "assignment__guidelines_version",
        "assignment__condition__name",
        "assignment__annotator__username",
        "assignment__item__summary__document__external_id",
        "assignment__item__summary_id",
        "assignment__item__summary__system",
        "unit_index",
        "unit_text",
        "start",
        "end",
        "label",
        "note",
        "data",
        "created_at",
        "updated_at",
        "assignment__time_spent",
        "assignment__comment",
        "assignment__item__explanation__metric",
        "assignment__item__explanation__model_ids",
        "assignment__item__explanation__config",
        "final__label",
        "final__status",
        "final__method",
        "final__adjudicated_by__username",
        "final__data",
        "assignment__item__crowd_check__kind",
        "assignment__item__crowd_check__expected",
        "assignment__crowd_record__check_passed",
    )
    for (
        item_id,
        annotator_id,
        task,
        version,
        condition,
        annotator,
        document,
        summary_id,
        system,
        unit_index,
        unit_text,
        start,
        end,
        label,
        note,
        data,
        created,
        updated,
        seconds,
        comment,
        metric,
        model_ids,
        config,
        final_label,
        final_status,
        final_method,
        final_by,
        final_data,
        check_kind,
        check_expected,
        check_passed,
    ) in rows.iterator(chunk_size=2000):
        if item_id in whole:
            final_label, final_status, final_method, final_by, final_data = whole[item_id]
        yield {
            "study": study.pk,
            "task": task,
            "guidelines_version": version,
            "condition": condition or "",
            "annotator": annotator,
            **standing.get(annotator_id, INTERNAL_STANDING),
            "dataset": study.dataset.name,
            "document": document,
            "summary_id": summary_id,
            "system": system,
            "unit_index": unit_index,
            # Which statement the label answers (QGQA's two per question, FEQA's four per sentence).
            "statement": unit_statement(task, unit_index),
            "unit_text": unit_text,
            "span_start": start,
            "span_end": end,
            "label": label,
            # The QAGS protocol's per-sentence explanation and a BUMP edit with its diff live here.
            "note": note,
            "data": data or {},
            "created_at": created.isoformat(),
            "updated_at": updated.isoformat(),
            "seconds_spent_on_item": round(seconds, 1),
            "comment": comment,
            "explanation_metric": metric or "",
            "explanation_model": model_ids or {},
            "explanation_config": config or {},
            "cannot_judge": "",
            "cannot_judge_note": "",
            "final_label": final_label or "",
            "final_status": final_status or "",
            "final_method": final_method or "",
            "final_by": final_by or "",
            "final_data": final_data or {},
            **_check_columns(check_kind, check_expected, check_passed),
        }


def _whole_item_finals(study: Study) -> dict[int, tuple[str, str, str, str, dict[str, Any]]]:
    """item id -> the final label, status, method, adjudicator and data of each span or edit task's item."""
    tasks = [key for key, task in TASKS.items() if task.whole_item]
    rows = FinalLabel.objects.filter(item__study_task__study=study, item__study_task__task__in=tasks, unit_index=0)
    return {
        item_id: (label, status, method, by or "", data)
        for item_id, label, status, method, by, data in rows.values_list(
            "item_id", "label", "status", "method", "adjudicated_by__username", "data"
        ).iterator(chunk_size=2000)
    }


def _skip_rows(study: Study, judgements: str, checks: str, standing: Standing) -> Iterator[dict[str, Any]]:
    rows = counted(_checks_kept(study_skips_in_order(study=study), checks), judgements=judgements).values_list(
        "annotator_id",
        "item__study_task__task",
        "condition__name",
        "annotator__username",
        "item__summary__document__external_id",
        "item__summary_id",
        "item__summary__system",
        "skip_reason",
        "skip_note",
        "skipped_at",
        "updated_at",
        "time_spent",
        "comment",
        "item__explanation__metric",
        "item__explanation__model_ids",
        "item__explanation__config",
        "item__crowd_check__kind",
        "item__crowd_check__expected",
        "crowd_record__check_passed",
    )
    for (
        annotator_id,
        task,
        condition,
        annotator,
        document,
        summary_id,
        system,
        reason,
        note,
        skipped,
        updated,
        seconds,
        comment,
        metric,
        model_ids,
        config,
        check_kind,
        check_expected,
        check_passed,
    ) in rows.iterator(chunk_size=2000):
        yield {
            "study": study.pk,
            "task": task,
            "guidelines_version": None,
            "condition": condition or "",
            "annotator": annotator,
            **standing.get(annotator_id, INTERNAL_STANDING),
            "dataset": study.dataset.name,
            "document": document,
            "summary_id": summary_id,
            "system": system,
            "unit_index": None,
            "statement": "",
            "unit_text": "",
            "span_start": None,
            "span_end": None,
            "label": "",
            "note": "",
            "data": {},
            "created_at": (skipped or updated).isoformat(),
            "updated_at": updated.isoformat(),
            "seconds_spent_on_item": round(seconds, 1),
            "comment": comment,
            "explanation_metric": metric or "",
            "explanation_model": model_ids or {},
            "explanation_config": config or {},
            "cannot_judge": reason,
            "cannot_judge_note": note,
            **NO_FINAL_LABEL,
            **_check_columns(check_kind, check_expected, check_passed),
        }


# --- the per-summary table --------------------------------------------------------------------------

# The per-summary table's fixed columns with their types; then one "number" column per human score, metric
# and human-enhanced score (SCORE_COLUMN_PREFIXES).
SUMMARY_COLUMN_TYPES: dict[str, str] = {
    "dataset": "text",
    "document": "text",
    "summary_id": "integer",
    "summary_key": "text",
    "system": "text",
    "is_reference": "boolean",
    "summary_text": "text",
}
SUMMARY_FIELDS = tuple(SUMMARY_COLUMN_TYPES)
SCORE_COLUMN_PREFIXES = ("human:", "metric:", "enhanced:")
SUMMARY_CHUNK = 2000


def _enhanced_columns(dataset: Dataset, study: Study | None, user: User | None) -> list[tuple[Study, str, str, str]]:
    """(study, task, aggregation, column) for every human-enhanced score the table carries: the study's,
    or those of every study of the dataset the user may read."""
    columns = []
    for candidate, tasks in enhanced_studies(dataset=dataset, user=user):
        if study is not None and candidate.pk != study.pk:
            continue
        prefix = "enhanced" if study is not None else f"enhanced:study{candidate.pk}"
        columns += [(candidate, task, agg, f"{prefix}:{task}:{agg}") for task in tasks for agg in VARIANTS]
    return columns


def summary_table_fields(*, dataset: Dataset, user: User | None, study: Study | None = None) -> list[str]:
    return [
        *SUMMARY_FIELDS,
        *(f"human:{name}" for name in human_names(dataset=dataset)),
        *(f"metric:{name}" for name in metric_names(dataset=dataset)),
        *(column for *_, column in _enhanced_columns(dataset, study, user)),
    ]


def summary_table_rows(
    *, dataset: Dataset, user: User | None, study: Study | None = None, judgements: str = ACCEPTED
) -> Iterator[dict[str, Any]]:
    """One row per summary (of the study's items, or of the whole dataset): every metric score, imported
    or computed, every human score and the human-enhanced scores of the studies the user may read (`None`:
    the command line, every study). Read a chunk of summaries at a time, so memory stays flat however
    large the dataset."""
    humans = human_names(dataset=dataset)
    metrics = metric_names(dataset=dataset)
    enhanced = _enhanced_columns(dataset, study, user)
    summaries = Summary.objects.filter(document__dataset=dataset)
    if study is not None:
        summaries = summaries.filter(study_items__study_task__study=study).distinct()
    rows = summaries.order_by("document__external_id", "external_id").values_list(
        "pk", "document__external_id", "external_id", "system", "is_reference", "text"
    )
    chunk: list[tuple[int, str, str, str, bool, str]] = []

    def flush() -> Iterator[dict[str, Any]]:
        ids = [row[0] for row in chunk]
        columns: dict[str, dict[int, Any]] = {}
        for name in humans:
            columns[f"human:{name}"] = human_values(dataset=dataset, name=name, summary_ids=ids)
        for name in metrics:
            columns[f"metric:{name}"] = metric_values(dataset=dataset, name=name, summary_ids=ids)
        by_study: dict[int, dict[tuple[str, str], dict[int, float | None]]] = {}
        for source, task, aggregation, column in enhanced:
            if source.pk not in by_study:
                by_study[source.pk] = study_enhanced_scores(study=source, summary_ids=ids, judgements=judgements)
            columns[column] = by_study[source.pk].get((task, aggregation), {})
        for pk, document, external_id, system, is_reference, text in chunk:
            row: dict[str, Any] = {
                "dataset": dataset.name,
                "document": document,
                "summary_id": pk,
                "summary_key": external_id,
                "system": system,
                "is_reference": is_reference,
                "summary_text": text,
            }
            row.update({column: values.get(pk) for column, values in columns.items()})
            yield row

    for row in rows.iterator(chunk_size=SUMMARY_CHUNK):
        chunk.append(row)
        if len(chunk) >= SUMMARY_CHUNK:
            yield from flush()
            chunk = []
    if chunk:
        yield from flush()


def export_column_types(fields: Sequence[str]) -> dict[str, str]:
    """The type of every column of a judgement export or of the per-summary table (for Parquet)."""
    known = {**JUDGEMENT_COLUMN_TYPES, **SUMMARY_COLUMN_TYPES}
    types = {}
    for field in fields:
        if field in known:
            types[field] = known[field]
        elif field.startswith(SCORE_COLUMN_PREFIXES):
            types[field] = "number"
        else:
            raise ValueError(f"no type known for the export column {field!r}")
    return types
