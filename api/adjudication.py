"""Adjudication beside its pages: the queue of disagreements, one item's labels, setting a final label and
computing the automatic ones. Only the study's researchers, its adjudicators and admins; any other study or
item answers 404."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import FiniteFloatField
from common.roles import signed_in_user
from common.validation import INT32_MAX, errors_by_field
from protocols.tasks import MAX_NOTE_CHARS, get_task
from review.selectors import adjudication as selectors
from review.services.adjudication import (
    ACCEPTS,
    AdjudicationConflict,
    final_decision_adjudicate,
    final_label_adjudicate,
    study_final_labels_compute,
)
from stats.crowd_quality import MAJORITY, MAX_REQUEST_JUDGEMENTS, METHODS
from studies.models import FinalLabel, Study, StudyItem
from studies.selectors.access import studies_adjudicable
from studies.selectors.adjudication import adjudicable_tasks


def _study(request: Request, study_id: int) -> Study:
    return get_object_or_404(studies_adjudicable(user=signed_in_user(request)), pk=study_id)


class FinalLabelOutput(serializers.Serializer):
    # A field named like Field.label: DRF keeps declared fields apart (_declared_fields).
    label = serializers.CharField(help_text="empty while unresolved or not computed")  # type: ignore[assignment]
    status = serializers.CharField(
        help_text="unanimous, majority, aggregated, adjudicated, unresolved; empty: none yet"
    )
    method = serializers.CharField(help_text="aggregated: the crowd model; adjudicated: what was accepted")
    by = serializers.CharField(help_text="the adjudicator's username")
    note = serializers.CharField()
    version = serializers.IntegerField(help_text="send it with an adjudication of this unit (0: no final label yet)")
    aggregated = serializers.CharField(help_text="the crowd model's label of the last computation with one")
    aggregated_method = serializers.CharField()
    # A field named like Serializer.data: DRF keeps declared fields apart (_declared_fields).
    data = serializers.JSONField(  # type: ignore[assignment]
        help_text="span and edit tasks: the final spans or the final edit"
    )


class QueueApi(APIView):
    """The study's items whose annotators disagree, most disagreed first (at most 200; `n_matching` counts
    them all)."""

    permission_classes = [IsAuthenticated]

    class AdjudicationQueueQuery(serializers.Serializer):
        task = serializers.CharField(required=False, help_text="one task's items")
        below = FiniteFloatField(
            default=1.0, min_value=0.0, max_value=1.01, help_text="items with a unit whose agreement is below this"
        )
        flagged = serializers.BooleanField(default=False, help_text='only items marked "cannot judge"')
        open = serializers.BooleanField(default=False, help_text="only items with units still to decide")

    class AdjudicationQueueRowOutput(serializers.Serializer):
        item = serializers.IntegerField(source="item_id")
        task = serializers.CharField()
        summary = serializers.IntegerField(source="summary_id")
        document = serializers.CharField()
        system = serializers.CharField()
        n_units = serializers.IntegerField()
        n_disagreed = serializers.IntegerField()
        lowest_agreement = serializers.FloatField()
        n_raters = serializers.IntegerField()
        n_skipped = serializers.IntegerField(help_text='annotators who marked the item "cannot judge"')
        statuses = serializers.DictField(child=serializers.IntegerField(), help_text="final label status -> units")

    class AdjudicationQueueOutput(serializers.Serializer):
        n_matching = serializers.IntegerField()
        tasks = serializers.ListField(child=serializers.CharField())
        items = serializers.SerializerMethodField()

        def get_items(self, queue: selectors.Queue) -> list[dict[str, Any]]:
            return QueueApi.AdjudicationQueueRowOutput(queue.rows, many=True).data  # type: ignore[return-value]

    @extend_schema(
        operation_id="adjudication_queue", parameters=[AdjudicationQueueQuery], responses={200: AdjudicationQueueOutput}
    )
    def get(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        query = self.AdjudicationQueueQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        tasks = adjudicable_tasks(study=study)
        names = [study_task.task for study_task in tasks]
        task = query.validated_data.get("task")
        if task is not None and task not in names:
            return Response({"task": [f"not an adjudicable task of this study ({', '.join(names)})"]}, status=400)
        filters = selectors.QueueFilters(
            task=task,
            below=query.validated_data["below"],
            flagged=query.validated_data["flagged"],
            open=query.validated_data["open"],
        )
        queue = selectors.adjudication_queue(study=study, filters=filters, tasks=tasks)
        return Response(self.AdjudicationQueueOutput(queue).data)


class ItemApi(APIView):
    """GET: one item's units with every annotator's label and note, the majority and the final label.
    POST: set the final label of one unit: a `label` of its choices, or `accept` the majority, the aggregated
    label or "unresolved"; `version` is the unit's version as read (a stale or replayed post answers 409).
    Span and edit tasks decide the whole item: `spans` or `edit` of the adjudicator's own, `accept` the
    majority or "unresolved", or take one `annotator`'s spans or edit."""

    permission_classes = [IsAuthenticated]

    class AdjudicationRaterOutput(serializers.Serializer):
        username = serializers.CharField()
        seconds = serializers.FloatField(help_text="active time on the item")
        comment = serializers.CharField()
        guidelines_version = serializers.IntegerField(allow_null=True)
        cannot_judge = serializers.CharField(source="skipped")
        cannot_judge_note = serializers.CharField(source="skip_note")

    class AdjudicationUnitOutput(serializers.Serializer):
        index = serializers.IntegerField()
        text = serializers.CharField()
        prompt = serializers.CharField()
        choices = serializers.ListField(child=serializers.DictField())
        labels = serializers.DictField(child=serializers.CharField(), help_text="annotator -> label")
        notes = serializers.DictField(child=serializers.CharField(), help_text="annotator -> note")
        majority = serializers.CharField(allow_null=True, help_text="null on a tie")
        agreement = serializers.FloatField(allow_null=True)
        final = FinalLabelOutput()

    class AdjudicationItemOutput(serializers.Serializer):
        item = serializers.IntegerField(source="item.pk")
        task = serializers.CharField(source="task.key")
        summary = serializers.IntegerField(source="item.summary_id")
        raters = serializers.SerializerMethodField()
        units = serializers.SerializerMethodField()
        whole = serializers.SerializerMethodField(
            help_text="span and edit tasks (decided per item): each annotator's spans or edit, the majority and "
            "the final decision; null for label tasks"
        )

        def get_whole(self, decisions: selectors.ItemDecisions) -> dict[str, Any] | None:
            return decisions.whole_state()

        def get_raters(self, decisions: selectors.ItemDecisions) -> list[dict[str, Any]]:
            return ItemApi.AdjudicationRaterOutput(decisions.raters, many=True).data  # type: ignore[return-value]

        def get_units(self, decisions: selectors.ItemDecisions) -> list[dict[str, Any]]:
            return ItemApi.AdjudicationUnitOutput(decisions.units, many=True).data  # type: ignore[return-value]

    class AdjudicationInput(serializers.Serializer):
        unit_index = serializers.IntegerField(
            min_value=0, max_value=INT32_MAX, required=False, help_text="label tasks: the unit (span and edit: none)"
        )
        version = serializers.IntegerField(min_value=0, max_value=INT32_MAX)
        # A field named like Field.label: DRF keeps declared fields apart (_declared_fields).
        label = serializers.CharField(  # type: ignore[assignment]
            required=False, max_length=50, help_text="one of the unit's choices"
        )
        accept = serializers.ChoiceField(choices=ACCEPTS, required=False)
        note = serializers.CharField(required=False, allow_blank=True, max_length=MAX_NOTE_CHARS, default="")
        spans = serializers.JSONField(required=False, help_text="span tasks: the final spans, [{start, end, label}]")
        edit = serializers.JSONField(required=False, help_text="edit tasks: the final edit, {text, label, note}")
        annotator = serializers.CharField(
            required=False, max_length=150, help_text="span and edit tasks: take this annotator's spans or edit"
        )

    class AdjudicationOutput(serializers.Serializer):
        unit_index = serializers.IntegerField()
        final = FinalLabelOutput()

    def _item(self, request: Request, study_id: int, item_id: int) -> StudyItem:
        study = _study(request, study_id)
        return get_object_or_404(
            StudyItem.objects.select_related("study_task__study", "summary__document", "explanation"),
            pk=item_id,
            study_task__study=study,
        )

    @extend_schema(operation_id="adjudication_item", responses={200: AdjudicationItemOutput})
    def get(self, request: Request, study_id: int, item_id: int) -> Response:
        item = self._item(request, study_id, item_id)
        return Response(self.AdjudicationItemOutput(selectors.item_decisions(item=item)).data)

    @extend_schema(operation_id="adjudication_decide", request=AdjudicationInput, responses={200: AdjudicationOutput})
    def post(self, request: Request, study_id: int, item_id: int) -> Response:
        item = self._item(request, study_id, item_id)
        data = self.AdjudicationInput(data=request.data)
        data.is_valid(raise_exception=True)
        task = get_task(item.study_task.task)
        whole = task.whole_item
        decide = final_decision_adjudicate if whole else final_label_adjudicate
        fields = dict(data.validated_data)
        # A span or edit task's item has one decision (unit 0); a label task's units take a label.
        if whole and fields.pop("unit_index", 0) != 0:
            return Response({"unit_index": [f"items of task {task.key!r} have one decision: unit 0"]}, status=400)
        unused = sorted(set(fields) & ({"label"} if whole else {"spans", "edit", "annotator"}))
        if unused:
            problem = f"task {task.key!r} takes no {unused[0]} (" + ("spans or an edit" if whole else "a label") + ")"
            return Response({unused[0]: [problem]}, status=400)
        try:
            row = decide(user=signed_in_user(request), item_id=item.pk, **fields)
        except AdjudicationConflict as exc:
            return Response({"version": [str(exc)]}, status=status.HTTP_409_CONFLICT)
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=status.HTTP_400_BAD_REQUEST)
        return Response(self.AdjudicationOutput(_adjudicated(row)).data)


