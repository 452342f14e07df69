from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Corpus, studies and judgements"

    def ready(self) -> None:
        from annotations import checks  # noqa: F401  (registers the deployment checks)
