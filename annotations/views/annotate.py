"""Annotator pages: the dashboard, the annotation view and its submission endpoint."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotations.models import Assignment
from annotations.selectors import assignments as selectors
from annotations.services.studies import assignment_submit
from annotations.tasks import get_task


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
    units = selectors.item_units(item)
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
