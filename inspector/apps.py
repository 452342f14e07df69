from django.apps import AppConfig


class InspectorConfig(AppConfig):
    name = "inspector"
    verbose_name = "The summary inspector"
