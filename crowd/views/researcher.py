"""A researcher's pages of public studies: the new-study form with crowd settings, and a study's crowd page
(its link, open or closed to new workers, workers by status, the survey answers' download)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.exports import EXPORT_FORMATS
from common.roles import signed_in_user
from common.validation import errors_by_field, printable
from common.views import export_response, researcher_required
from crowd.forms import CrowdSettingsForm
from crowd.models import CrowdStudy, CrowdWorker
from crowd.selectors.crowd import (
    CROWD_EXPORTS,
    crowd_public_link,
    crowd_study_of,
    crowd_worker_counts,
)
from crowd.services.platform import PLATFORM_FILE_MAX_BYTES, PlatformReport, crowd_platform_file_apply
from crowd.services.studies import (
    CrowdSpec,
    crowd_study_create,
    crowd_study_make_private,
    crowd_study_make_public,
    public_study_message,
)
from protocols.platform_status import PlatformFileError
from studies.forms import DatasetChoiceForm, StudyCreateForm
from studies.selectors.selection import selection_options
from studies.views.studies import chosen_dataset, visible_study

# The crowd page's downloads (CROWD_EXPORTS) with their labels.
CROWD_DOWNLOADS = (
    ("workers", "Workers (status, training, check pass rate)"),
    ("training", "Training attempts"),
    ("surveys", "Survey answers"),
)


def _crowd_of(request: HttpRequest, study_id: int) -> CrowdStudy:
    study = visible_study(request, study_id)
    crowd = crowd_study_of(study_id=study.pk)
    if crowd is None:
        raise Http404("This study is not public.")
    return crowd


@researcher_required
@require_http_methods(["GET", "POST"])
def crowd_study_new(request: HttpRequest) -> HttpResponse:
    """A new public study: the study's fields (no annotators: workers arrive by the link) and its crowd
    settings; step one chooses the dataset, as on the new-study page."""
    dataset = chosen_dataset(request)
    if dataset is None:
        return render(request, "crowd/study_new.html", {"dataset_form": DatasetChoiceForm()})
    options = selection_options(dataset=dataset)
    form = StudyCreateForm(request.POST or None, options=options, initial={"dataset": dataset})
    crowd_form = CrowdSettingsForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and crowd_form.is_valid():
        try:
            plan = crowd_study_create(spec=form.spec(created_by=signed_in_user(request)), crowd=crowd_form.crowd_spec())
        except ValidationError as exc:
            for field, problems in errors_by_field(exc).items():
                if field in form.fields:
                    form.add_error(field, problems)
                elif field in crowd_form.fields:
                    crowd_form.add_error(field, problems)
                else:
                    crowd_form.add_error("settings", [f"{field}: {problem}" for problem in problems])
        else:
            messages.success(
                request, f"Public study created: {plan.plan.items} items, {plan.checks} attention check items."
            )
            return redirect("crowd_study", study_id=plan.plan.study.pk)
    context = {"form": form, "crowd_form": crowd_form, "dataset": dataset, "options": options}
    return render(request, "crowd/study_new.html", context)


@researcher_required
@require_GET
def crowd_study(request: HttpRequest, study_id: int) -> HttpResponse:
    return _crowd_page(request, _crowd_of(request, study_id))


def _crowd_page(request: HttpRequest, crowd: CrowdStudy, platform_error: str = "") -> HttpResponse:
    counts = crowd_worker_counts(crowd=crowd)
    statuses = [(CrowdWorker.Status(status).label, status, n) for status, n in counts.items()]
    context = {
        "crowd": crowd,
        "study": crowd.study,
        "link": crowd_public_link(crowd=crowd),
        "statuses": statuses,
        "downloads": CROWD_DOWNLOADS,
        "export_formats": sorted(EXPORT_FORMATS),
        "max_mib": PLATFORM_FILE_MAX_BYTES // 1024 // 1024,
        "platform_error": platform_error,
    }
    return render(request, "crowd/study.html", context, status=400 if platform_error else 200)


def _back(request: HttpRequest, study_id: int) -> HttpResponse:
    """Back to the page the form was on: the study page (`back=study`) or the public-link page."""
    return redirect("study_detail" if request.POST.get("back") == "study" else "crowd_study", study_id=study_id)


@researcher_required
@require_POST
def crowd_study_public(request: HttpRequest, study_id: int) -> HttpResponse:
    """Open (public=yes) or close (public=no) a public study's link; replaying changes nothing."""
    crowd = _crowd_of(request, study_id)
    user = signed_in_user(request)
    if request.POST.get("public") == "yes":
        crowd_study_make_public(study=crowd.study, crowd=CrowdSpec(), by=user)
        messages.success(request, "The link takes new workers.")
    else:
        crowd_study_make_private(study=crowd.study, by=user)
        messages.success(request, "The link is closed: it takes no new workers (those who started can finish).")
    return _back(request, crowd.study_id)


@researcher_required
@require_POST
def crowd_study_make_public_page(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study page's "Make public": crowd settings with the defaults of the chosen platform (the crowd page
    shows them), the study pull-based, open items nobody started back to the pool (crowd_study_make_public)."""
    study = visible_study(request, study_id)
    platform = request.POST.get("platform") or ""
    try:
        result = crowd_study_make_public(study=study, crowd=CrowdSpec(platform=platform), by=signed_in_user(request))
    except ValidationError as exc:
        for field, problems in errors_by_field(exc).items():
            messages.error(request, f"Make public, {field}: {' '.join(problems)}")
    else:
        messages.success(request, public_study_message(result))
    return redirect("study_detail", study_id=study.pk)


def crowd_export_response(*, crowd: CrowdStudy, name: str, format_name: str) -> StreamingHttpResponse:
    """One of the public study's own downloads (CROWD_EXPORTS: surveys, workers, training) as CSV, JSON lines
    or Parquet; the page and the API serve it. An unknown name is a 404."""
    if name not in CROWD_EXPORTS:
        raise Http404("No such download.")
    fields, types, rows = CROWD_EXPORTS[name]
    return export_response(rows(crowd=crowd), fields, format_name, f"study-{crowd.study_id}-{name}", types)


@researcher_required
@require_GET
def crowd_export(request: HttpRequest, study_id: int, name: str, format_name: str) -> StreamingHttpResponse:
    return crowd_export_response(crowd=_crowd_of(request, study_id), name=name, format_name=format_name)


def platform_upload_apply(crowd: CrowdStudy, upload: UploadedFile[Any] | None, skip_unknown: bool) -> PlatformReport:
    """The platform's export uploaded on the page or to the API, applied (PlatformFileError names the file,
    line and field; a file over the limit is refused before it is read whole)."""
    if upload is None:
        raise PlatformFileError("file", "choose the platform's export (a CSV file)")
    source = printable(upload.name or "upload")[:100]
    data = upload.read(PLATFORM_FILE_MAX_BYTES + 1)
    return crowd_platform_file_apply(crowd=crowd, data=data, source=source, skip_unknown=skip_unknown)


@researcher_required
@require_POST
def crowd_platform_status(request: HttpRequest, study_id: int) -> HttpResponse:
    """Upload the platform's export: workers who left on the platform give their open items back."""
    crowd = _crowd_of(request, study_id)
    try:
        report = platform_upload_apply(
            crowd, request.FILES.get("file"), skip_unknown=request.POST.get("skip_unknown") == "yes"
        )
    except PlatformFileError as exc:
        return _crowd_page(request, crowd, platform_error=str(exc))  # nothing changed: the page says why
    messages.success(request, report.summary)
    return redirect("crowd_study", study_id=crowd.study_id)
