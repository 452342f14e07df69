"""Analyses (agreement, correlations, meta-evaluation, the BERTScore highlighter) and the downloads."""

from __future__ import annotations

from typing import Any

from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors import analysis as selectors
from analysis.selectors import analysis_groups, conditions
from analysis.selectors.analysis import GOLDS, MAJORITY_GOLD
from analysis.selectors.exports import CHECK_SETS, CHECKS_EXCLUDE
from analysis.views.downloads import judgements_download, summaries_download
from api.common import RESEARCHERS, dataset_or_404, visible_study
from api.fields import FiniteFloatField
from common.exports import EXPORT_FORMATS
from common.roles import signed_in_user
from crowd.selectors.crowd import CROWD_EXPORTS, crowd_study_of
from crowd.views.researcher import crowd_export_response
from review.selectors.quality import MAX_MODELLED_JUDGEMENTS
from stats.agreement import LEVELS
from stats.correlation import LEVELS as CORRELATION_LEVELS
from stats.correlation import METHODS
from stats.crowd_quality import MAJORITY
from stats.metaeval import BALANCED_ACCURACY, PROTOCOLS
from studies.models import Study, StudyTask
from studies.selectors.participation import ACCEPTED, JUDGEMENT_SET_NAMES, JUDGEMENT_SETS, excluded_annotator_ids
from studies.selectors.studies import study_task_progress
from studies.selectors.tasks import dataset_imported_study, dataset_imported_tasks, study_tasks

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


JUDGEMENTS_HELP = "; ".join(f"{name}: {meaning}" for name, meaning in JUDGEMENT_SET_NAMES.items())


class JudgementSetQuery(serializers.Serializer):
    judgements = serializers.ChoiceField(choices=JUDGEMENT_SETS, default=ACCEPTED, help_text=JUDGEMENTS_HELP)


def _analysis_error(exc: selectors.AnalysisError) -> Response:
    return Response({"detail": str(exc)}, status=400)


class AgreementTableItem(serializers.Serializer):
    item_id = serializers.IntegerField()
    unit = serializers.IntegerField(allow_null=True)
    unit_text = serializers.CharField(help_text="the word, sentence or question judged; empty for span tasks")
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
    judgements = serializers.ChoiceField(choices=JUDGEMENT_SETS, help_text="which judgements: " + JUDGEMENTS_HELP)
    results = serializers.ListField(
        child=serializers.DictField(), help_text="every coefficient that applies: fleiss, krippendorff, percent"
    )
    undefined_reason = serializers.CharField(help_text="why no coefficient applies to the task (results empty)")
    fewest_raters = serializers.IntegerField(
        allow_null=True, help_text="the fewest annotators a judged unit has, when fewer than annotators_per_item"
    )
    annotators_per_item = serializers.IntegerField()
    model_raters = serializers.ListField(
        child=serializers.CharField(),
        help_text="the raters that are LLM judges (model raters): in every coefficient and table, never counted "
        "as annotators (fewest_raters counts people only)",
    )
    n_items = serializers.IntegerField(source="tables.n_items", help_text="units rated by two or more annotators")
    n_single = serializers.IntegerField(source="tables.n_single", help_text="units rated by one annotator, not listed")
    items = AgreementTableItem(
        many=True, source="tables.items", help_text="the most disagreed units rated by two or more annotators"
    )
    annotators = AgreementAnnotator(many=True, source="tables.annotators")
    analysis = serializers.JSONField(
        allow_null=True,
        help_text="with `coefficient`: that coefficient overall (with `interval` when bootstrap > 0) or, with `by`, "
        "`groups` [{group, value, n_items, n_dropped, reason}], `mean`, `n_groups`, `n_undefined`; with "
        "`metric_rater`: `metric_raters`, each metric's agreement beside the humans'",
    )


