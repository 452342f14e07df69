"""LLM judges: start one on a study task, list a study's runs, read a run with every item's exact prompt."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import RESEARCHERS, visible_study
from common.errors import BrokerUnavailable
from common.roles import signed_in_user
from common.validation import errors_by_field
from judges.selectors import judge_run_items, judge_runs_for_study, judge_runs_for_user
from judges.services import JudgeSpec, judge_run_start


class JudgeRunOutput(serializers.Serializer):
    """A run; the API key is never part of it (nor of anything else the API answers)."""

    id = serializers.IntegerField()
    task = serializers.CharField(source="study_task.task")
    study = serializers.IntegerField(source="study_task.study_id")
    rater = serializers.CharField(source="rater.user.username", help_text="the model rater's account (role model)")
    endpoint = serializers.CharField(source="rater.endpoint")
    model = serializers.CharField(source="rater.model")
    parameters = serializers.JSONField(source="rater.parameters")
    status = serializers.CharField()
    reason = serializers.CharField()
    api_key_variable = serializers.CharField(help_text="the environment variable the key is read from, if any")
    max_requests = serializers.IntegerField()
    max_tokens = serializers.IntegerField()
    max_seconds = serializers.IntegerField()
    tries = serializers.IntegerField()
    guidelines_version = serializers.IntegerField()
    items_total = serializers.IntegerField()
    judged = serializers.IntegerField()
    failed = serializers.IntegerField()
    cached = serializers.IntegerField()
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    seconds = serializers.FloatField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class JudgeItemOutput(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    status = serializers.CharField()
    model = serializers.CharField()
    endpoint = serializers.CharField()
    parameters = serializers.JSONField()
    prompt = serializers.JSONField(help_text="the chat messages exactly as sent")
    prompt_hash = serializers.CharField()
    response = serializers.CharField()
    reason = serializers.CharField(help_text="why each try failed (a failed item has no label)")
    tries = serializers.IntegerField()
    from_cache = serializers.BooleanField()


class StudyJudgeRunsApi(ListAPIView):
    """A study's LLM judge runs (GET), or start one on a task (POST: queued on a worker; 503 when no worker
    queue is reachable). The key goes in `api_key` (kept until the run ends, never answered back) or is read
    from the environment variable `api_key_variable` (FAITHANNO_LLM_API_KEY or FAITHANNO_LLM_API_KEY_<NAME>)."""

    permission_classes = RESEARCHERS
    serializer_class = JudgeRunOutput

    class JudgeRunInput(serializers.Serializer):
        task = serializers.CharField(max_length=50, help_text="the task's key, e.g. factuality")
        endpoint = serializers.CharField(max_length=500, help_text="the chat API's base URL, e.g. http://host/v1")
        model = serializers.CharField(max_length=200)
        api_key = serializers.CharField(max_length=500, required=False, default="", write_only=True)
        api_key_variable = serializers.CharField(max_length=100, required=False, default="")
        parameters = serializers.JSONField(required=False, default=dict, help_text="temperature, max_tokens, seed")
        max_requests = serializers.IntegerField(required=False, default=1000)
        max_tokens = serializers.IntegerField(required=False, default=2_000_000)
        max_seconds = serializers.IntegerField(required=False, default=3600)
        tries = serializers.IntegerField(required=False, allow_null=True, default=None)

    def get_queryset(self) -> Any:
        return judge_runs_for_study(study=visible_study(self.request, self.kwargs["study_id"])).order_by("-pk")

    @extend_schema(request=JudgeRunInput, responses={202: JudgeRunOutput, 400: None, 503: None})
    def post(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        payload = self.JudgeRunInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        study_task = study.tasks.filter(task=data["task"]).first()
        if study_task is None:
            return Response({"task": [f"The study has no task {data['task']!r}."]}, status=400)
        spec = JudgeSpec(
            study_task=study_task, created_by=signed_in_user(request), **{k: v for k, v in data.items() if k != "task"}
        )
        try:
            run = judge_run_start(spec=spec)
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=400)
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(JudgeRunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class JudgeRunApi(APIView):
    """One run: its status, budget and counts (its items: JudgeRunItemsApi, a page at a time)."""

    permission_classes = RESEARCHERS

    @extend_schema(responses=JudgeRunOutput)
    def get(self, request: Request, run_id: int) -> Response:
        return Response(
            JudgeRunOutput(get_object_or_404(judge_runs_for_user(user=signed_in_user(request)), pk=run_id)).data
        )


class JudgeRunItemsApi(ListAPIView):
    """Every item the run decided, in item order: the exact prompt, model and parameters, the answer and,
    for a failed item, every try's reason (a failed item has no label)."""

    permission_classes = RESEARCHERS
    serializer_class = JudgeItemOutput

    def get_queryset(self) -> Any:
        run = get_object_or_404(judge_runs_for_user(user=signed_in_user(self.request)), pk=self.kwargs["run_id"])
        return judge_run_items(run=run)
