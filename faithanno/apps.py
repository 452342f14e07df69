from django.contrib.admin.apps import AdminConfig


class FaithAnnoAdminConfig(AdminConfig):
    default_site = "faithanno.admin_site.FaithAnnoAdminSite"

    def ready(self) -> None:
        super().ready()
        from faithanno import checks  # noqa: F401  (registers the deployment checks)