class AgreementQuery(JudgementSetQuery):
    dont_know_as_incorrect = serializers.BooleanField(default=False, help_text="thesis footnote 4")
    limit = serializers.IntegerField(default=50, min_value=0, max_value=1000, help_text="most disagreed units")
    task = serializers.CharField(required=False, help_text="only this task")
    coefficient = serializers.ChoiceField(
        choices=analysis_groups.AGREEMENT_COEFFICIENTS, required=False, help_text="compute `analysis` with it"
    )
    level = serializers.ChoiceField(choices=LEVELS, default="nominal", help_text="Krippendorff's level")
    weights = serializers.ChoiceField(choices=analysis_groups.WEIGHTS, default="identity", help_text="Gwet, B-P")
    by = serializers.CharField(required=False, help_text="'system' or 'meta.KEY': the coefficient per group")
    typed = serializers.BooleanField(default=False, help_text="alpha_u: the span type counts")
    span_unit = serializers.ChoiceField(choices=selectors.SPAN_UNITS, default="word")
    bootstrap = serializers.IntegerField(default=0, min_value=0, max_value=MAX_BOOTSTRAP)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)
    metric_rater = CommaList(child=serializers.CharField(), required=False, help_text="metrics as raters")
    thresholds = CommaList(
        child=FiniteFloatField(), required=False, help_text="increasing cut points binning the metric into the labels"
    )
    tuned_thresholds = serializers.BooleanField(
        default=False, help_text="instead of thresholds: the balanced-accuracy threshold against the human majority"
    )
    aggregation = serializers.ChoiceField(
        choices=analysis_groups.REFERENCES,
        default=MAJORITY,
        help_text="metric raters: the human reference label (majority vote, a crowd model: docs/CROWD_CHECKS.md, "
        "or 'final': the study's final labels, adjudication)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = bool(attrs.get("thresholds")) or attrs["tuned_thresholds"]
        if bool(attrs.get("metric_rater")) != given:
            raise serializers.ValidationError(
                {"thresholds": ["metric_rater goes with thresholds (or tuned_thresholds)."]}
            )
        return attrs


def _agreement_analysis(study_task: StudyTask, query: dict[str, Any]) -> dict[str, object] | None:
    if not (query.get("coefficient") or query.get("by") or query.get("metric_rater") or query["bootstrap"]):
        return None
    coefficient = query.get("coefficient") or "fleiss"
    data = analysis_groups.agreement_analysis(
        study_task=study_task,
        coefficient=coefficient,
        level=query["level"],
        weights=query["weights"],
        by=query.get("by"),
        typed=query["typed"],
        dont_know_as_incorrect=query["dont_know_as_incorrect"],
        span_unit=query["span_unit"],
        bootstrap=query["bootstrap"],
        seed=query["seed"],
        judgements=query["judgements"],
    )
    if query.get("metric_rater"):
        data["metric_raters"] = analysis_groups.metric_rater_analysis(
            study_task=study_task,
            metrics=query["metric_rater"],
            thresholds=[None if query["tuned_thresholds"] else query["thresholds"]],
            coefficient=coefficient,
            level=query["level"],
            weights=query["weights"],
            dont_know_as_incorrect=query["dont_know_as_incorrect"],
            seed=query["seed"],
            aggregation=query["aggregation"],
            max_modelled_judgements=MAX_MODELLED_JUDGEMENTS,
            judgements=query["judgements"],
        )
    return data


def _agreements(tasks: Any, query: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            **vars(
                selectors.agreement_overview(
                    study_task=study_task,
                    dont_know_as_incorrect=query["dont_know_as_incorrect"],
                    limit=query["limit"],
                    judgements=query["judgements"],
                )
            ),
            "analysis": _agreement_analysis(study_task, query),
        }
        for study_task in tasks
    ]


