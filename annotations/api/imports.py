"""Import jobs: an uploaded file's import, run by a worker; GET shows its status, progress and errors."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from annotations.api.common import RESEARCHERS
from annotations.models import ImportJob
from annotations.selectors.imports import import_jobs_for_user


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
    errors = ImportErrorOutput(many=True, help_text="why a failed import stopped: file, line and field")
    report = serializers.ListField(child=serializers.CharField(), help_text="what a finished import wrote")
    dataset = serializers.IntegerField(source="dataset_id", allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_url(self, job: ImportJob) -> str:
        return reverse("api_import_job", args=[job.pk], request=self.context.get("request"))


class ImportJobApi(APIView):
    """One import job of yours (admins: anyone's); any other id answers 404."""

    permission_classes = RESEARCHERS

    @extend_schema(responses=ImportJobOutput)
    def get(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(import_jobs_for_user(user=request.user), pk=job_id)
        return Response(ImportJobOutput(job, context={"request": request}).data)
