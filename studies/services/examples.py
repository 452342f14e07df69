"""Fully annotated example items for the "View examples" modal, annotated by a researcher in the task view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from common.validation import InputError, storable_text
from corpus.models import Summary
from protocols.tasks import BUMP_ERROR_TYPES, Submission, get_task
from studies.models import StudyExample, StudyTask
from studies.selectors.assignments import item_units
from studies.services.studies import MAX_COMMENT_CHARS, clean_submission, explanations_for


@transaction.atomic
def study_example_create(
    *,
    study_task: StudyTask,
    summary: Summary,
    user: User | None,
    explanation_text: str = "",
    error_type: str | None = None,
) -> StudyExample:
    """An example item of a task; it shows in the modal once annotated (study_example_annotate).

    The summary must not be an item of the task: the example would tell annotators the answer.
    """
    task = get_task(study_task.task)
    if summary.document.dataset_id != study_task.study.dataset_id:
        raise ValidationError({"summary": "Take the example from the study's dataset."})
    if study_task.items.filter(summary=summary).exists():
        raise ValidationError(
            {"summary": f"Summary {summary.pk} is an item of this task; an example would tell annotators the answer."}
        )
    if task.references_only and not summary.is_reference:
        raise ValidationError({"summary": f"The {task.name} task edits reference summaries; {summary.pk} is not one."})
    explanation = explanations_for(study_task.task, [summary], study_task.explanation_config_hash or None).get(
        summary.pk
    )
    if task.explanation_metric and explanation is None:
        raise ValidationError({"summary": f"Summary {summary.pk} has no {task.explanation_metric} explanation."})
    params: dict[str, Any] = {}
    if study_task.options.get("error_types"):
        params["error_type"] = error_type or study_task.options["error_types"][0]
        if params["error_type"] not in BUMP_ERROR_TYPES:
            raise ValidationError({"error_type": f"Unknown error type {error_type!r}."})
    example = StudyExample(
        study_task=study_task,
        summary=summary,
        explanation=explanation,
        params=params,
        explanation_text=explanation_text.strip(),
        created_by=user,
        position=(study_task.examples.aggregate(last=Max("position"))["last"] or 0) + 1,
    )
    if not task.spans and not item_units(example):
        raise ValidationError({"summary": f"Summary {summary.pk} has nothing to judge in this task."})
    example.save()
    return example


@transaction.atomic
def study_example_annotate(
    *,
    example: StudyExample,
    labels: Mapping[Any, Any] | None = None,
    notes: Mapping[Any, Any] | None = None,
    spans: Sequence[Any] | None = None,
    edit: Mapping[str, Any] | None = None,
    explanation_text: str | None = None,
) -> StudyExample:
    """Store the example's complete annotation, checked exactly like an annotator's submission."""
    if explanation_text is not None:
        try:
            storable_text(explanation_text, field="comment", max_chars=MAX_COMMENT_CHARS)
        except InputError as exc:
            raise ValidationError({exc.field: str(exc)}) from None
    judgements = clean_submission(
        item_task=example.study_task.task,
        units=item_units(example),
        summary_text=example.summary.text,
        params=example.params,
        submission=Submission(labels=labels or {}, notes=notes or {}, spans=spans or (), edit=edit),
    )
    example.judgements = [judgement.as_dict() for judgement in judgements]
    example.annotated_at = timezone.now()
    if explanation_text is not None:
        example.explanation_text = explanation_text.strip()
    example.save(update_fields=["judgements", "annotated_at", "explanation_text"])
    return example


@transaction.atomic
def study_example_delete(*, example: StudyExample) -> None:
    example.delete()