class StudyAgreementApi(APIView):
    """Agreement of each task of the study: Fleiss' kappa, Krippendorff's alpha, percent agreement."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[AgreementQuery], responses=AgreementOutput(many=True))
    def get(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        query = _query(AgreementQuery, request)
        try:
            tasks = study_tasks(study=study, task=query.get("task"))
            return Response(AgreementOutput(_agreements(tasks, query), many=True).data)
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)


class ConditionsQuery(JudgementSetQuery):
    dont_know_as_incorrect = serializers.BooleanField(default=False, help_text="thesis footnote 4")
    task = serializers.CharField(required=False, help_text="only this task")
    resamples = serializers.IntegerField(
        default=conditions.CONDITION_RESAMPLES,
        min_value=0,
        max_value=MAX_BOOTSTRAP,
        help_text="bootstrap resamples of the items, and permutations of the conditions",
    )
    seed = serializers.IntegerField(default=conditions.CONDITION_SEED, min_value=0, max_value=2**32 - 1)


class ConditionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    position = serializers.IntegerField()
    evidence = serializers.CharField(help_text="the metric's highlights: shown, hidden or shuffled")


class TaskConditionsOutput(serializers.Serializer):
    study_task = serializers.IntegerField(source="study_task_id")
    task = serializers.CharField()
    n_without_condition = serializers.IntegerField(help_text="counted judgements without a condition, left out")
    reason = serializers.CharField(help_text="why the task's conditions are not compared (comparison null)")
    comparison = serializers.JSONField(
        allow_null=True,
        source="comparison_dict",
        help_text="stats.conditions.ConditionComparison: `conditions` (each condition's counts, label "
        "`distribution`, `alpha` with `alpha_interval`, `fleiss`, `time`, `gold`) and `contrasts` (each "
        "condition against the first: `homogeneity` chi-square, `alpha_difference` with its bootstrap interval, "
        "time differences, `gold_difference` with its permutation p-value); undefined figures are null with a "
        "`reason` (README, the analyses: conditions)",
    )


class StudyConditionsOutput(serializers.Serializer):
    study = serializers.IntegerField()
    design = serializers.CharField(help_text="between or within annotators")
    judgements = serializers.ChoiceField(choices=JUDGEMENT_SETS, help_text="which judgements: " + JUDGEMENTS_HELP)
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    conditions = ConditionOutput(many=True, help_text="the first is the reference")
    tasks = TaskConditionsOutput(many=True, help_text="empty when the study has fewer than two conditions")


class StudyConditionsApi(APIView):
    """The study's conditions compared per task: label distributions, agreement, time, agreement with the
    final labels, each condition against the first (the study page's Conditions section)."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[ConditionsQuery], responses=StudyConditionsOutput)
    def get(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        query = _query(ConditionsQuery, request)
        tasks = list(study_tasks(study=study, task=query.get("task")))
        arms = conditions.study_conditions(study=study)
        compared = []
        if len(arms) >= 2:
            compared = conditions.conditions_compare_cached(
                study=study,
                study_tasks=tasks,
                conditions=arms,
                progress=study_task_progress(study=study, study_tasks=tasks),
                excluded=excluded_annotator_ids(study=study),
                judgements=query["judgements"],
                dont_know_as_incorrect=query["dont_know_as_incorrect"],
                resamples=query["resamples"],
                seed=query["seed"],
            )
        data = {
            "study": study.pk,
            "design": study.condition_design,
            "judgements": query["judgements"],
            "resamples": query["resamples"],
            "seed": query["seed"],
            "conditions": arms,
            "tasks": compared,
        }
        return Response(StudyConditionsOutput(data).data)


class DatasetAgreementApi(APIView):
    """Agreement of the dataset's imported crowd labels, per task."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[AgreementQuery], responses=AgreementOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        query = _query(AgreementQuery, request)
        imported = dataset_imported_tasks(dataset=dataset, task=query.get("task"))
        try:
            return Response(AgreementOutput(_agreements(imported, query), many=True).data)
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)


class CorrelationQuery(serializers.Serializer):
    human = serializers.CharField(
        help_text="human score name, or study:<id>:<task> for a study's judgements; default: the dataset's "
        "primary human score",
        required=False,
    )
    gold = serializers.ChoiceField(
        choices=GOLDS,
        default=MAJORITY_GOLD,
        help_text="a study's judgements as the human score (human=study:<id>:<task>): each unit's majority label "
        "or its final label (adjudicated gold); units without one are left out and counted (n_left_out)",
    )
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
    excluded = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="document level: documents left out, by reason"
    )
    reason = serializers.CharField(help_text="why r is undefined, if it is")
    n_units = serializers.IntegerField(required=False, help_text="a study's judged units")
    gold = serializers.CharField(required=False, help_text="the gold of a study's judgements; empty otherwise")
    n_left_out = serializers.IntegerField(required=False, help_text="a study's judged units without a gold label")


class DatasetCorrelationsApi(APIView):
    """Correlation of each metric with a human score (summary or system level, bootstrap interval)."""

    permission_classes = RESEARCHERS

    @extend_schema(parameters=[CorrelationQuery], responses=CorrelationOutput(many=True))
    def get(self, request: Request, dataset_id: int) -> Response:
        dataset = dataset_or_404(dataset_id)
        query = _query(CorrelationQuery, request)
        human_choices = selectors.human_score_choices(dataset=dataset)
        humans = human_choices.names + selectors.study_human_names(dataset=dataset, user=signed_in_user(request))
        human = query.get("human") or human_choices.primary
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
                gold=query["gold"],
                user=signed_in_user(request),
            )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)
        return Response(CorrelationOutput(rows, many=True).data)


class MetaEvaluationQuery(serializers.Serializer):
    protocol = serializers.ChoiceField(choices=PROTOCOLS, default="roc_auc")
    metrics = CommaList(child=serializers.CharField(), required=False, help_text="default: every metric")
    by_error_type = serializers.BooleanField(default=False)
    label_key = serializers.CharField(required=False, help_text="binary labels: the meta key of each summary's label")
    human = serializers.CharField(required=False, help_text="binary labels: a human score, with human_threshold")
    human_threshold = FiniteFloatField(required=False, help_text="faithful when the human score is at least this")
    gold = serializers.ChoiceField(
        choices=GOLDS,
        default=MAJORITY_GOLD,
        help_text="a study's judgements as the human score (human=study:<id>:<task>): each unit's majority label "
        "or its final label (adjudicated gold); units without one are left out and counted (n_left_out)",
    )
    split_key = serializers.CharField(default=analysis_groups.DEFAULT_SPLIT_KEY)
    validation_split = serializers.CharField(default="val")
    test_split = serializers.CharField(default="test")
    folds = serializers.IntegerField(default=5, min_value=2, max_value=20, help_text="without a split")
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)
    bootstrap = serializers.IntegerField(default=200, min_value=0, max_value=MAX_BOOTSTRAP)
    by = serializers.CharField(required=False, help_text="binary labels: 'system' or 'meta.KEY'")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("human" in attrs) != ("human_threshold" in attrs):
            raise serializers.ValidationError({"human_threshold": ["human and human_threshold go together."]})
        binary = attrs["protocol"] == BALANCED_ACCURACY or "label_key" in attrs or "human" in attrs
        if binary and "label_key" not in attrs and "human" not in attrs:
            raise serializers.ValidationError(
                {"label_key": [f"{attrs['protocol']} needs a binary label: label_key, or human and human_threshold."]}
            )
        attrs["binary"] = binary
        return attrs


class MetaEvaluationOutput(serializers.Serializer):
    metric = serializers.CharField()
    protocol = serializers.CharField()
    group = serializers.CharField(help_text="'overall', or the error type")
    value = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    n_missing = serializers.IntegerField()
    reason = serializers.CharField()
    gold = serializers.CharField(required=False, help_text="the gold of a study's judgements; empty otherwise")
    n_left_out = serializers.IntegerField(required=False, help_text="a study's judged units without a gold label")


class BalancedAccuracyOutput(serializers.Serializer):
    metric = serializers.CharField()
    protocol = serializers.CharField()
    tuning = serializers.CharField(help_text="'split' (validation -> test) or 'cross_validation'")
    group = serializers.CharField(help_text="'overall', or the group")
    value = serializers.FloatField(allow_null=True, help_text="balanced accuracy, percent")
    threshold = serializers.FloatField(allow_null=True)
    true_positive_rate = serializers.FloatField(allow_null=True)
    true_negative_rate = serializers.FloatField(allow_null=True)
    roc_auc = serializers.FloatField(allow_null=True)
    n_tune = serializers.IntegerField()
    n_test = serializers.IntegerField()
    n_missing = serializers.IntegerField()
    n_other = serializers.IntegerField()
    split_key = serializers.CharField(allow_null=True)
    splits = serializers.DictField(child=serializers.CharField())
    folds = serializers.IntegerField(allow_null=True)
    seed = serializers.IntegerField(allow_null=True)
    fold_thresholds = serializers.ListField(child=serializers.FloatField())
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n_bootstrap = serializers.IntegerField()
    n_bootstrap_undefined = serializers.IntegerField()
    reason = serializers.CharField()
    gold = serializers.CharField(required=False, help_text="the gold of a study's judgements; empty otherwise")
    n_left_out = serializers.IntegerField(required=False, help_text="a study's judged units without a gold label")


class DatasetMetaEvaluationApi(APIView):
    """How well each metric separates faithful from unfaithful summaries: on pairs of the same document, or
    on a binary label per summary (ROC AUC; balanced accuracy with a tuned threshold)."""

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
            if query["binary"]:
                rows = analysis_groups.binary_evaluation(
                    dataset=dataset,
                    protocol=query["protocol"],
                    metrics=metrics,
                    label_key=query.get("label_key"),
                    human=query.get("human"),
                    human_threshold=query.get("human_threshold"),
                    split_key=query["split_key"],
                    validation=query["validation_split"],
                    test=query["test_split"],
                    folds=query["folds"],
                    seed=query["seed"],
                    bootstrap=query["bootstrap"],
                    by=query.get("by"),
                    gold=query["gold"],
                    user=signed_in_user(request),
                )
            else:
                rows = selectors.dataset_meta_evaluation(
                    dataset=dataset, protocol=query["protocol"], metrics=metrics, by_error_type=query["by_error_type"]
                )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)
        output = BalancedAccuracyOutput if query["protocol"] == BALANCED_ACCURACY else MetaEvaluationOutput
        return Response(output(rows, many=True).data)


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
                HighlighterOutput(
                    selectors.dataset_highlighter(dataset=dataset, user=signed_in_user(request)), many=True
                ).data
            )
        except selectors.AnalysisError as exc:
            return _analysis_error(exc)


FORMAT_PARAMETER = OpenApiParameter(
    "format_name",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    enum=sorted(EXPORT_FORMATS),
    description="csv, jsonl or parquet",
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
    def get(self, request: Request, dataset_id: int, format_name: str) -> StreamingHttpResponse:
        return summaries_download(
            dataset=dataset_or_404(dataset_id), study=None, user=signed_in_user(request), format_name=format_name
        )


class DatasetJudgementsExportApi(APIView):
    """The dataset's imported judgements (crowd labels), in the layout of a study's."""

    permission_classes = RESEARCHERS

    @DOWNLOAD
    def get(self, request: Request, dataset_id: int, format_name: str) -> StreamingHttpResponse:
        try:
            study = dataset_imported_study(dataset_id=dataset_id)
        except Study.DoesNotExist:
            raise Http404("The dataset has no imported judgements.") from None
        return judgements_download(study=study, format_name=format_name, filename=f"dataset-{dataset_id}-judgements")


STUDY_DOWNLOAD = extend_schema(
    parameters=[FORMAT_PARAMETER, JudgementSetQuery],
    responses={
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR, description="streamed CSV with a header row; X-FaithAnno-Judgements says which"
        ),
        (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="streamed JSON lines"),
        (400, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="unknown format"),
    },
)


class StudySummariesExportApi(APIView):
    """Every summary of the study's items with every score; the human-enhanced scores from accepted work
    unless ?judgements=all."""

    permission_classes = RESEARCHERS

    @STUDY_DOWNLOAD
    def get(self, request: Request, study_id: int, format_name: str) -> StreamingHttpResponse:
        study = visible_study(request, study_id)
        judgements = _query(JudgementSetQuery, request)["judgements"]
        return summaries_download(
            dataset=study.dataset,
            study=study,
            user=signed_in_user(request),
            format_name=format_name,
            judgements=judgements,
        )


class JudgementExportQuery(JudgementSetQuery):
    checks = serializers.ChoiceField(
        choices=CHECK_SETS,
        default=CHECKS_EXCLUDE,
        help_text="include: a public study's attention checks too, marked by the phase column (docs/EXPORTS.md)",
    )


class StudyJudgementsExportApi(APIView):
    """Every judgement of the study: accepted work only (excluded annotators left out) unless ?judgements=all;
    a public study's attention checks with ?checks=include."""

    permission_classes = RESEARCHERS

    @extend_schema(
        parameters=[FORMAT_PARAMETER, JudgementExportQuery],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="streamed CSV with a header row; X-FaithAnno-Judgements and X-FaithAnno-Checks say which",
            ),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="streamed JSON lines"),
            (400, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="unknown format"),
        },
    )
    def get(self, request: Request, study_id: int, format_name: str) -> StreamingHttpResponse:
        study = visible_study(request, study_id)
        query = _query(JudgementExportQuery, request)
        return judgements_download(
            study=study,
            format_name=format_name,
            filename=f"study-{study.pk}-judgements",
            judgements=query["judgements"],
            checks=query["checks"],
        )


class StudyCrowdExportApi(APIView):
    """A public study's own downloads: `workers` (one row per worker: status, training, check pass rate),
    `training` (one row per finished training attempt) or `surveys` (one row per answer); docs/EXPORTS.md."""

    permission_classes = RESEARCHERS

    @extend_schema(
        parameters=[
            FORMAT_PARAMETER,
            OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, enum=sorted(CROWD_EXPORTS)),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="streamed CSV with a header row"),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="streamed JSON lines"),
            (400, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="unknown format"),
        },
    )
    def get(self, request: Request, study_id: int, name: str, format_name: str) -> StreamingHttpResponse:
        crowd = crowd_study_of(study_id=visible_study(request, study_id).pk)
        if crowd is None:
            raise Http404("This study is not public.")
        return crowd_export_response(crowd=crowd, name=name, format_name=format_name)
