"""Writing a study bundle (docs/BUNDLES.md): the study's dataset slice, explanations, tasks with every
guidelines version, examples, items, assignments, judgements, each annotator's standing, the conditions,
payment rules, final labels, crowd settings with their workers, and the LLM judge runs, streamed into one
zip archive by bundles.format.BundleWriter. API keys are never written."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.utils import timezone

from bundles.format import MEMBERS, BundleWriter
from corpus.models import Document, HumanScore, MetricScore, Summary
from crowd.models import CrowdCheck, CrowdItemRecord, CrowdStudy, CrowdWorker, TrainingItem
from judges.models import CachedResponse, JudgeItem, JudgeRun, ModelRater
from scoring.models import Explanation
from studies.models import (
    Assignment,
    FinalLabel,
    GuidelinesVersion,
    Judgement,
    Participation,
    PaymentRules,
    Study,
    StudyCondition,
    StudyExample,
    StudyItem,
)

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
    training = TrainingItem.objects.filter(crowd_study__study=study)
    documents = Document.objects.filter(
        Q(pk__in=summaries.values("document_id")) | Q(pk__in=training.values("document_id"))
    ).annotate(
        # The copies the crowd's attention checks are made of live in a dataset of their own.
        attention_check=ExpressionWrapper(~Q(dataset_id=dataset.pk), output_field=BooleanField())
    )
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

    member(
        "documents.jsonl",
        _rows(documents, "id", "external_id", "title", "text", "sentences", "meta", "attention_check"),
    )
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
    guidelines = GuidelinesVersion.objects.filter(study_task__study=study)
    examples = StudyExample.objects.filter(study_task__study=study)
    final_labels = FinalLabel.objects.filter(item__study_task__study=study)
    payment_rules = PaymentRules.objects.filter(study=study)
    runs = JudgeRun.objects.filter(study_task__study=study)
    people = _people(
        study.annotators.values_list("username", "pk"),
        study.adjudicators.values_list("username", "pk"),
        assignments.values_list("annotator__username", "annotator_id"),
        participations.values_list("annotator__username", "annotator_id"),
        # Who decided something in the study, mapped by name like the annotators (docs/BUNDLES.md).
        participations.values_list("excluded_by__username", "excluded_by_id"),
        final_labels.values_list("adjudicated_by__username", "adjudicated_by_id"),
        guidelines.values_list("created_by__username", "created_by_id"),
        examples.values_list("created_by__username", "created_by_id"),
        payment_rules.values_list("updated_by__username", "updated_by_id"),
        runs.values_list("created_by__username", "created_by_id"),
        runs.values_list("rater__user__username", "rater__user_id"),  # a model rater that judged nothing yet
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
            "pull_based": study.pull_based,
            "condition_design": study.condition_design,
            "adjudicators": sorted(study.adjudicators.values_list("username", flat=True)),
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
            guidelines,
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
            examples,
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
            condition="condition_id",
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
            "platform_status",
            "platform_status_at",
            "created_at",
            "updated_at",
            annotator="annotator__username",
            excluded_by="excluded_by__username",
            condition="condition_id",
        ),
    )
    member(
        "conditions.jsonl",
        _rows(
            StudyCondition.objects.filter(study=study), "id", "name", "position", "evidence", "guidelines", "created_at"
        ),
    )
    member(
        "payment_rules.jsonl",
        _rows(
            payment_rules,
            "per_item",
            "per_accepted_item",
            "gold_bonus",
            "gold_min_percent",
            "currency",
            "updated_at",
            updated_by="updated_by__username",
        ),
    )
    member(
        "final_labels.jsonl",
        _rows(
            final_labels,
            "unit_index",
            "unit_text",
            "label",
            "status",
            "method",
            "adjudicated_at",
            "note",
            "aggregated_label",
            "aggregated_method",
            "n_raters",
            "agreement",
            "version",
            "data",
            "created_at",
            "updated_at",
            item="item_id",
            adjudicated_by="adjudicated_by__username",
        ),
    )
    _crowd_members(study, member)
    _judge_members(runs, member)
    return writer.close()


def _own_fields(name: str, *renamed: str) -> list[str]:
    """The fields of the member (bundles.format.MEMBERS) that are its model's fields of the same name: the
    format lists what is written, so a model field (such as a run's API key) is written only if named there."""
    return [field for field in MEMBERS[name].fields if field not in renamed]


def _people(*accounts: QuerySet[Any]) -> list[str]:
    """The user names the queries give ((user name, id) each), without the empty ones, in the order of the
    accounts' ids (one query): the import creates the accounts in this order, so analyses that order by
    annotator see the same order."""
    first, *others = [query.order_by() for query in accounts]
    found = {name: pk for name, pk in first.union(*others) if name}
    return sorted(found, key=found.__getitem__)


def _crowd_members(study: Study, member: Callable[[str, Iterator[dict[str, Any]]], None]) -> None:
    """The crowd settings (without the public link's key: the import makes a new link), the gold items, the
    attention checks, the workers with their answers, and what the checks found on each item."""
    member("crowd_studies.jsonl", _rows(CrowdStudy.objects.filter(study=study), *_own_fields("crowd_studies.jsonl")))
    member(
        "training_items.jsonl",
        _rows(
            TrainingItem.objects.filter(crowd_study__study=study),
            "id",
            "summary_text",
            "expected",
            "explanation",
            "position",
            document="document_id",
        ),
    )
    member(
        "crowd_checks.jsonl",
        _rows(
            CrowdCheck.objects.filter(item__study_task__study=study),
            "kind",
            "expected",
            "span_start",
            "span_end",
            "source",
            item="item_id",
        ),
    )
    member(
        "crowd_workers.jsonl",
        _rows(
            CrowdWorker.objects.filter(crowd_study__study=study),
            *_own_fields("crowd_workers.jsonl", "annotator"),
            annotator="user__username",
        ),
    )
    member(
        "crowd_records.jsonl",
        _rows(
            CrowdItemRecord.objects.filter(assignment__item__study_task__study=study),
            "paste_events",
            "evaluated_at",
            "check_passed",
            "check_reason",
            assignment="assignment_id",
            worker="worker_id",
        ),
    )


def _judge_members(runs: QuerySet[JudgeRun], member: Callable[[str, Iterator[dict[str, Any]]], None]) -> None:
    """The LLM judge runs of the study's tasks with their raters, every item's exact prompt and answer, and
    the cached answers to those prompts. A run's API key (JudgeRun.api_key) is never written."""
    member(
        "model_raters.jsonl",
        _rows(
            ModelRater.objects.filter(pk__in=runs.values("rater_id")),
            "id",
            "endpoint",
            "model",
            "parameters",
            "key",
            "created_at",
            username="user__username",
        ),
    )
    member(
        "judge_runs.jsonl",
        _rows(
            runs,
            *_own_fields("judge_runs.jsonl", "task", "rater", "created_by"),
            task="study_task_id",
            rater="rater_id",
            created_by="created_by__username",
        ),
    )
    items = JudgeItem.objects.filter(run__in=runs)
    member(
        "judge_items.jsonl",
        _rows(items, *_own_fields("judge_items.jsonl", "run", "item"), run="run_id", item="item_id"),
    )
    member(
        "cached_responses.jsonl",
        _rows(
            CachedResponse.objects.filter(prompt_hash__in=items.values("prompt_hash")),
            "prompt_hash",
            "model",
            "content",
            "prompt_tokens",
            "completion_tokens",
            "created_at",
        ),
    )
