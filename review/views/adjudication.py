"""Adjudication pages: the queue of a study's disagreements, one item side by side with its evidence (it saves
each final label through the API under the session), and the post that computes the automatic final labels.

Only the study's researchers, its adjudicators and admins reach them (studies_adjudicable); any other
study or item id answers 404, as every study page does.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common.roles import signed_in_user
from common.validation import InputError, finite_number, printable
from common.views import input_error_answer
from review.selectors import adjudication as selectors
from review.services.adjudication import study_final_labels_compute
from stats.crowd_quality import MAJORITY, MAX_REQUEST_JUDGEMENTS, METHODS
from studies.models import Study, StudyItem
from studies.selectors.access import studies_adjudicable
from studies.selectors.adjudication import adjudicable_tasks


def adjudicable_study(request: HttpRequest, study_id: int) -> Study:
    return get_object_or_404(studies_adjudicable(user=signed_in_user(request)), pk=study_id)


def queue_filters(params: dict[str, str], tasks: list[str]) -> selectors.QueueFilters:
    """The queue's filters from a query string; a bad one raises InputError naming it."""
    task = params.get("task") or None
    if task is not None and task not in tasks:
        raise InputError(
            "task", f"task must be one of the study's adjudicable tasks ({', '.join(tasks)}), got {task!r}"
        )
    below = params.get("below", "")
    return selectors.QueueFilters(
        task=task,
        below=finite_number(below, field="below", minimum=0.0, maximum=1.01) if below != "" else 1.0,
        flagged=params.get("flagged") == "1",
        open=params.get("open") == "1",
    )


def _queue(request: HttpRequest, study: Study) -> tuple[selectors.Queue, selectors.QueueFilters]:
    tasks = adjudicable_tasks(study=study)
    filters = queue_filters(request.GET.dict(), [task.task for task in tasks])
    return selectors.adjudication_queue(study=study, filters=filters, tasks=tasks), filters


@login_required
@require_GET
def adjudication_queue(request: HttpRequest, study_id: int) -> HttpResponse:
    study = adjudicable_study(request, study_id)
    try:
        queue, filters = _queue(request, study)
    except InputError as exc:
        return input_error_answer(request, exc)
    return render(
        request,
        "annotations/adjudication/queue.html",
        {
            "study": study,
            "queue": queue,
            "filters": filters,
            "query": urlencode(filters.query()),
            "methods": METHODS,
            "statuses": selectors.Status.choices,
        },
    )


@login_required
@require_GET
def adjudication_item(request: HttpRequest, study_id: int, item_id: int) -> HttpResponse:
    study = adjudicable_study(request, study_id)
    item = get_object_or_404(
        StudyItem.objects.select_related("study_task__study", "summary__document", "explanation"),
        pk=item_id,
        study_task__study=study,
    )
    try:
        queue, filters = _queue(request, study)
    except InputError as exc:
        return input_error_answer(request, exc)
    view = selectors.adjudication_item(item=item, user=signed_in_user(request), queue=queue)
    query = urlencode(filters.query())

    def url(pk: int | None) -> str:
        return f"{reverse('adjudication_item', args=[study.pk, pk])}?{query}" if pk else ""

    state = {
        **view.script_state(),
        # The page saves through the API under the session (api.adjudication.ItemApi), as the annotation views do.
        "saveUrl": reverse("api_adjudication_item", args=[study.pk, item.pk]),
        "nextUrl": url(view.next_id),
        "previousUrl": url(view.previous_id),
        "queueUrl": f"{reverse('adjudication_queue', args=[study.pk])}?{query}",
    }
    return render(
        request,
        "annotations/adjudication/item.html",
        {"study": study, "view": view, "inspection": view.inspection, "state": state, "query": query},
    )


@login_required
@require_POST
def adjudication_compute(request: HttpRequest, study_id: int) -> HttpResponse:
    """Compute the automatic final labels of every adjudicable task (ties broken by the chosen crowd model)."""
    study = adjudicable_study(request, study_id)
    method = request.POST.get("method", MAJORITY)
    if method not in METHODS:
        shown = printable(method[:40])
        problem = InputError("method", f"method must be one of {', '.join(METHODS)}, got {shown!r}")
        return input_error_answer(request, problem)
    try:
        counts = study_final_labels_compute(study=study, method=method, max_modelled_judgements=MAX_REQUEST_JUDGEMENTS)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
        return redirect("adjudication_queue", study.pk)
    for task, by_status in counts.items():
        summary = ", ".join(f"{n} {status}" for status, n in by_status.items() if n)
        messages.success(request, f"{task}: {summary or 'no judged units yet'}.")
    return redirect("adjudication_queue", study.pk)
