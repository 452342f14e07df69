from django.contrib.admin.apps import AdminConfig


class FaithAnnoAdminConfig(AdminConfig):
    default_site = "faithanno.admin_site.FaithAnnoAdminSite"
