"""A study's worker quality, the actions on an annotator's standing, payment rules and payment files, and the
live progress (the worker quality page's data; issue 14, points 7-9)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import RESEARCHERS
from api.fields import FiniteFloatField
from common.roles import signed_in_user
from common.validation import errors_by_field
from review.selectors import quality as selectors
from review.views.quality import MAX_MIN_SECONDS, payment_file_response, quality_study
from stats.crowd_quality import COMPETENCE
from studies.selectors.participation import study_annotator
from studies.services.participation import ACTIONS, MAX_REASON_CHARS, participation_act
from studies.services.payments import payment_rules_set


class PaymentOutput(serializers.Serializer):
    accepted = serializers.BooleanField(help_text="neither excluded nor rejected")
    base = serializers.DecimalField(max_digits=10, decimal_places=2, help_text="per item done")
    accepted_pay = serializers.DecimalField(max_digits=10, decimal_places=2, help_text="per accepted item")
    gold_bonus = serializers.DecimalField(max_digits=10, decimal_places=2)
    gold_reason = serializers.CharField()
    bonus = serializers.DecimalField(max_digits=10, decimal_places=2, help_text="the researcher's own bonus")
    total = serializers.DecimalField(max_digits=10, decimal_places=2)


class WorkerOutput(serializers.Serializer):
    user_id = serializers.IntegerField()
    username = serializers.CharField()
    platform = serializers.CharField()
    external_id = serializers.CharField(help_text="the platform's worker id; empty for internal accounts")
    excluded = serializers.BooleanField()
    excluded_reason = serializers.CharField()
    review = serializers.CharField(help_text="pending, approved or rejected")
    bonus = serializers.DecimalField(max_digits=10, decimal_places=2)
    done = serializers.IntegerField(help_text="items submitted")
    median_seconds = serializers.FloatField(allow_null=True, help_text="median active time of a submitted item")
    timed_items = serializers.IntegerField()
    fast_items = serializers.IntegerField(help_text="timed items done faster than the minimum")
    agreement_with_majority = serializers.FloatField(allow_null=True)
    n_compared = serializers.IntegerField()
    competence = serializers.FloatField(allow_null=True, help_text="on the scale of `method_used`")
    checks_passed = serializers.IntegerField(allow_null=True, help_text="null: no check outcome stored")
    checks_graded = serializers.IntegerField(allow_null=True)
    pasted_items = serializers.IntegerField(allow_null=True, help_text="null: paste events not stored")
    last_active = serializers.DateTimeField(allow_null=True)
    payment = PaymentOutput()
    platform_status = serializers.CharField(
        help_text="what the crowd platform last said (returned, timed_out, approved, ...; empty: nothing known)"
    )


class LiveOutput(serializers.Serializer):
    active_minutes = serializers.IntegerField()
    active_now = serializers.IntegerField()
    items = serializers.IntegerField()
    items_at_k = serializers.IntegerField(help_text="items with k accepted judgements")
    judgements_to_k = serializers.IntegerField()
    per_hour = serializers.FloatField(help_text="submissions per hour over the last hour")
    projected_completion = serializers.DateTimeField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    fast_share = serializers.FloatField(allow_null=True)
    check_failure_rate = serializers.FloatField(allow_null=True, help_text="null: no check outcome stored")
    cost = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()


class RulesOutput(serializers.Serializer):
    per_item = serializers.DecimalField(max_digits=8, decimal_places=2)
    per_accepted_item = serializers.DecimalField(max_digits=8, decimal_places=2)
    gold_bonus = serializers.DecimalField(max_digits=8, decimal_places=2)
    gold_min_percent = serializers.IntegerField()
    currency = serializers.CharField()


class QualityOutput(serializers.Serializer):
    study = serializers.IntegerField(source="study.pk")
    method = serializers.CharField()
    method_used = serializers.CharField(help_text="the method, or majority when the study is too large for a model")
    competence_meaning = serializers.CharField()
    note = serializers.CharField()
    min_seconds = serializers.FloatField()
    n_judgements = serializers.IntegerField()
    workers = WorkerOutput(many=True)
    rules = RulesOutput()
    live = LiveOutput()


class QualityQuery(serializers.Serializer):
    method = serializers.ChoiceField(choices=list(COMPETENCE), default=selectors.DEFAULT_METHOD)
    min_seconds = FiniteFloatField(default=0.0, min_value=0.0, max_value=MAX_MIN_SECONDS)
    active_minutes = serializers.IntegerField(
        default=selectors.DEFAULT_ACTIVE_MINUTES, min_value=1, max_value=selectors.MAX_ACTIVE_MINUTES
    )


class StudyQualityApi(APIView):
    """Every annotator of the study with items done, time per item, agreement, competence, flags, standing
    and payment; the study's live progress and cost so far."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[QualityQuery], responses=QualityOutput)
    def get(self, request: Request, study_id: int) -> Response:
        study = quality_study(request, study_id)
        query = QualityQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(QualityOutput(selectors.study_quality(study=study, **query.validated_data)).data)


