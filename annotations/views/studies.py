"""Researcher pages: studies, their progress and agreement, and judgement downloads."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from annotations.exports import EXPORT_FORMATS, csv_chunks, jsonl_chunks
from annotations.forms import StudyCreateForm
from annotations.models import Study
from annotations.selectors import exports as export_selectors
from annotations.selectors import studies as selectors
from annotations.services.studies import study_create
from annotations.tasks import get_task
from annotations.views.common import researcher_required


def _visible_study(request: HttpRequest, study_id: int) -> Study:
    """A study the user runs (admins: any). Other studies answer 404, not 403: their ids are nobody's business."""
    return get_object_or_404(selectors.studies_for_user(user=request.user), pk=study_id)


@researcher_required
@require_GET
def studies(request: HttpRequest) -> HttpResponse:
    return render(request, "annotations/studies.html", {"studies": selectors.studies_for_user(user=request.user)})


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            plan = study_create(
                name=data["name"],
                dataset=data["dataset"],
                tasks=data["tasks"],
                annotators=list(data["annotators"]),
                annotators_per_item=data["annotators_per_item"],
                created_by=request.user,
                sample_size=data["sample_size"],
                seed=data["seed"],
            )
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            messages.success(request, f"Study created: {plan.items} items, {plan.assignments} assignments.")
            return redirect("study_detail", study_id=plan.study.pk)
    return render(request, "annotations/study_form.html", {"form": form})


@researcher_required
@require_GET
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _visible_study(request, study_id)
    dont_know_as_incorrect = request.GET.get("dont_know") == "incorrect"
    tasks = [
        {
            "task": study_task,
            "definition": get_task(study_task.task),
            "agreement": selectors.study_agreement(
                study_task=study_task, dont_know_as_incorrect=dont_know_as_incorrect
            ),
        }
        for study_task in study.tasks.all()
    ]
    return render(
        request,
        "annotations/study_detail.html",
        {
            "study": study,
            "tasks": tasks,
            "progress": selectors.study_progress(study=study),
            "dont_know_as_incorrect": dont_know_as_incorrect,
            "export_formats": sorted(EXPORT_FORMATS),
        },
    )


@researcher_required
@require_GET
def study_export(request: HttpRequest, study_id: int, format_name: str) -> HttpResponse:
    if format_name not in EXPORT_FORMATS:
        return HttpResponseBadRequest(f"Unknown export format {format_name!r}.")
    study = _visible_study(request, study_id)
    rows = export_selectors.study_judgement_rows(study=study)
    chunks = csv_chunks(rows, export_selectors.EXPORT_FIELDS) if format_name == "csv" else jsonl_chunks(rows)
    response = StreamingHttpResponse(chunks, content_type=f"{EXPORT_FORMATS[format_name]}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-judgements.{format_name}"'
    return response
