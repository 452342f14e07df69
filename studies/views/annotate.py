"""Annotator pages: the dashboard and the annotation view. The view's script saves drafts, submissions and
"cannot judge" through the API (api/studies.py) under the session, the one submission path."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from common.roles import signed_in_user
from common.validation import MAX_ID, bounded_int
from protocols.tasks import get_task
from studies.models import Assignment
from studies.selectors import assignments as selectors
from studies.selectors.task_state import item_state, shown_guidelines
from studies.services.studies import MAX_SKIP_NOTE_CHARS, assignment_touch, assignments_reclaim_for_annotator
from studies.views.frame import frame_context

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
        **item_state(item=item, condition=assignment.condition),
        "mode": "assignment",
        "draftKey": f"faithanno:draft:{assignment.pk}",
        "saved": selectors.assignment_saved_work(assignment=assignment),
        "draft": assignment.draft or None,
        "comment": assignment.comment,
        "submitted": submitted,
        "submittedAt": assignment.submitted_at.timestamp() * 1000 if assignment.submitted_at else None,
        "guidelinesVersion": item.study_task.guidelines_version,
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
            endpoints={
                "submit": reverse("api_assignment_submit", args=[assignment.pk]),
                "draft": reverse("api_assignment_draft", args=[assignment.pk]),
                "skip": reverse("api_assignment_skip", args=[assignment.pk]),
                "done": reverse("annotate_next"),
            },
            assignment=assignment,
            queue=queue,
            guidelines=shown_guidelines(study_task=item.study_task, condition=assignment.condition),
            condition=assignment.condition,
        ),
    )
