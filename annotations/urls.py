from django.urls import path

from annotations import views

urlpatterns = [
    path("", views.home, name="home"),
    path("annotate/", views.dashboard, name="dashboard"),
    path("annotate/next/", views.annotate_next, name="annotate_next"),
    path("annotate/<int:assignment_id>/", views.annotate, name="annotate"),
    path("annotate/<int:assignment_id>/submit/", views.annotate_submit, name="annotate_submit"),
    path("studies/", views.studies, name="studies"),
    path("studies/new/", views.study_new, name="study_new"),
    path("studies/<int:study_id>/", views.study_detail, name="study_detail"),
    path("studies/<int:study_id>/judgements.<str:format_name>", views.study_export, name="study_export"),
]
