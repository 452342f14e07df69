from django.urls import include, path

from analysis.views import analysis, browse
from analysis.views import studies as study_pages
from common import views as common
from crowd.urls import researcher_urlpatterns as crowd_researcher_urls
from ingest.views import imports
from inspector.views import inspect
from judges import views as judges
from review.views import adjudication, quality
from studies.views import annotate, studies

urlpatterns = [
    path("", common.home, name="home"),
    path("annotate/", annotate.dashboard, name="dashboard"),
    path("annotate/next/", annotate.annotate_next, name="annotate_next"),
    path("annotate/<int:assignment_id>/", annotate.annotate, name="annotate"),
    path("studies/", studies.studies, name="studies"),
    path("studies/new/", studies.study_new, name="study_new"),
    path("studies/<int:study_id>/", study_pages.study_detail, name="study_detail"),
    path("studies/<int:study_id>/judgements.<str:format_name>", study_pages.study_export, name="study_export"),
    # Worker quality, payments and live progress (issue 14; review/views/quality.py).
    path("studies/<int:study_id>/quality/", quality.study_quality, name="study_quality"),
    path(
        "studies/<int:study_id>/quality/annotators/<int:annotator_id>/<str:action>/",
        quality.study_quality_action,
        name="study_quality_action",
    ),
    path("studies/<int:study_id>/payment-rules/", quality.study_payment_rules, name="study_payment_rules"),
    path("studies/<int:study_id>/payments/<str:name>", quality.study_payment_file, name="study_payment_file"),
    # study management (issue 4)
    path("studies/<int:study_id>/settings/", studies.study_settings, name="study_settings"),
    path("studies/<int:study_id>/annotators/", studies.study_annotators, name="study_annotators"),
    path("studies/<int:study_id>/adjudicators/", studies.study_adjudicators, name="study_adjudicators"),
    path("studies/<int:study_id>/reclaim/", studies.study_reclaim, name="study_reclaim"),
    # LLM judges (judges/views.py; the runs are listed on the study page).
    path("studies/<int:study_id>/llm-judge/", judges.study_judge_run, name="study_judge_run"),
    path(
        "studies/<int:study_id>/tasks/<int:task_id>/guidelines/",
        studies.study_task_guidelines,
        name="study_task_guidelines",
    ),
    path(
        "studies/<int:study_id>/tasks/<int:task_id>/examples/",
        studies.study_task_examples,
        name="study_task_examples",
    ),
    path(
        "studies/<int:study_id>/examples/<int:example_id>/",
        studies.study_example_annotate,
        name="study_example_annotate",
    ),
    path(
        "studies/<int:study_id>/examples/<int:example_id>/delete/",
        studies.study_example_remove,
        name="study_example_delete",
    ),
    # Analyses and their downloads (analysis/views/analysis.py).
    path("studies/<int:study_id>/analysis/", analysis.study_analysis, name="study_analysis"),
    path(
        "studies/<int:study_id>/summaries.<str:format_name>",
        analysis.study_summaries_export,
        name="study_summaries_export",
    ),
    # Adjudication: final labels of the disagreements (analysis/views/adjudication.py).
    path("studies/<int:study_id>/adjudication/", adjudication.adjudication_queue, name="adjudication_queue"),
    path(
        "studies/<int:study_id>/adjudication/compute/",
        adjudication.adjudication_compute,
        name="adjudication_compute",
    ),
    path(
        "studies/<int:study_id>/adjudication/<int:item_id>/",
        adjudication.adjudication_item,
        name="adjudication_item",
    ),
    path("datasets/", analysis.datasets, name="datasets"),
    # Uploads and their import jobs (ingest/views/imports.py).
    path("datasets/import/", imports.dataset_import_upload, name="dataset_import_upload"),
    path("datasets/imports/<int:job_id>/", imports.import_job, name="import_job"),
    path("datasets/<int:dataset_id>/analysis/", analysis.dataset_analysis, name="dataset_analysis"),
    path(
        "datasets/<int:dataset_id>/summaries.<str:format_name>",
        analysis.dataset_summaries_export,
        name="dataset_summaries_export",
    ),
    path(
        "datasets/<int:dataset_id>/judgements.<str:format_name>",
        analysis.dataset_judgements_export,
        name="dataset_judgements_export",
    ),
    path("analysis/items/<int:item_id>/", analysis.analysis_item, name="analysis_item"),
    # Browsing a dataset (analysis/views/browse.py).
    path("datasets/<int:dataset_id>/documents/", browse.dataset_documents, name="dataset_documents"),
    path("datasets/<int:dataset_id>/summaries/", browse.dataset_summaries, name="dataset_summaries"),
    # The inspector (inspector/views/inspect.py).
    path("summaries/<int:summary_id>/", inspect.summary_inspect, name="summary_inspect"),
    path("summaries/compare/", inspect.summary_compare, name="summary_compare"),
    # Crowd studies: a worker's pages under the public link (crowd/urls.py).
    path("crowd/", include("crowd.urls")),
    path("studies/", include(crowd_researcher_urls)),
]
