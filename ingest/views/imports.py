"""Uploading a file to import from the datasets page, and watching its import job: a worker imports it
(ingest.jobs), never the web request; the job's page refreshes itself until the import has ended."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from common.errors import BrokerUnavailable
from common.roles import signed_in_user
from common.uploads import upload_too_large
from common.views import researcher_required
from corpus.selectors import datasets_with_counts
from ingest.selectors.import_jobs import import_jobs_for_user, import_jobs_recent
from ingest.services.import_jobs import import_job_create
from studies.forms import ImportUploadForm
from studies.serializers import ImportJobOutput

# How often a running job's page reloads itself (seconds).
REFRESH_SECONDS = 2


def datasets_page(request: HttpRequest, form: ImportUploadForm | None = None, status: int = 200) -> HttpResponse:
    user = signed_in_user(request)
    context = {
        "datasets": datasets_with_counts(),
        "import_form": form or ImportUploadForm(),
        "import_jobs": import_jobs_recent(user=user),
        "upload_limit": settings.FAITHANNO_UPLOAD_MAX_BYTES,
    }
    return render(request, "annotations/analysis/datasets.html", context, status=status)


@researcher_required
@require_POST
def dataset_import_upload(request: HttpRequest) -> HttpResponse:
    form = ImportUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return datasets_page(request, form, status=400)
    upload = form.cleaned_data["file"]
    if upload.size > settings.FAITHANNO_UPLOAD_MAX_BYTES:
        return upload_too_large(request, upload.size)
    try:
        job = import_job_create(
            user=signed_in_user(request),
            upload=upload,
            format_name=form.cleaned_data["format"],
            name=form.cleaned_data["name"],
        )
    except BrokerUnavailable as exc:
        form.add_error(None, f"No worker queue is reachable, so nothing was stored: {exc}")
        return datasets_page(request, form, status=503)
    return redirect("import_job", job.pk)


@researcher_required
@require_GET
def import_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(import_jobs_for_user(user=signed_in_user(request)), pk=job_id)
    if request.GET.get("format") == "json":
        return JsonResponse(ImportJobOutput(job, context={"request": request}).data)
    context = {"job": job, "refresh_seconds": None if job.finished else REFRESH_SECONDS}
    return render(request, "annotations/import_job.html", context)
