from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Studies and judgements"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from common.aggregates import register_sqlite_functions

        # The studies list's median time per item (common.aggregates.Median) on the embedded SQLite database.
        connection_created.connect(register_sqlite_functions, dispatch_uid="faithanno-sqlite-functions")
