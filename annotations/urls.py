from django.urls import path

from annotations.views import annotate, common, studies

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
]