def _adjudicated(row: FinalLabel) -> dict[str, Any]:
    return {"unit_index": row.unit_index, "final": selectors.final_state(row)}


class FinalLabelsComputeApi(APIView):
    """Compute the automatic final labels of every adjudicable task of the study: unanimous, majority, a crowd
    model's label on a tie (`method`; over at most 20,000 judgements here, any number with the command), or
    unresolved; decisions of an adjudicator stay."""

    permission_classes = [IsAuthenticated]

    class FinalLabelsComputeInput(serializers.Serializer):
        method = serializers.ChoiceField(choices=METHODS, default=MAJORITY, help_text="majority: ties stay unresolved")

    class FinalLabelsComputeOutput(serializers.Serializer):
        tasks = serializers.DictField(
            child=serializers.DictField(child=serializers.IntegerField()), help_text="task -> status -> units"
        )

    @extend_schema(
        operation_id="final_labels_compute", request=FinalLabelsComputeInput, responses={200: FinalLabelsComputeOutput}
    )
    def post(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        data = self.FinalLabelsComputeInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            counts = study_final_labels_compute(
                study=study, method=data.validated_data["method"], max_modelled_judgements=MAX_REQUEST_JUDGEMENTS
            )
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=status.HTTP_400_BAD_REQUEST)
        return Response(self.FinalLabelsComputeOutput({"tasks": counts}).data)