class StandingOutput(serializers.Serializer):
    annotator = serializers.IntegerField(source="annotator_id")
    platform = serializers.CharField()
    external_id = serializers.CharField()
    excluded = serializers.BooleanField()
    excluded_reason = serializers.CharField()
    excluded_at = serializers.DateTimeField(allow_null=True)
    review = serializers.CharField()
    bonus = serializers.DecimalField(max_digits=8, decimal_places=2)


class StudyAnnotatorStandingApi(APIView):
    """Exclude (with a reason), reinstate, approve, reject, or set the bonus of one annotator of the study;
    it applies to every analysis and export at once. Replaying an action gives the same standing."""

    permission_classes = RESEARCHERS

    class StandingInput(serializers.Serializer):
        action = serializers.ChoiceField(choices=ACTIONS)
        reason = serializers.CharField(
            required=False, allow_blank=True, max_length=MAX_REASON_CHARS, help_text="exclude: why"
        )
        amount = serializers.CharField(
            required=False, max_length=32, help_text='bonus: the amount, e.g. "1.50" (0 to 1000, two decimals)'
        )

    @extend_schema(request=StandingInput, responses={200: StandingOutput})
    def post(self, request: Request, study_id: int, annotator_id: int) -> Response:
        study = quality_study(request, study_id)
        annotator = study_annotator(study=study, annotator_id=annotator_id)
        if annotator is None:
            raise Http404("No such annotator in this study.")
        payload = self.StandingInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        try:
            participation = participation_act(
                study=study,
                annotator=annotator,
                action=data["action"],
                reason=data.get("reason", ""),
                amount=data.get("amount"),
                by=signed_in_user(request),
            )
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=400)
        return Response(StandingOutput(participation).data)


class StudyPaymentRulesApi(APIView):
    """The study's payment rules: per item, per accepted item, a bonus for gold accuracy (amounts as decimal
    strings; never floats)."""

    permission_classes = RESEARCHERS

    class RulesInput(serializers.Serializer):
        per_item = serializers.CharField(max_length=32, help_text='e.g. "0.10"')
        per_accepted_item = serializers.CharField(max_length=32, default="0")
        gold_bonus = serializers.CharField(max_length=32, default="0")
        gold_min_percent = serializers.IntegerField(default=100, min_value=0, max_value=100)
        currency = serializers.CharField(max_length=3, default="GBP")

    @extend_schema(responses=RulesOutput)
    def get(self, request: Request, study_id: int) -> Response:
        return Response(RulesOutput(selectors.payment_rules_of(study=quality_study(request, study_id))).data)

    @extend_schema(request=RulesInput, responses=RulesOutput)
    def put(self, request: Request, study_id: int) -> Response:
        study = quality_study(request, study_id)
        payload = self.RulesInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            payment_rules_set(study=study, by=signed_in_user(request), **payload.validated_data)
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=400)
        return Response(RulesOutput(selectors.payment_rules_of(study=study)).data)


def _payment_file_schema() -> Any:
    return extend_schema(
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR,
                description="prolific-approve / prolific-reject: one participant id per line; prolific-bonus: "
                "participant_id,amount lines",
            ),
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR, description="mturk: WorkerId,AssignmentId,Approve,Reject,Bonus"
            ),
        }
    )


class StudyPaymentFileApi(APIView):
    """One payment file of the study: prolific-approve, prolific-reject, prolific-bonus or mturk (computed
    from the payment rules now)."""

    permission_classes = RESEARCHERS

    @_payment_file_schema()
    def get(self, request: Request, study_id: int, name: str) -> HttpResponse:
        return payment_file_response(study=quality_study(request, study_id), name=name)
