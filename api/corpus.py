"""Datasets, their import, documents, summaries, explanations and scoring."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors.browse import FLOAT_PARAMETERS, SORTS, summaries_browse
from api.common import RESEARCHERS, dataset_or_404
from common.errors import BrokerUnavailable, ModelLoadError
from common.roles import signed_in_user
from common.uploads import upload_too_large
from corpus import selectors as selectors
from corpus.importers import FORMATS
from corpus.models import Document, Summary
from ingest.services.import_jobs import import_job_create
from scoring.metrics import METRICS, SPECIAL_TOKEN_MODES, STRATEGIES
from scoring.selectors import summary_explanations
from studies.serializers import ImportJobOutput


class DatasetOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    source_format = serializers.CharField()
    created_at = serializers.DateTimeField()
    n_documents = serializers.IntegerField()
    n_summaries = serializers.IntegerField()


class DatasetListApi(ListAPIView):
    """Every dataset (researchers); POST imports a file into a new or existing dataset, all or nothing."""

    permission_classes = RESEARCHERS
    serializer_class = DatasetOutput
    parser_classes = [MultiPartParser]

    class ImportInput(serializers.Serializer):
        file = serializers.FileField(help_text="the file to import (see docs/IMPORT_FORMATS.md)")
        format = serializers.ChoiceField(choices=sorted(FORMATS))
        name = serializers.CharField(max_length=200, help_text="dataset name: created, or updated when it exists")

    def get_queryset(self) -> Any:
        return selectors.datasets_with_counts()

    @extend_schema(
        request=ImportInput,
        responses={202: ImportJobOutput, 413: None, 503: None},
        description="Stores the file and queues its import on a worker (the same import as `manage.py "
        "import_dataset`: all or nothing). Answers 202 with the job: GET its `url` for the status, the lines "
        "read so far and, when it failed, errors naming file, line and field. A body over "
        "FAITHANNO_UPLOAD_MAX_BYTES answers 413; no reachable worker queue answers 503.",
    )
    def post(self, request: Request) -> HttpResponse:  # a Response, or the app's 413 page
        payload = self.ImportInput(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        if upload.size > settings.FAITHANNO_UPLOAD_MAX_BYTES:
            return upload_too_large(request, upload.size)
        try:
            job = import_job_create(
                user=signed_in_user(request),
                upload=upload,
                format_name=payload.validated_data["format"],
                name=payload.validated_data["name"],
            )
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        job.refresh_from_db()
        body = ImportJobOutput(job, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class DatasetDetailApi(APIView):
    permission_classes = RESEARCHERS

    @extend_schema(responses=DatasetOutput)
    def get(self, request: Request, dataset_id: int) -> Response:
        return Response(DatasetOutput(dataset_or_404(dataset_id)).data)


class DocumentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    dataset = serializers.IntegerField(source="dataset_id")
    external_id = serializers.CharField()
    title = serializers.CharField()
    meta = serializers.JSONField()
    n_summaries = serializers.IntegerField()


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("q", str, description="id or title contains")]))
class DocumentListApi(ListAPIView):
    """The documents of a dataset (without their texts: fetch one document for that)."""

    permission_classes = RESEARCHERS
    serializer_class = DocumentOutput

    def get_queryset(self) -> Any:
        search = self.request.query_params.get("q", "").strip()
        return selectors.dataset_documents(dataset=dataset_or_404(self.kwargs["dataset_id"]), search=search)


class SummaryBriefOutput(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    system = serializers.CharField()
    is_reference = serializers.BooleanField()


class DocumentDetailOutput(serializers.Serializer):
    id = serializers.IntegerField()
    dataset = serializers.IntegerField(source="dataset_id")
    external_id = serializers.CharField()
    title = serializers.CharField()
    text = serializers.CharField()
    sentences = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()), help_text="[start, end] of each sentence"
    )
    meta = serializers.JSONField()
    summaries = SummaryBriefOutput(many=True, source="summaries.all")


class DocumentDetailApi(APIView):
    permission_classes = RESEARCHERS

    @extend_schema(responses=DocumentDetailOutput)
    def get(self, request: Request, document_id: int) -> Response:
        try:
            document = selectors.document_get(document_id=document_id)
        except Document.DoesNotExist:
            return Response({"detail": "No such document."}, status=status.HTTP_404_NOT_FOUND)
        return Response(DocumentDetailOutput(document).data)


class ScoresField(serializers.DictField):
    """Imported scores as {name: value}, from the prefetched rows."""

    child = serializers.FloatField()

    def to_representation(self, value: Any) -> dict[str, float]:
        return {score.name: score.value for score in value.all()}


class SummaryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    document = serializers.IntegerField(source="document_id")
    document_external_id = serializers.CharField(source="document.external_id")
    external_id = serializers.CharField()
    system = serializers.CharField()
    is_reference = serializers.BooleanField()
    text = serializers.CharField()
    human_scores = ScoresField()
    metric_scores = ScoresField()


class SummaryDetailOutput(SummaryOutput):
    dataset = serializers.IntegerField(source="document.dataset_id")
    sentences = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    meta = serializers.JSONField()


class BrowsedSummaryOutput(SummaryOutput):
    metric_value = serializers.FloatField(allow_null=True, required=False, help_text="the `metric` asked for")
    human_value = serializers.FloatField(allow_null=True, required=False, help_text="the `human` score asked for")
    gap = serializers.FloatField(allow_null=True, required=False, help_text="metric minus human score")
    disagreement = serializers.FloatField(
        allow_null=True, help_text="share of judged units the annotators did not all agree on"
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        row = super().to_representation(instance)
        # Present only when the request chose the scores; the shape of a row stays the same either way.
        for name in ("metric_value", "human_value", "gap"):
            row[name] = getattr(instance, name, None)
        return row


def _browse_parameters() -> list[OpenApiParameter]:
    text = {
        "document": (int, "only this document (id)"),
        "reference": (bool, "only reference summaries (true) or only system summaries (false)"),
        "q": (str, "text in the summary, or a document's external id"),
        "metric": (str, "metric score to show, filter and sort by (imported, computed, or e.g. bertscore.f1)"),
        "human": (str, "human score to show, filter and sort by"),
        "error_type": (str, "BUMP's edit type or a FRANK error category"),
    }
    parameters = [OpenApiParameter(name, kind, description=help_text) for name, (kind, help_text) in text.items()]
    parameters.append(OpenApiParameter("system", str, many=True, explode=True, description="only these systems"))
    parameters += [OpenApiParameter(name, float, description=f"{name.replace('_', ' ')}") for name in FLOAT_PARAMETERS]
    sorts = [prefix + key for key in SORTS for prefix in ("", "-")]
    parameters.append(OpenApiParameter("sort", str, enum=sorts, description="- in front sorts descending"))
    return parameters


@extend_schema_view(get=extend_schema(parameters=_browse_parameters()))
class SummaryListApi(ListAPIView):
    """The summaries of a dataset, filtered and sorted by the parameters of the browse page; a malformed
    parameter answers 400 naming it."""

    permission_classes = RESEARCHERS
    serializer_class = BrowsedSummaryOutput

    def get_queryset(self) -> Any:
        dataset = dataset_or_404(self.kwargs["dataset_id"])
        # A malformed parameter raises InputError: a 400 naming it (faithanno.middleware).
        summaries = summaries_browse(
            dataset=dataset, params=self.request.query_params, user=signed_in_user(self.request)
        )
        return selectors.summaries_with_scores(summaries)


class SummaryDetailApi(APIView):
    permission_classes = RESEARCHERS

    @extend_schema(responses=SummaryDetailOutput)
    def get(self, request: Request, summary_id: int) -> Response:
        try:
            summary = selectors.summary_get(summary_id=summary_id)
        except Summary.DoesNotExist:
            return Response({"detail": "No such summary."}, status=status.HTTP_404_NOT_FOUND)
        return Response(SummaryDetailOutput(summary).data)


class ExplanationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    summary = serializers.IntegerField(source="summary_id")
    metric = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    scores = serializers.JSONField()
    payload = serializers.JSONField(help_text="the evidence; its layout per metric is in docs/EXPLANATIONS.md")
    error = serializers.CharField()
    config = serializers.JSONField()
    config_hash = serializers.CharField()
    model_ids = serializers.JSONField()
    code_version = serializers.CharField()
    created_at = serializers.DateTimeField()


class ExplanationListApi(APIView):
    """Every explanation of a summary: each metric's score with its evidence and configuration."""

    permission_classes = RESEARCHERS

    @extend_schema(responses=ExplanationOutput(many=True))
    def get(self, request: Request, summary_id: int) -> Response:
        summary = get_object_or_404(Summary, pk=summary_id)
        return Response(ExplanationOutput(summary_explanations(summary=summary), many=True).data)


