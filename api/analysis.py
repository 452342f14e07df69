"""Analyses (agreement, correlations, meta-evaluation, the BERTScore highlighter) and the downloads."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors import analysis as selectors
from analysis.views.downloads import judgements_download, summaries_download
from api.common import RESEARCHERS, dataset_or_404, visible_study
from common.exports import EXPORT_FORMATS
from stats.correlation import LEVELS as CORRELATION_LEVELS
from stats.correlation import METHODS
from stats.metaeval import PROTOCOLS
from studies.models import Study, StudyTask

# Resamples for a confidence interval: the command's default; more would let one request hold a worker.
MAX_BOOTSTRAP = 1000


class CommaList(serializers.ListField):
    """A query parameter given as "a,b" or repeated (?metrics=a&metrics=b)."""

    def get_value(self, dictionary: Any) -> Any:
        if self.field_name not in dictionary:
            return serializers.empty
        values = dictionary.getlist(self.field_name)
        return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Checked query parameters; a malformed one answers 400 with its name as the key."""
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


def _unknown(parameter: str, values: list[str], known: list[str]) -> Response | None:
    missing = [value for value in values if value not in known]
    if not missing:
        return None
    return Response({parameter: [f"Unknown: {', '.join(missing)}. Known: {', '.join(known) or 'none'}."]}, status=400)


def _analysis_error(exc: selectors.AnalysisError) -> Response:
    return Response({"detail": str(exc)}, status=400)


class AgreementTableItem(serializers.Serializer):
    item_id = serializers.IntegerField()
    unit = serializers.IntegerField(allow_null=True)
    labels = serializers.DictField(source="agreement.labels")
    majority = serializers.JSONField(source="agreement.majority")
    agreement = serializers.FloatField(source="agreement.agreement")
    spread = serializers.FloatField(source="agreement.spread", allow_null=True)


class AgreementAnnotator(serializers.Serializer):
    annotator = serializers.CharField()
    n_judgements = serializers.IntegerField()
    n_compared = serializers.IntegerField()
    agreement_with_majority = serializers.FloatField(allow_null=True)


class AgreementOutput(serializers.Serializer):
    study = serializers.IntegerField(source="study_task.study_id")
    study_task = serializers.IntegerField(source="study_task.pk")
    task = serializers.CharField(source="study_task.task")
    results = serializers.ListField(
        child=serializers.DictField(), help_text="every coefficient that applies: fleiss, krippendorff, percent"
    )
    n_items = serializers.IntegerField(source="tables.n_items")
    items = AgreementTableItem(many=True, source="tables.items", help_text="the most disagreed units")
    annotators = AgreementAnnotator(many=True, source="tables.annotators")


class AgreementQuery(serializers.Serializer):
    dont_know_as_incorrect = serializers.BooleanField(default=False, help_text="thesis footnote 4")
    limit = serializers.IntegerField(default=50, min_value=0, max_value=1000, help_text="most disagreed units")


def _agreements(tasks: Any, query: dict[str, Any]) -> list[Any]:
    return [
        selectors.agreement_overview(
            study_task=study_task, dont_know_as_incorrect=query["dont_know_as_incorrect"], limit=query["limit"]
        )
        for study_task in tasks.select_related("study__dataset")
    ]


class StudyAgreementApi(APIView):
    """Agreement of each task of the study: Fleiss' kappa, Krippendorff's alpha, percent agreement."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[AgreementQuery], responses=AgreementOutput(many=True))
    def get(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        query = _query(AgreementQuery, request)
        return Response(AgreementOutput(_agreements(study.tasks, query), many=True).data)


class DatasetAgreementApi(APIView):
    """Agreement of the dataset's imported crowd labels, per task."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[AgreementQuery], responses=AgreementOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        query = _query(AgreementQuery, request)
        imported = StudyTask.objects.filter(study__dataset=dataset, study__kind=Study.Kind.IMPORTED)
        return Response(AgreementOutput(_agreements(imported, query), many=True).data)


class CorrelationQuery(serializers.Serializer):
    human = serializers.CharField(help_text="human score name; default: the dataset's first", required=False)
    metrics = CommaList(child=serializers.CharField(), required=False, help_text="default: every metric")
    method = CommaList(child=serializers.ChoiceField(choices=METHODS), required=False, help_text="default: pearson")
    level = serializers.ChoiceField(choices=CORRELATION_LEVELS, default="summary")
    partial_by = serializers.ChoiceField(choices=["system"], required=False, help_text="partial out the system")
    bootstrap = serializers.IntegerField(default=200, min_value=0, max_value=MAX_BOOTSTRAP)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)


class CorrelationOutput(serializers.Serializer):
    metric = serializers.CharField()
    human = serializers.CharField()
    method = serializers.CharField()
    level = serializers.CharField()
    partial_by = serializers.CharField(allow_null=True)
    r = serializers.FloatField(allow_null=True)
    p = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    n_missing = serializers.IntegerField()
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n_bootstrap = serializers.IntegerField()
    reason = serializers.CharField(help_text="why r is undefined, if it is")


