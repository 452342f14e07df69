from django.urls import path

from annotations.views import analysis, annotate, common, studies

urlpatterns = [
    path("", common.home, name="home"),
    path("annotate/", annotate.dashboard, name="dashboard"),
    path("annotate/next/", annotate.annotate_next, name="annotate_next"),
    path("annotate/<int:assignment_id>/", annotate.annotate, name="annotate"),
    path("annotate/<int:assignment_id>/submit/", annotate.annotate_submit, name="annotate_submit"),
    path("studies/", studies.studies, name="studies"),
    path("studies/new/", studies.study_new, name="study_new"),
    path("studies/<int:study_id>/", studies.study_detail, name="study_detail"),
    path("studies/<int:study_id>/judgements.<str:format_name>", studies.study_export, name="study_export"),
    # Analyses and their downloads (annotations/views/analysis.py).
    path("studies/<int:study_id>/analysis/", analysis.study_analysis, name="study_analysis"),
    path(
        "studies/<int:study_id>/summaries.<str:format_name>",
        analysis.study_summaries_export,
        name="study_summaries_export",
    ),
    path("datasets/", analysis.datasets, name="datasets"),
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
]
