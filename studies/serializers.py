"""The output shape of an import job: the upload page polls it as JSON and the API answers it."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.reverse import reverse

from corpus.models import ImportJob


class ImportErrorOutput(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ImportJobOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    name = serializers.CharField(help_text="the dataset the file is imported into")
    format = serializers.CharField()
    file_name = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes")
    status = serializers.ChoiceField(choices=ImportJob.Status.choices)
    lines_done = serializers.IntegerField(help_text="lines read and checked so far")
    lines_total = serializers.IntegerField(allow_null=True, help_text="lines of the file (JSON lines only)")
    # A field named like Serializer.errors: DRF keeps declared fields apart (_declared_fields), so the name is free.
    errors = ImportErrorOutput(many=True, help_text="why a failed import stopped: file, line and field")  # type: ignore[assignment]
    report = serializers.ListField(child=serializers.CharField(), help_text="what a finished import wrote")
    dataset = serializers.IntegerField(source="dataset_id", allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_url(self, job: ImportJob) -> str:
        return reverse("api_import_job", args=[job.pk], request=self.context.get("request"))
