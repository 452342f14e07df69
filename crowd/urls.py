from django.urls import path

from crowd.views import researcher, worker

# A crowd worker's pages under the study's public link /crowd/<key>/ (the link key, not the study's id).
urlpatterns = [
    path("<str:key>/", worker.crowd_start, name="crowd_start"),
    path("<str:key>/go/", worker.crowd_go, name="crowd_go"),
    path("<str:key>/consent/", worker.crowd_consent_page, name="crowd_consent"),
    path("<str:key>/before/", worker.crowd_pre_survey, name="crowd_pre_survey"),
    path("<str:key>/instructions/", worker.crowd_instructions_page, name="crowd_instructions"),
    path("<str:key>/training/", worker.crowd_training_page, name="crowd_training"),
    path("<str:key>/next/", worker.crowd_next, name="crowd_next"),
    path("<str:key>/after/", worker.crowd_post_survey, name="crowd_post_survey"),
    path("<str:key>/end/", worker.crowd_end, name="crowd_end"),
    path("<str:key>/paste/", worker.crowd_paste, name="crowd_paste"),
]

# A researcher's pages of public studies, under /studies/.
researcher_urlpatterns = [
    path("new/public/", researcher.crowd_study_new, name="crowd_study_new"),
    path("<int:study_id>/crowd/", researcher.crowd_study, name="crowd_study"),
    path("<int:study_id>/crowd/public/", researcher.crowd_study_public, name="crowd_study_public"),
    path("<int:study_id>/crowd/make-public/", researcher.crowd_study_make_public_page, name="crowd_study_make_public"),
    # surveys, workers, training (crowd.selectors.crowd.CROWD_EXPORTS) as csv, jsonl or parquet.
    path("<int:study_id>/crowd/<str:name>.<str:format_name>", researcher.crowd_export, name="crowd_export"),
    path("<int:study_id>/crowd/platform-status/", researcher.crowd_platform_status, name="crowd_platform_status"),
]
