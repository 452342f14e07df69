"""A dataset with its imported labels, as records of the JSONL import format (export_dataset)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from accounts.services import external_username
from corpus.models import Dataset, Document, Summary
from protocols.tasks import get_task
from studies.models import Assignment, Study


def dataset_jsonl_records(
    *, dataset: Dataset, limit: int | None = None, max_sentences: int | None = None
) -> Iterator[dict[str, Any]]:
    """The dataset in the import format of corpus.importers.jsonl, imported labels included.

    `max_sentences` keeps documents of at most that many sentences (the thesis kept <= 15 for its study).
    """
    documents = list(Document.objects.filter(dataset=dataset).order_by("external_id"))
    if max_sentences is not None:
        documents = [d for d in documents if len(d.sentences) <= max_sentences]
    documents = documents[:limit] if limit is not None else documents
    summaries = (
        Summary.objects.filter(document__in=documents)
        .prefetch_related("human_scores", "metric_scores")
        .order_by("document_id", "external_id")
    )
    by_document: dict[int, list[Summary]] = defaultdict(list)
    for summary in summaries:
        by_document[summary.document_id].append(summary)
    labels = _imported_labels(dataset=dataset, summary_ids=[s.pk for group in by_document.values() for s in group])
    for document in documents:
        yield {
            "id": document.external_id,
            "title": document.title,
            "text": document.text,
            "meta": document.meta,
            "summaries": [
                {
                    "id": summary.external_id,
                    "system": summary.system,
                    "text": summary.text,
                    "is_reference": summary.is_reference,
                    "meta": summary.meta,
                    "human_scores": {score.name: score.value for score in summary.human_scores.all()},
                    "metric_scores": {score.name: score.value for score in summary.metric_scores.all()},
                    "labels": labels.get(summary.pk, []),
                }
                for summary in by_document[document.pk]
            ],
        }


def _imported_labels(*, dataset: Dataset, summary_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    prefix = external_username(dataset, "")
    assignments = (
        Assignment.objects.filter(
            item__study_task__study__dataset=dataset,
            item__study_task__study__kind=Study.Kind.IMPORTED,
            item__summary_id__in=summary_ids,
        )
        .select_related("annotator", "item__study_task")
        .prefetch_related("judgements")
        .order_by("item__summary_id", "item__study_task__task", "annotator__username")
    )
    result: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for assignment in assignments:
        task = get_task(assignment.item.study_task.task)
        worker = assignment.annotator.username.removeprefix(prefix)
        judgements = list(assignment.judgements.all())
        entry: dict[str, Any] = {"annotator": worker, "task": task.key}
        if task.spans:
            entry["spans"] = [{"start": j.start, "end": j.end, "label": j.label} for j in judgements]
        elif len(judgements) == 1 and judgements[0].unit_index == 0 and not task.explanation_metric:
            entry["label"] = judgements[0].label
        else:
            entry["units"] = [{"index": j.unit_index, "label": j.label} for j in judgements]
        if assignment.comment:
            entry["comment"] = assignment.comment
        result[assignment.item.summary_id].append(entry)
    return result
