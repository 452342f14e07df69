"""Rows for the judgement exports, streamed from the database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotations.models import Judgement, Study

EXPORT_FIELDS = (
    "study",
    "task",
    "guidelines_version",
    "annotator",
    "dataset",
    "document",
    "summary_id",
    "system",
    "unit_index",
    "unit_text",
    "span_start",
    "span_end",
    "label",
    "created_at",
    "updated_at",
    "seconds_spent_on_item",
    "comment",
    "explanation_metric",
    "explanation_model",
    "explanation_config",
)


def study_judgement_rows(*, study: Study) -> Iterator[dict[str, Any]]:
    """Every judgement of a study as flat rows, streamed from the database in chunks."""
    rows = (
        Judgement.objects.filter(assignment__item__study_task__study=study)
        .order_by(
            "assignment__item__study_task__task",
            "assignment__item__position",
            "assignment__annotator__username",
            "unit_index",
        )
        .values_list(
            "assignment__item__study_task__task",
            "assignment__guidelines_version",
            "assignment__annotator__username",
            "assignment__item__summary__document__external_id",
            "assignment__item__summary_id",
            "assignment__item__summary__system",
            "unit_index",
            "unit_text",
            "start",
            "end",
            "label",
            "created_at",
            "updated_at",
            "assignment__time_spent",
            "assignment__comment",
            "assignment__item__explanation__metric",
            "assignment__item__explanation__model_ids",
            "assignment__item__explanation__config",
        )
    )
    for (
        task,
        version,
        annotator,
        document,
        summary_id,
        system,
        unit_index,
        unit_text,
        start,
        end,
        label,
        created,
        updated,
        seconds,
        comment,
        metric,
        model_ids,
        config,
    ) in rows.iterator(chunk_size=2000):
        yield {
            "study": study.pk,
            "task": task,
            "guidelines_version": version,
            "annotator": annotator,
            "dataset": study.dataset.name,
            "document": document,
            "summary_id": summary_id,
            "system": system,
            "unit_index": unit_index,
            "unit_text": unit_text,
            "span_start": start,
            "span_end": end,
            "label": label,
            "created_at": created.isoformat(),
            "updated_at": updated.isoformat(),
            "seconds_spent_on_item": round(seconds, 1),
            "comment": comment,
            "explanation_metric": metric or "",
            "explanation_model": model_ids or {},
            "explanation_config": config or {},
        }
