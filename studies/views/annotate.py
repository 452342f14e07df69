"""Annotator pages: the dashboard, the annotation view, its draft and submission endpoints."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.roles import signed_in_user
from common.validation import MAX_ID, bounded_int
from protocols.minimal_edit import edit_diff
from protocols.tasks import get_task
from studies.models import Assignment
from studies.selectors import assignments as selectors
from studies.services.studies import (
    MAX_SKIP_NOTE_CHARS,
    assignment_draft_save,
    assignment_skip,
    assignment_submit,
    assignment_touch,
    assignments_reclaim_for_annotator,
)
from studies.views.frame import frame_context, json_body, submission_arguments, task_state

# A dashboard text filter longer than this matches nothing anyway (it is searched in names).
MAX_FILTER_CHARS = 200


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """The queue grouped by study and task; ?study=<id>&task=<key>&q=<text> filter the rows shown."""
    raw_study = request.GET.get("study", "")
    study_id = bounded_int(raw_study, field="study", minimum=1, maximum=MAX_ID) if raw_study else None
    task, text = request.GET.get("task", ""), request.GET.get("q", "")[:MAX_FILTER_CHARS]
    queue = selectors.annotator_queue(user=signed_in_user(request), study_id=study_id, task=task, text=text)
    return render(
        request,
        "annotations/dashboard.html",
        {
            "queue": queue,
            "assignments": queue.rows,
            "remaining": queue.remaining,
            "done": queue.total - queue.remaining,
            "filter": {"study": study_id, "task": task, "q": text},
            "filtered": study_id is not None or bool(task) or bool(text.strip()),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def annotate_next(request: HttpRequest) -> HttpResponse:
    """GET only reads the queue (a link, a prefetch or a crawler changes nobody's work). POST, from the
    dashboard's button once the queue is empty, first takes over work others left untouched for longer than
    their study allows."""
    if request.method == "POST":
        assignments_reclaim_for_annotator(user=signed_in_user(request))
    assignment_id = selectors.assignment_next_open_id(user=signed_in_user(request))
    if assignment_id is None:
        # Someone with no work at all sees the dashboard's "Nothing is assigned to you yet", nothing else.
        if selectors.annotator_assignments(user=signed_in_user(request)).exists():
            messages.success(request, "Everything assigned to you is done. Thank you!")
        return redirect("dashboard")
    return redirect("annotate", assignment_id=assignment_id)


def _own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    try:
        return selectors.assignment_for_user(assignment_id=assignment_id, user=signed_in_user(request))
    except Assignment.DoesNotExist:
        raise Http404("No such item in your queue.") from None


@login_required
@require_GET
def annotate(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _own_assignment(request, assignment_id)
    assignment_touch(assignment=assignment)
    item = assignment.item
    task = get_task(item.study_task.task)
    queue = selectors.assignment_queue_position(assignment=assignment)
    submitted = assignment.status == Assignment.Status.SUBMITTED
    state = {
        **task_state(task=task, item=item, units=selectors.item_units(item, with_document=True)),
        "mode": "assignment",
        "draftKey": f"faithanno:draft:{assignment.pk}",
        "saved": selectors.assignment_saved_work(assignment=assignment),
        "draft": assignment.draft or None,
        "comment": assignment.comment,
        "submitted": submitted,
        "submittedAt": assignment.submitted_at.timestamp() * 1000 if assignment.submitted_at else None,
        "guidelinesVersion": item.study_task.guidelines_version,
        "submitUrl": reverse("annotate_submit", args=[assignment.pk]),
        "draftUrl": reverse("annotate_draft", args=[assignment.pk]),
        "skipUrl": reverse("annotate_skip", args=[assignment.pk]),
        "skipReasons": [{"value": value, "label": label} for value, label in Assignment.SkipReason.choices],
        "maxSkipNoteChars": MAX_SKIP_NOTE_CHARS,
        "skipped": {"reason": assignment.get_skip_reason_display(), "note": assignment.skip_note}
        if assignment.status == Assignment.Status.SKIPPED
        else None,
        "nextUrl": reverse("annotate", args=[queue.next_id]) if queue.next_id else None,
        "previousUrl": reverse("annotate", args=[queue.previous_id]) if queue.previous_id else None,
        "continueUrl": reverse("annotate_next"),
        "dashboardUrl": reverse("dashboard"),
    }
    return render(
        request,
        "annotations/annotate.html",
        frame_context(
            study_task=item.study_task,
            task=task,
            state=state,
            examples=selectors.task_examples(study_task=item.study_task),
            assignment=assignment,
            queue=queue,
        ),
    )


def _assignment_or_404(request: HttpRequest, assignment_id: int) -> Assignment:
    """The user's own assignment (a reclaimed one too: saving it answers why not); anyone else's, or one of
    a study they were removed from, answers 404 as on the API, so ids cannot be probed."""
    assignment = (
        selectors.annotator_assignments(user=signed_in_user(request))
        .filter(pk=assignment_id)
        .select_related("item__study_task", "item__summary")
        .only("pk", "annotator_id", "status", "item__study_task__task", "item__summary__text")
        .first()
    )
    if assignment is None:
        raise Http404("No such item.")
    return assignment


@login_required
@require_POST
def annotate_submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment_or_404(request, assignment_id)
    body = json_body(request)
    if isinstance(body, HttpResponse):
        return body
    arguments = submission_arguments(body)  # bad input raises InputError: a 400 naming the field
    try:
        saved = assignment_submit(assignment=assignment, user=signed_in_user(request), **arguments)
    except PermissionDenied as exc:
        return JsonResponse({"errors": [str(exc)]}, status=403)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.messages}, status=400)
    following = selectors.assignment_next_open_id(user=signed_in_user(request))
    return JsonResponse(
        {"status": saved.status, "next": reverse("annotate", args=[following]) if following else reverse("dashboard")}
    )


@login_required
@require_POST
def annotate_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    body = json_body(request)
    if isinstance(body, HttpResponse):
        return body
    draft = body.get("draft")
    try:
        saved_at = assignment_draft_save(assignment_id=assignment_id, user=signed_in_user(request), draft=draft)
    except Assignment.DoesNotExist:
        raise Http404("No such item.") from None
    except PermissionDenied as exc:
        return JsonResponse({"errors": [str(exc)]}, status=403)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.messages}, status=400)
    answer: dict[str, Any] = {"savedAt": saved_at.isoformat()}
    task_part = draft["task"] if isinstance(draft, dict) and isinstance(draft.get("task"), dict) else {}
    edit = task_part.get("edit")
    edited = edit.get("text") if isinstance(edit, dict) else None
    if isinstance(edited, str):
        # The minimal-edit check runs on the server only, so the warning shown is the one the data will get.
        assignment = _assignment_or_404(request, assignment_id)
        if get_task(assignment.item.study_task.task).edit:
            answer["diff"] = edit_diff(assignment.item.summary.text, edited).as_dict()
            answer["edited"] = edited
    return JsonResponse(answer)


@login_required
@require_POST
def annotate_skip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """ "Cannot judge": {"reason": a SkipReason, "note": text}; answers where to go next."""
    body = json_body(request)
    if isinstance(body, HttpResponse):
        return body
    try:
        assignment_skip(
            assignment_id=assignment_id,
            user=signed_in_user(request),
            reason=body.get("reason"),
            note=body.get("note", ""),
        )
    except Assignment.DoesNotExist:
        raise Http404("No such item.") from None
    except PermissionDenied as exc:
        return JsonResponse({"errors": [str(exc)]}, status=403)
    except ValidationError as exc:
        return JsonResponse({"errors": exc.messages}, status=400)
    following = selectors.assignment_next_open_id(user=signed_in_user(request))
    return JsonResponse(
        {"status": "skipped", "next": reverse("annotate", args=[following]) if following else reverse("dashboard")}
    )
