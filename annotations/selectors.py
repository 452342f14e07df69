"""Every read of the annotations app that holds more than a one-line filter."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractUser
from django.db.models import Count, Q, QuerySet

from annotations import roles
from annotations.analysis.agreement import FleissKappa, fleiss_kappa
from annotations.models import Assignment, Dataset, Document, Judgement, Study, StudyTask, Summary
from annotations.tasks import get_task


def assignment_for_user(*, assignment_id: int, user: AbstractUser) -> Assignment:
    """Only the annotator's own assignment; anyone else's looks as if it did not exist."""
    return Assignment.objects.select_related(
        "item__study_task__study", "item__summary__document", "item__explanation"
    ).get(pk=assignment_id, annotator=user)


def assignments_for_annotator(*, user: AbstractUser) -> QuerySet[Assignment]:
    """The annotator's queue across the studies they belong to, in the order work was handed out."""
    return (
        Assignment.objects.filter(annotator=user, item__study_task__study__kind=Study.Kind.STUDY)
        .select_related("item__study_task__study", "item__summary__document")
        .order_by("item__study_task__study__created_at", "item__study_task__study_id", "position", "pk")
    )


@dataclass(frozen=True)
class QueuePosition:
    number: int  # 1-based position of the assignment in the annotator's queue
    total: int
    done: int
    previous_id: int | None
    next_id: int | None
    next_open_id: int | None  # the next item still to do, wrapping around


def assignment_queue_position(*, assignment: Assignment) -> QueuePosition:
    rows = list(assignments_for_annotator(user=assignment.annotator).values_list("pk", "status"))
    ids = [pk for pk, _ in rows]
    index = ids.index(assignment.pk)
    open_ids = [pk for pk, status in rows[index + 1 :] + rows[:index] if status == Assignment.Status.ASSIGNED]
    return QueuePosition(
        number=index + 1,
        total=len(ids),
        done=sum(1 for _, status in rows if status == Assignment.Status.SUBMITTED),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        next_open_id=open_ids[0] if open_ids else None,
    )


def assignment_next_open(*, user: AbstractUser) -> Assignment | None:
    return assignments_for_annotator(user=user).filter(status=Assignment.Status.ASSIGNED).first()


def judgements_by_unit(*, assignment: Assignment) -> dict[int, str]:
    return dict(assignment.judgements.values_list("unit_index", "label"))


def studies_for_user(*, user: AbstractUser) -> QuerySet[Study]:
    """Admins see every study; researchers only those they run."""
    studies = Study.objects.select_related("dataset").annotate(n_items=Count("tasks__items", distinct=True))
    if roles.user_has_role(user, roles.ADMIN):
        return studies
    if roles.user_has_role(user, roles.RESEARCHER):
        return studies.filter(researchers=user)
    return studies.none()


@dataclass(frozen=True)
class AnnotatorProgress:
    username: str
    assigned: int
    done: int
    seconds: float


def study_progress(*, study: Study) -> list[AnnotatorProgress]:
    rows = (
        Assignment.objects.filter(item__study_task__study=study)
        .values("annotator__username")
        .annotate(
            assigned=Count("id"),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        )
        .order_by("annotator__username")
    )
    seconds: dict[str, float] = defaultdict(float)
    for username, spent in Assignment.objects.filter(item__study_task__study=study).values_list(
        "annotator__username", "time_spent"
    ):
        seconds[username] += spent
    return [
        AnnotatorProgress(row["annotator__username"], row["assigned"], row["done"], seconds[row["annotator__username"]])
        for row in rows
    ]


def study_unit_ratings(
    *, study_task: StudyTask, label_map: dict[str, str] | None = None
) -> dict[tuple[int, int], list[str]]:
    """Labels per (item, unit) from submitted assignments, optionally mapped (e.g. don't know -> incorrect)."""
    ratings: dict[tuple[int, int], list[str]] = defaultdict(list)
    rows = Judgement.objects.filter(
        assignment__item__study_task=study_task, assignment__status=Assignment.Status.SUBMITTED
    ).values_list("assignment__item_id", "unit_index", "label")
    for item_id, unit_index, label in rows.iterator(chunk_size=5000):
        ratings[(item_id, unit_index)].append((label_map or {}).get(label, label))
    return ratings


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


DONT_KNOW_AS_INCORRECT = {"dont_know": "incorrect"}


def study_agreement(*, study_task: StudyTask, dont_know_as_incorrect: bool = False) -> FleissKappa:
    """Fleiss' kappa over the units of a study task (thesis Table 5.1; footnote 4 maps don't know)."""
    ratings = study_unit_ratings(
        study_task=study_task, label_map=DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
    )
    return fleiss_kappa(ratings)


def dataset_jsonl_records(
    *, dataset: Dataset, limit: int | None = None, max_sentences: int | None = None
) -> Iterator[dict[str, Any]]:
    """The dataset in the import format of annotations.importers.jsonl, imported labels included.

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
    from annotations.services.accounts import external_username

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
