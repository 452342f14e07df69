"""Import jobs: an uploaded file's import, run by a worker; GET shows its status, progress and errors."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import RESEARCHERS
from common.roles import signed_in_user
from ingest.selectors.import_jobs import import_jobs_for_user
from studies.serializers import ImportJobOutput


class ImportJobApi(APIView):
    """One import job of yours (admins: anyone's); any other id answers 404."""

    permission_classes = RESEARCHERS

    @extend_schema(responses=ImportJobOutput)
    def get(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(import_jobs_for_user(user=signed_in_user(request)), pk=job_id)
        return Response(ImportJobOutput(job, context={"request": request}).data)
