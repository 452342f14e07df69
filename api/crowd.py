"""A crowd study's platform statuses: the platform's export uploaded, workers who left on the platform give
their open items back (crowd.services.platform)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import RESEARCHERS
from common.roles import signed_in_user
from crowd.selectors.crowd import crowd_study_of
from crowd.views.researcher import platform_upload_apply
from protocols.platform_status import PlatformFileError
from studies.selectors.access import studies_for_user


class PlatformReportOutput(serializers.Serializer):
    platform = serializers.CharField(help_text="prolific or mturk: whose export the file is")
    workers = serializers.IntegerField(help_text="workers of the study the file names")
    recorded = serializers.IntegerField(help_text="platform statuses that changed")
    ended = serializers.IntegerField(help_text="sessions ended now (the worker left on the platform)")
    released = serializers.IntegerField(help_text="open items back in the pool")
    unknown = serializers.ListField(child=serializers.CharField(), help_text="ids skipped (skip_unknown)")


class CrowdPlatformStatusApi(APIView):
    """Upload the platform's export of the study (Prolific's submissions CSV, MTurk's batch results CSV;
    docs/CROWD_CHECKS.md): every worker's platform status is recorded, and those who returned the study,
    timed out or were rejected have their session ended and their open items put back in the pool. A bad
    file answers 400 naming file, line and field, and changes nothing; a replay changes nothing."""

    permission_classes = RESEARCHERS
    parser_classes = [MultiPartParser]

    class UploadInput(serializers.Serializer):
        file = serializers.FileField()
        skip_unknown = serializers.BooleanField(
            default=False, help_text="skip ids of no worker of this study instead of refusing the file"
        )

    @extend_schema(request={"multipart/form-data": UploadInput}, responses={200: PlatformReportOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = studies_for_user(user=signed_in_user(request)).filter(pk=study_id).first()
        crowd = crowd_study_of(study_id=study.pk) if study is not None else None
        if crowd is None:
            raise Http404("No such public study.")
        payload = self.UploadInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            report = platform_upload_apply(
                crowd, payload.validated_data["file"], skip_unknown=payload.validated_data["skip_unknown"]
            )
        except PlatformFileError as exc:
            return Response({"file": [str(exc)]}, status=400)
        return Response(PlatformReportOutput(report).data)
