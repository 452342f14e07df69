from django.urls import path

from api import adjudication, analysis, bundles, corpus, crowd, imports, judges, quality, studies

urlpatterns = [
    path("datasets/", corpus.DatasetListApi.as_view(), name="api_datasets"),
    path("datasets/<int:dataset_id>/", corpus.DatasetDetailApi.as_view(), name="api_dataset"),
    path("imports/<int:job_id>/", imports.ImportJobApi.as_view(), name="api_import_job"),
    path("datasets/<int:dataset_id>/documents/", corpus.DocumentListApi.as_view(), name="api_documents"),
    path("datasets/<int:dataset_id>/summaries/", corpus.SummaryListApi.as_view(), name="api_summaries"),
    path("datasets/<int:dataset_id>/scoring/", corpus.ScoringApi.as_view(), name="api_scoring"),
    path("datasets/<int:dataset_id>/agreement/", analysis.DatasetAgreementApi.as_view(), name="api_dataset_agreement"),
    path("datasets/<int:dataset_id>/correlations/", analysis.DatasetCorrelationsApi.as_view(), name="api_correlations"),
    path(
        "datasets/<int:dataset_id>/meta-evaluation/",
        analysis.DatasetMetaEvaluationApi.as_view(),
        name="api_meta_evaluation",
    ),
    path("datasets/<int:dataset_id>/highlighter/", analysis.DatasetHighlighterApi.as_view(), name="api_highlighter"),
    path(
        "datasets/<int:dataset_id>/exports/summaries.<str:format_name>",
        analysis.DatasetSummariesExportApi.as_view(),
        name="api_dataset_summaries_export",
    ),
    path(
        "datasets/<int:dataset_id>/exports/judgements.<str:format_name>",
        analysis.DatasetJudgementsExportApi.as_view(),
        name="api_dataset_judgements_export",
    ),
    path("documents/<int:document_id>/", corpus.DocumentDetailApi.as_view(), name="api_document"),
    path("summaries/<int:summary_id>/", corpus.SummaryDetailApi.as_view(), name="api_summary"),
    path("summaries/<int:summary_id>/explanations/", corpus.ExplanationListApi.as_view(), name="api_explanations"),
    path("studies/", studies.StudyListApi.as_view(), name="api_studies"),
    path("studies/<int:study_id>/", studies.StudyDetailApi.as_view(), name="api_study"),
    path("studies/<int:study_id>/annotators/", studies.StudyAnnotatorsApi.as_view(), name="api_study_annotators"),
    path("studies/<int:study_id>/items/", studies.StudyItemListApi.as_view(), name="api_study_items"),
    path("studies/<int:study_id>/assignments/", studies.StudyAssignmentListApi.as_view(), name="api_study_assignments"),
    path("studies/<int:study_id>/judgements/", studies.StudyJudgementListApi.as_view(), name="api_study_judgements"),
    path("studies/<int:study_id>/bundle/", bundles.StudyBundleApi.as_view(), name="api_study_bundle"),
    path("bundles/", bundles.BundleListApi.as_view(), name="api_bundles"),
    path(
        "studies/<int:study_id>/examples/<int:example_id>/submission/",
        studies.StudyExampleSubmitApi.as_view(),
        name="api_study_example_submit",
    ),
    path("studies/<int:study_id>/llm-judge-runs/", judges.StudyJudgeRunsApi.as_view(), name="api_study_judge_runs"),
    path("llm-judge-runs/<int:run_id>/", judges.JudgeRunApi.as_view(), name="api_judge_run"),
    path("llm-judge-runs/<int:run_id>/items/", judges.JudgeRunItemsApi.as_view(), name="api_judge_run_items"),
    path(
        "studies/<int:study_id>/crowd/platform-status/",
        crowd.CrowdPlatformStatusApi.as_view(),
        name="api_crowd_platform_status",
    ),
    path("studies/<int:study_id>/quality/", quality.StudyQualityApi.as_view(), name="api_study_quality"),
    path(
        "studies/<int:study_id>/annotators/<int:annotator_id>/standing/",
        quality.StudyAnnotatorStandingApi.as_view(),
        name="api_study_annotator_standing",
    ),
    path(
        "studies/<int:study_id>/payment-rules/", quality.StudyPaymentRulesApi.as_view(), name="api_study_payment_rules"
    ),
    path(
        "studies/<int:study_id>/payments/<str:name>",
        quality.StudyPaymentFileApi.as_view(),
        name="api_study_payment_file",
    ),
    path("studies/<int:study_id>/agreement/", analysis.StudyAgreementApi.as_view(), name="api_study_agreement"),
    path("studies/<int:study_id>/conditions/", analysis.StudyConditionsApi.as_view(), name="api_study_conditions"),
    path(
        "studies/<int:study_id>/exports/summaries.<str:format_name>",
        analysis.StudySummariesExportApi.as_view(),
        name="api_study_summaries_export",
    ),
    path(
        "studies/<int:study_id>/exports/judgements.<str:format_name>",
        analysis.StudyJudgementsExportApi.as_view(),
        name="api_study_judgements_export",
    ),
    path(
        "studies/<int:study_id>/exports/crowd/<str:name>.<str:format_name>",
        analysis.StudyCrowdExportApi.as_view(),
        name="api_study_crowd_export",
    ),
    path("studies/<int:study_id>/adjudication/", adjudication.QueueApi.as_view(), name="api_adjudication_queue"),
    path(
        "studies/<int:study_id>/adjudication/<int:item_id>/",
        adjudication.ItemApi.as_view(),
        name="api_adjudication_item",
    ),
    path(
        "studies/<int:study_id>/final-labels/",
        adjudication.FinalLabelsComputeApi.as_view(),
        name="api_final_labels_compute",
    ),
    path("assignments/", studies.AssignmentListApi.as_view(), name="api_assignments"),
    path("assignments/<int:assignment_id>/", studies.AssignmentDetailApi.as_view(), name="api_assignment"),
    path(
        "assignments/<int:assignment_id>/submission/",
        studies.AssignmentSubmitApi.as_view(),
        name="api_assignment_submit",
    ),
    path("assignments/<int:assignment_id>/draft/", studies.AssignmentDraftApi.as_view(), name="api_assignment_draft"),
    path("assignments/<int:assignment_id>/skip/", studies.AssignmentSkipApi.as_view(), name="api_assignment_skip"),
]
