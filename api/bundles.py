"""Study bundles (docs/BUNDLES.md): GET a study's bundle; POST a bundle to recreate its study here."""

from __future__ import annotations

import tempfile

from django.conf import settings
from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import RESEARCHERS, visible_study
from bundles.format import BundleInvalid
from bundles.services.bundle_export import study_bundle_export
from bundles.services.bundle_import import study_bundle_import
from common.roles import signed_in_user
from common.uploads import upload_too_large


class StudyBundleApi(APIView):
    """The study as one bundle (a zip archive): a study you run (admins: any); any other id answers 404."""

    permission_classes = RESEARCHERS

    @extend_schema(responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="the bundle")})
    def get(self, request: Request, study_id: int) -> FileResponse:
        study = visible_study(request, study_id)
        # Spooled to a temporary file (the zip's central directory comes last), then streamed from it.
        handle = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
        study_bundle_export(study=study, output=handle)
        handle.seek(0)
        return FileResponse(
            handle, as_attachment=True, filename=f"study-{study.pk}.bundle.zip", content_type="application/zip"
        )


class BundleImportOutput(serializers.Serializer):
    study = serializers.IntegerField(source="study.pk")
    study_name = serializers.CharField(source="study.name")
    dataset = serializers.IntegerField(source="dataset.pk")
    dataset_name = serializers.CharField(source="dataset.name")
    usernames = serializers.DictField(child=serializers.CharField(), help_text="bundle user name -> new account")
    ignored_members = serializers.ListField(child=serializers.CharField())
    counts = serializers.DictField(child=serializers.IntegerField())


class BundleListApi(APIView):
    """POST a bundle: its study is recreated with new ids, you run it (all or nothing)."""

    permission_classes = RESEARCHERS
    parser_classes = [MultiPartParser]

    class BundleImportInput(serializers.Serializer):
        file = serializers.FileField(help_text="a study bundle (docs/BUNDLES.md)")

    @extend_schema(
        request=BundleImportInput,
        responses={201: BundleImportOutput, 400: None, 413: None},
        description="Checks the whole bundle, then imports it in one transaction. A bad bundle answers 400 with "
        "`errors` naming member file, line and field, and changes nothing. A body over FAITHANNO_UPLOAD_MAX_BYTES "
        "answers 413; a bundle unpacking to more than FAITHANNO_BUNDLE_MAX_BYTES is refused.",
    )
    def post(self, request: Request) -> HttpResponse:  # a Response, or the app's 413 page
        payload = self.BundleImportInput(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        if upload.size > settings.FAITHANNO_UPLOAD_MAX_BYTES:
            return upload_too_large(request, upload.size)
        try:
            result = study_bundle_import(source=upload, user=signed_in_user(request))
        except BundleInvalid as exc:
            body = {"detail": str(exc.problems[0]), "errors": [problem.as_dict() for problem in exc.problems]}
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        return Response(BundleImportOutput(result).data, status=status.HTTP_201_CREATED)
