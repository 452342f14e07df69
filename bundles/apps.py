from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    verbose_name = "Study bundles"
