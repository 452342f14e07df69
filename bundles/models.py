"""Which bundle made which study: importing the same bundle twice is refused while its study exists."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class BundleImport(models.Model):
    bundle_id = models.CharField(max_length=100, unique=True, help_text="the manifest's bundle_id")
    format_version = models.PositiveIntegerField()
    app_version = models.CharField(max_length=100, help_text="the FaithAnno that wrote the bundle")
    manifest_sha256 = models.CharField(max_length=64)
    # Deleting the study deletes this record, so the bundle can be imported again.
    study = models.OneToOneField("studies.Study", on_delete=models.CASCADE, related_name="bundle_import")
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.SET_NULL, null=True, related_name="+")
    # The bundle's user names -> the accounts created for them (taken names get a suffix).
    usernames = models.JSONField(default=dict, blank=True)
    ignored_members = models.JSONField(default=list, blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"bundle {self.bundle_id} -> study {self.study_id}"
