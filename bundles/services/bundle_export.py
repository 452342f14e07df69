"""Writing a study bundle (docs/BUNDLES.md): the study's dataset slice, explanations, tasks with every
guidelines version, examples, items, assignments, judgements and each annotator's standing, streamed into
one zip archive by bundles.format.BundleWriter."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from bundles.format import BundleWriter
from corpus.models import Document, HumanScore, MetricScore, Summary
from scoring.models import Explanation
from studies.models import Assignment, GuidelinesVersion, Judgement, Participation, Study, StudyExample, StudyItem

Progress = Callable[[str, int], None]
CHUNK = 500


def _rows(queryset: QuerySet[Any], *fields: str, **renamed: str) -> Iterator[dict[str, Any]]:
    """The queryset's rows in primary-key order (the import keeps it, so every order-dependent analysis
    sees the same order), `renamed` maps a bundle field to the lookup it comes from."""
    lookups = list(fields) + list(renamed.values())
    names = list(fields) + list(renamed)
    for values in queryset.order_by("pk").values_list(*lookups).iterator(chunk_size=CHUNK):
        yield dict(zip(names, values, strict=True))


def study_summary_ids(*, study: Study) -> list[int]:
    """The summaries the bundle carries: those of the study's items and examples."""
    items = StudyItem.objects.filter(study_task__study=study).values("summary_id")
    examples = StudyExample.objects.filter(study_task__study=study).values("summary_id")
    return sorted(Summary.objects.filter(Q(pk__in=items) | Q(pk__in=examples)).values_list("pk", flat=True))


def study_bundle_export(*, study: Study, output: IO[bytes], progress: Progress | None = None) -> dict[str, Any]:
    """Write `study` as a bundle to `output` (a binary file); returns the manifest."""
    told = progress or (lambda name, rows: None)
    writer = BundleWriter(output, bundle_id=str(uuid.uuid4()), created_at=timezone.now())
    dataset = study.dataset
    summary_ids = study_summary_ids(study=study)
    summaries = Summary.objects.filter(pk__in=summary_ids)
    documents = Document.objects.filter(pk__in=summaries.values("document_id"))
    writer.json_member(
        "dataset.json",
        {
            "name": dataset.name,
            "description": dataset.description,
            "source_format": dataset.source_format,
            "primary_human_score": dataset.primary_human_score,
            "created_at": dataset.created_at,
        },
    )

    def member(name: str, rows: Iterator[dict[str, Any]]) -> None:
        told(name, writer.jsonl_member(name, rows))

    member("documents.jsonl", _rows(documents, "id", "external_id", "title", "text", "sentences", "meta"))
    member(
        "summaries.jsonl",
        _rows(
            summaries,
            "id",
            "external_id",
            "system",
            "text",
            "sentences",
            "is_reference",
            "meta",
            document="document_id",
        ),
    )
    for name, model in (("human_scores.jsonl", HumanScore), ("metric_scores.jsonl", MetricScore)):
        member(
            name, _rows(model.objects.filter(summary__in=summary_ids), "name", "value", "source", summary="summary_id")
        )
    explanation_fields = ("id", "metric", "config", "config_hash", "model_ids", "code_version", "score", "scores")
    member(
        "explanations.jsonl",
        _rows(
            Explanation.objects.filter(summary__in=summary_ids),
            *explanation_fields,
            "payload",
            "error",
            "created_at",
            summary="summary_id",
        ),
    )
    assignments = Assignment.objects.filter(item__study_task__study=study)
    participations = Participation.objects.filter(study=study)
    people = sorted(
        set(study.annotators.values_list("username", flat=True))
        | set(assignments.values_list("annotator__username", flat=True))
        | set(participations.values_list("annotator__username", flat=True))
    )
    member("people.jsonl", iter([{"username": name} for name in people]))
    writer.json_member(
        "study.json",
        {
            "name": study.name,
            "kind": study.kind,
            "description": study.description,
            "annotators_per_item": study.annotators_per_item,
            "one_task_per_summary": study.one_task_per_summary,
            "reclaim_after_hours": study.reclaim_after_hours,
            "skipped_items_reassigned": study.skipped_items_reassigned,
            "selection": study.selection,
            "created_by": study.created_by.username if study.created_by else None,
            "researchers": sorted(study.researchers.values_list("username", flat=True)),
            "annotators": sorted(study.annotators.values_list("username", flat=True)),
            "created_at": study.created_at,
        },
    )
    member(
        "tasks.jsonl",
        _rows(
            study.tasks.all(), "id", "task", "guidelines", "guidelines_version", "explanation_config_hash", "options"
        ),
    )
    member(
        "guidelines.jsonl",
        _rows(
            GuidelinesVersion.objects.filter(study_task__study=study),
            "version",
            "text",
            "created_at",
            task="study_task_id",
            created_by="created_by__username",
        ),
    )
    member(
        "examples.jsonl",
        _rows(
            StudyExample.objects.filter(study_task__study=study),
            "params",
            "judgements",
            "explanation_text",
            "position",
            "annotated_at",
            "created_at",
            task="study_task_id",
            summary="summary_id",
            explanation="explanation_id",
            created_by="created_by__username",
        ),
    )
    member(
        "items.jsonl",
        _rows(
            StudyItem.objects.filter(study_task__study=study),
            "id",
            "position",
            "params",
            task="study_task_id",
            summary="summary_id",
            explanation="explanation_id",
        ),
    )
    member(
        "assignments.jsonl",
        _rows(
            assignments,
            "id",
            "status",
            "position",
            "comment",
            "time_spent",
            "guidelines_version",
            "draft",
            "draft_saved_at",
            "touched_at",
            "skip_reason",
            "skip_note",
            "skipped_at",
            "submitted_at",
            "created_at",
            "updated_at",
            item="item_id",
            annotator="annotator__username",
        ),
    )
    member(
        "judgements.jsonl",
        _rows(
            Judgement.objects.filter(assignment__item__study_task__study=study),
            "unit_index",
            "unit_text",
            "label",
            "start",
            "end",
            "note",
            "data",
            "created_at",
            "updated_at",
            assignment="assignment_id",
        ),
    )
    member(
        "participations.jsonl",
        _rows(
            participations,
            "platform",
            "external_id",
            "excluded",
            "excluded_reason",
            "excluded_at",
            "review",
            "bonus",
            "created_at",
            "updated_at",
            annotator="annotator__username",
            excluded_by="excluded_by__username",
        ),
    )
    return writer.close()