class ScoreReportOutput(serializers.Serializer):
    metric = serializers.CharField()
    config_hash = serializers.CharField()
    total = serializers.IntegerField()
    already_done = serializers.IntegerField()
    computed = serializers.IntegerField()
    failed = serializers.IntegerField()
    left_to_others = serializers.IntegerField()
    failures = serializers.ListField(child=serializers.CharField())
    notice = serializers.CharField()
    unavailable = serializers.CharField()


class EnqueueReportOutput(serializers.Serializer):
    metric = serializers.CharField()
    config_hash = serializers.CharField()
    documents = serializers.IntegerField()
    summaries = serializers.IntegerField()
    tasks = serializers.ListField(child=serializers.CharField())
    notice = serializers.CharField()


class ScoringApi(APIView):
    """Compute explanations for a dataset, as `manage.py score` does: "sync" computes them in the request
    (small datasets only), "enqueue" hands them to the Celery workers like `score --enqueue`."""

    permission_classes = RESEARCHERS

    class ScoringInput(serializers.Serializer):
        metrics = serializers.ListField(
            child=serializers.ChoiceField(choices=[*METRICS, "all"]),
            min_length=1,
            help_text="'all' runs every metric, cheap ones first",
        )
        mode = serializers.ChoiceField(choices=["sync", "enqueue"], default="sync")
        layer = serializers.IntegerField(required=False, min_value=1, help_text="BERTScore: encoder layer")
        strategy = serializers.ChoiceField(choices=STRATEGIES, required=False)
        special_tokens = serializers.ChoiceField(choices=SPECIAL_TOKEN_MODES, required=False)
        idf = serializers.BooleanField(required=False, default=False)
        k = serializers.IntegerField(required=False, min_value=1, help_text="top-k entailment")
        retry_failed = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        request=ScoringInput,
        responses={200: ScoreReportOutput(many=True), 202: EnqueueReportOutput(many=True)},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        payload = self.ScoringInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        metrics = list(METRICS) if "all" in data["metrics"] else list(dict.fromkeys(data["metrics"]))
        overrides = {
            "layer": data.get("layer"),
            "strategy": data.get("strategy"),
            "special_tokens": data.get("special_tokens"),
            "idf": data["idf"] or None,
            "k": data.get("k"),
        }
        # The scoring code loads torch: imported by the requests that score, never by the web process at start.
        from scoring.services import explanations_compute_many, explanations_enqueue

        try:
            if data["mode"] == "enqueue":
                enqueued = explanations_enqueue(dataset=dataset, metrics=metrics, options=overrides)
                return Response(
                    EnqueueReportOutput([vars(r) for r in enqueued], many=True).data, status=status.HTTP_202_ACCEPTED
                )
            # n_summaries: counted by datasets_with_counts (dataset_or_404), which django-stubs does not see.
            n_summaries: int = dataset.n_summaries  # type: ignore[attr-defined]
            if n_summaries > settings.API_SYNC_SCORING_MAX_SUMMARIES:
                return Response(
                    {
                        "mode": f"{n_summaries} summaries are more than a request computes "
                        f"({settings.API_SYNC_SCORING_MAX_SUMMARIES}); use mode 'enqueue'."
                    },
                    status=status.HTTP_400_BAD_REQUEST,
                )
            reports = explanations_compute_many(
                dataset=dataset, metrics=metrics, options=overrides, retry_failed=data["retry_failed"]
            )
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        except (ModelLoadError, ValueError) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ScoreReportOutput([r.as_dict() for r in reports], many=True).data)