class DatasetCorrelationsApi(APIView):
    """Correlation of each metric with a human score (summary or system level, bootstrap interval)."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[CorrelationQuery], responses=CorrelationOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        query = _query(CorrelationQuery, request)
        humans = selectors.human_names(dataset=dataset)
        human = query.get("human") or (humans[0] if humans else None)
        if human is None:
            return Response({"human": [f"Dataset {dataset.name!r} has no human scores."]}, status=400)
        metrics = query.get("metrics") or selectors.metric_names(dataset=dataset)
        refused = _unknown("human", [human], humans) or _unknown(
            "metrics", metrics, selectors.metric_names(dataset=dataset)
        )
        if refused:
            return refused
        try:
            rows = selectors.dataset_correlations(
                dataset=dataset,
                human=human,
                metrics=metrics,
                methods=query.get("method") or ["pearson"],
                level=query["level"],
                partial_by=query.get("partial_by"),
                bootstrap=query["bootstrap"],
                seed=query["seed"],
            )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)
        return Response(CorrelationOutput(rows, many=True).data)


class MetaEvaluationQuery(serializers.Serializer):
    protocol = serializers.ChoiceField(choices=PROTOCOLS, default="roc_auc")
    metrics = CommaList(child=serializers.CharField(), required=False, help_text="default: every metric")
    by_error_type = serializers.BooleanField(default=False)


class MetaEvaluationOutput(serializers.Serializer):
    metric = serializers.CharField()
    protocol = serializers.CharField()
    group = serializers.CharField(help_text="'overall', or the error type")
    value = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    n_missing = serializers.IntegerField()
    reason = serializers.CharField()


class DatasetMetaEvaluationApi(APIView):
    """How well each metric separates faithful from unfaithful summaries of the same pair."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[MetaEvaluationQuery], responses=MetaEvaluationOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        query = _query(MetaEvaluationQuery, request)
        metrics = query.get("metrics") or None
        refused = metrics and _unknown("metrics", metrics, selectors.metric_names(dataset=dataset))
        if refused:
            return refused
        try:
            rows = selectors.dataset_meta_evaluation(
                dataset=dataset, protocol=query["protocol"], metrics=metrics, by_error_type=query["by_error_type"]
            )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)
        return Response(MetaEvaluationOutput(rows, many=True).data)


class HighlighterOutput(serializers.Serializer):
    threshold = serializers.FloatField()
    precision = serializers.FloatField(allow_null=True)
    recall = serializers.FloatField(allow_null=True)
    f1 = serializers.FloatField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    fn = serializers.IntegerField()
    tn = serializers.IntegerField()


class DatasetHighlighterApi(APIView):
    """BERTScore as a hallucination highlighter: precision, recall, F1 and accuracy per threshold."""

    permission_classes = RESEARCHERS

    @extend_schema(responses=HighlighterOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        try:
            return Response(
                HighlighterOutput(selectors.dataset_highlighter(dataset=dataset, user=request.user), many=True).data
            )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)


FORMAT_PARAMETER = OpenApiParameter(
    "format_name", OpenApiTypes.STR, OpenApiParameter.PATH, enum=sorted(EXPORT_FORMATS), description="csv or jsonl"
)
DOWNLOAD = extend_schema(
    parameters=[FORMAT_PARAMETER],
    responses={
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="streamed CSV with a header row"),
        (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="streamed JSON lines"),
        (400, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="unknown format"),
    },
)


class DatasetSummariesExportApi(APIView):
    """Every summary of the dataset with every human, metric and human-enhanced score (the web download)."""

    permission_classes = RESEARCHERS

    @DOWNLOAD
    def get(self, request: Request, dataset_id: int, format_name: str) -> HttpResponse:
        return summaries_download(
            dataset=dataset_or_404(dataset_id), study=None, user=request.user, format_name=format_name
        )


class DatasetJudgementsExportApi(APIView):
    """The dataset's imported judgements (crowd labels), in the layout of a study's."""

    permission_classes = RESEARCHERS

    @DOWNLOAD
    def get(self, request: Request, dataset_id: int, format_name: str) -> HttpResponse:
        study = get_object_or_404(
            Study.objects.select_related("dataset"), dataset_id=dataset_id, kind=Study.Kind.IMPORTED
        )
        return judgements_download(study=study, format_name=format_name, filename=f"dataset-{dataset_id}-judgements")


class StudySummariesExportApi(APIView):
    permission_classes = RESEARCHERS

    @DOWNLOAD
    def get(self, request: Request, study_id: int, format_name: str) -> HttpResponse:
        study = visible_study(request, study_id)
        return summaries_download(dataset=study.dataset, study=study, user=request.user, format_name=format_name)


class StudyJudgementsExportApi(APIView):
    permission_classes = RESEARCHERS

    @DOWNLOAD
    def get(self, request: Request, study_id: int, format_name: str) -> HttpResponse:
        study = visible_study(request, study_id)
        return judgements_download(study=study, format_name=format_name, filename=f"study-{study.pk}-judgements")
