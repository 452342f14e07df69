from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    """The app the corpus, studies and accounts models were first created in; only its migrations remain."""

    name = "annotations"
    verbose_name = "Legacy migrations"
