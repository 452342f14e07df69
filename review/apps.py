from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Reviewing a study's work: adjudication and worker quality"
