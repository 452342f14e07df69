"""Web pages. Each view checks who may see it, calls one selector or service, and renders."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotations import roles, selectors
from annotations.exports import EXPORT_FORMATS, csv_chunks, jsonl_chunks
from annotations.forms import StudyCreateForm
from annotations.models import Assignment, Study
from annotations.services.studies import assignment_submit, study_create
from annotations.tasks import get_task

View = Callable[..., HttpResponse]


def researcher_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not roles.user_is_researcher(request.user):
            raise PermissionDenied("Researchers only.")
        return view(request, *args, **kwargs)

    return wrapper


def _visible_study(request: HttpRequest, study_id: int) -> Study:
    """A study the user runs (admins: any). Other studies answer 404, not 403: their ids are nobody's business."""
    return get_object_or_404(selectors.studies_for_user(user=request.user), pk=study_id)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if roles.user_is_researcher(request.user):
        return redirect("studies")
    return redirect("dashboard")


# --- annotators -----------------------------------------------------------------------------------
@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    assignments = list(selectors.assignments_for_annotator(user=request.user))
    remaining = sum(1 for a in assignments if a.status == Assignment.Status.ASSIGNED)
    return render(
        request,
        "annotations/dashboard.html",
        {"assignments": assignments, "remaining": remaining, "done": len(assignments) - remaining},
    )


@login_required
@require_GET
def annotate_next(request: HttpRequest) -> HttpResponse:
    assignment = selectors.assignment_next_open(user=request.user)
    if assignment is None:
        messages.success(request, "Everything assigned to you is done. Thank you!")
        return redirect("dashboard")
    return redirect("annotate", assignment_id=assignment.pk)


def _own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    try:
        return selectors.assignment_for_user(assignment_id=assignment_id, user=request.user)
    except Assignment.DoesNotExist:
        raise Http404("No such item in your queue.") from None


@login_required
@require_GET
def annotate(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _own_assignment(request, assignment_id)
    item = assignment.item
    task = get_task(item.study_task.task)
    payload = item.explanation.payload if item.explanation_id else None
    units = task.units(summary_text=item.summary.text, payload=payload)
    queue = selectors.assignment_queue_position(assignment=assignment)
    document = item.summary.document
    state = {
        "assignmentId": assignment.pk,
        "task": task.key,
        "summary": item.summary.text,
        "document": document.text,
        "sentences": document.sentences,
        "units": [{"index": u.index, "text": u.text, "start": u.start, "end": u.end, **dict(u.extra)} for u in units],
        "choices": [{"value": c.value, "label": c.label, "key": c.key} for c in task.choices],
        "labels": {str(k): v for k, v in selectors.judgements_by_unit(assignment=assignment).items()},
        "comment": assignment.comment,
        "submitted": assignment.status == Assignment.Status.SUBMITTED,
        "submitUrl": reverse("annotate_submit", args=[assignment.pk]),
        "nextUrl": reverse("annotate", args=[queue.next_id]) if queue.next_id else None,
        "previousUrl": reverse("annotate", args=[queue.previous_id]) if queue.previous_id else None,
        "continueUrl": reverse("annotate_next"),
        "dashboardUrl": reverse("dashboard"),
    }
    return render(
        request,
        "annotations/annotate.html",
        {
            "assignment": assignment,
            "task": task,
            "queue": queue,
            "units": units,
            "state": state,
            "guidelines": item.study_task.guidelines,
        },
    )


@login_required
@require_POST
def annotate_submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = Assignment.objects.filter(pk=assignment_id).only("pk", "annotator_id").first()
    if assignment is None:
        raise Http404("No such item.")
    try:
        body = json.loads(request.body or b"{}")
        labels = body["labels"]
        if not isinstance(labels, dict):
            raise TypeError("labels must be an object")
        comment = str(body.get("comment", ""))
        seconds = float(body.get("seconds", 0))
    except (ValueError, KeyError, TypeError) as exc:
        return JsonResponse({"errors": [f"malformed request: {exc}"]}, status=400)
    try:
        saved = assignment_submit(
            assignment=assignment, user=request.user, labels=labels, comment=comment, seconds=seconds
        )
    except PermissionDenied as exc:
        return JsonResponse({"errors": [str(exc)]}, status=403)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.messages}, status=400)
    following = selectors.assignment_next_open(user=request.user)
    return JsonResponse(
        {
            "status": saved.status,
            "judged": len(labels),
            "next": reverse("annotate", args=[following.pk]) if following else reverse("dashboard"),
        }
    )


# --- researchers ----------------------------------------------------------------------------------
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
    rows = selectors.study_judgement_rows(study=study)
    chunks = csv_chunks(rows, selectors.EXPORT_FIELDS) if format_name == "csv" else jsonl_chunks(rows)
    response = StreamingHttpResponse(chunks, content_type=f"{EXPORT_FORMATS[format_name]}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-judgements.{format_name}"'
    return response
