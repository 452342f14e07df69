"""The pages of a crowd worker: the public link, consent, surveys, instructions, training, the pull of the
next item (annotation happens in the annotation frame, studies.views.annotate) and the end page."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth import login, logout
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.throttles import CrowdArrivalThrottle, CrowdWorkerThrottle, throttle_wait
from common.validation import MAX_ID, InputError, bounded_int, json_parse
from crowd.models import (
    ANNOTATION,
    CONSENT,
    END,
    INSTRUCTIONS,
    PHASE_NAMES,
    POST_SURVEY,
    PRE_SURVEY,
    TRAINING,
    CrowdStudy,
    CrowdWorker,
)
from crowd.selectors.crowd import (
    crowd_items_done,
    crowd_study_by_key,
    crowd_worker_get,
    training_item_current,
    training_items_count,
)
from crowd.services.assignment import crowd_item_next, crowd_paste_record, crowd_work_evaluate
from crowd.services.workers import (
    ArrivalError,
    StudyClosed,
    crowd_annotation_done,
    crowd_consent,
    crowd_end_code,
    crowd_instructions_read,
    crowd_survey_answer,
    crowd_training_answer,
    crowd_worker_arrive,
    crowd_worker_condition,
)
from crowd.session import KEY, WORKER, session_worker_id
from protocols.tasks import FAITHFUL, UNFAITHFUL, get_task
from studies.selectors.assignments import task_examples
from studies.selectors.task_state import shown_guidelines
from studies.views.frame import example_cards

TOO_MANY_REQUESTS = 429
PHASE_URLS = {
    CONSENT: "crowd_consent",
    PRE_SURVEY: "crowd_pre_survey",
    INSTRUCTIONS: "crowd_instructions",
    TRAINING: "crowd_training",
    ANNOTATION: "crowd_next",
    POST_SURVEY: "crowd_post_survey",
    END: "crowd_end",
}


def _refusal(request: HttpRequest, title: str, text: str, status: int, crowd: CrowdStudy | None = None) -> HttpResponse:
    return render(request, "crowd/refused.html", {"title": title, "text": text, "crowd": crowd}, status=status)


def _too_many(request: HttpRequest, wait: float) -> HttpResponse:
    answer = _refusal(
        request,
        "Too many requests",
        f"Please wait {max(1, math.ceil(wait / 60))} minute(s) and try again.",
        TOO_MANY_REQUESTS,
    )
    answer["Retry-After"] = str(math.ceil(wait))
    return answer


def _crowd_or_404(key: str) -> CrowdStudy:
    crowd = crowd_study_by_key(key=key)
    if crowd is None:
        raise Http404("No study has this link.")
    return crowd


View = Callable[..., HttpResponse]


def worker_required(view: View) -> View:
    """The view runs for the crowd worker of this session and study only; answers are throttled per worker."""

    @wraps(view)
    def wrapped(request: HttpRequest, key: str, *args: Any, **kwargs: Any) -> HttpResponse:
        worker = crowd_worker_get(worker_id=session_worker_id(request), user_id=request.user.pk)
        if worker is None or worker.crowd_study.key != key:
            crowd = crowd_study_by_key(key=key)
            return _refusal(
                request,
                "No study session",
                "This page belongs to a study session. Open the study from your platform's page (the link "
                "carries your participant id).",
                403,
                crowd,
            )
        if request.method == "POST":
            wait = throttle_wait(request, [CrowdWorkerThrottle()])
            if wait is not None:
                return _too_many(request, wait)
        return view(request, worker, *args, **kwargs)

    return wrapped


def _to_phase(worker: CrowdWorker) -> HttpResponse:
    return redirect(PHASE_URLS.get(worker.phase, "crowd_end"), key=worker.crowd_study.key)


def _context(worker: CrowdWorker, **extra: Any) -> dict[str, Any]:
    crowd = worker.crowd_study
    phases = [phase for phase in crowd.phases if phase != END]
    return {
        "crowd": crowd,
        "worker": worker,
        "study": crowd.study,
        "phases": [{"key": phase, "name": PHASE_NAMES[phase], "current": phase == worker.phase} for phase in phases],
        **extra,
    }


@require_GET
def crowd_start(request: HttpRequest, key: str) -> HttpResponse:
    """The public link: ?<worker parameter>=<id>[&<study parameter>=...&<session parameter>=...] starts the
    worker's session (or resumes it); a second worker id in the same browser replaces the session."""
    crowd = _crowd_or_404(key)
    if crowd.worker_param not in request.GET:
        worker = crowd_worker_get(worker_id=session_worker_id(request), user_id=request.user.pk)
        if worker is not None and worker.crowd_study_id == crowd.pk:
            return _to_phase(worker)
        return _refusal(
            request,
            "Your participant id is missing",
            f"This study is opened from your platform's page, whose link carries your participant id (the "
            f"{crowd.worker_param} parameter). Go back to the platform and open the study from there.",
            400,
            crowd,
        )
    if request.user.is_authenticated and session_worker_id(request) is None:
        # A researcher's or annotator's own session is never ended by a link (nor turned into a worker's).
        return _refusal(
            request,
            "You are signed in with an account",
            f"You are signed in as {request.user.get_username()}. To take part as a study participant, open the "
            "link in a private window or sign out first.",
            409,
            crowd,
        )
    wait = throttle_wait(request, [CrowdArrivalThrottle()])
    if wait is not None:
        return _too_many(request, wait)
    try:
        worker, _ = crowd_worker_arrive(crowd=crowd, params=request.GET.dict())
    except StudyClosed as exc:
        return _refusal(request, "This study is closed", exc.message, 403, crowd)
    except ArrivalError as exc:
        return _refusal(request, "This link cannot start the study", exc.message, 400, crowd)
    if request.user.is_authenticated and request.user.pk != worker.user_id:
        logout(request)  # another worker in this browser: their session ends (their work is kept), not merged
    if not request.user.is_authenticated:
        login(request, worker.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[WORKER] = worker.pk
    request.session[KEY] = crowd.key
    return _to_phase(worker)


@require_GET
@worker_required
def crowd_go(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    return _to_phase(worker)


@require_http_methods(["GET", "POST"])
@worker_required
def crowd_consent_page(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    if worker.phase != CONSENT or worker.status != CrowdWorker.Status.ACTIVE:
        return _to_phase(worker)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        try:
            worker = crowd_consent(worker=worker, accepted=request.POST.get("accept") == "yes")
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            return _to_phase(worker)
    return render(request, "crowd/consent.html", _context(worker, errors=errors), status=400 if errors else 200)


def _survey(request: HttpRequest, worker: CrowdWorker, survey: str) -> HttpResponse:
    if worker.phase != survey or worker.status != CrowdWorker.Status.ACTIVE:
        return _to_phase(worker)
    questions = getattr(worker.crowd_study, survey)
    errors: dict[str, list[str]] = {}
    answers: dict[str, Any] = {}
    if request.method == "POST":
        for question in questions:
            name = question["key"]
            answers[name] = request.POST.getlist(name) if question["kind"] == "multiple" else request.POST.get(name)
        try:
            worker = crowd_survey_answer(worker=worker, survey=survey, answers=answers)
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            return _to_phase(worker)
    shown = [
        {
            **question,
            "errors": errors.get(question["key"], []),
            "value": answers.get(question["key"]),
            "values": answers.get(question["key"]) if isinstance(answers.get(question["key"]), list) else [],
        }
        for question in questions
    ]
    return render(
        request,
        "crowd/survey.html",
        _context(worker, questions=shown, survey=survey, title=PHASE_NAMES[survey], errors=errors),
        status=400 if errors else 200,
    )


@require_http_methods(["GET", "POST"])
@worker_required
def crowd_pre_survey(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    return _survey(request, worker, PRE_SURVEY)


@require_http_methods(["GET", "POST"])
@worker_required
def crowd_post_survey(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    return _survey(request, worker, POST_SURVEY)


@require_http_methods(["GET", "POST"])
@worker_required
def crowd_instructions_page(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    if worker.phase != INSTRUCTIONS or worker.status != CrowdWorker.Status.ACTIVE:
        return _to_phase(worker)
    if request.method == "POST":
        return _to_phase(crowd_instructions_read(worker=worker))
    tasks = []
    condition = crowd_worker_condition(worker=worker)
    for study_task in worker.crowd_study.study.tasks.all():
        task = get_task(study_task.task)
        tasks.append(
            {
                "task": task,
                "guidelines": shown_guidelines(study_task=study_task, condition=condition),
                "examples": example_cards(task_examples(study_task=study_task), condition=condition),
            }
        )
    return render(request, "crowd/instructions.html", _context(worker, tasks=tasks))


@require_http_methods(["GET", "POST"])
@worker_required
def crowd_training_page(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    if worker.phase != TRAINING or worker.status != CrowdWorker.Status.ACTIVE:
        return _to_phase(worker)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        item_id = bounded_int(request.POST.get("item", ""), field="item", minimum=1, maximum=MAX_ID)
        try:
            feedback = crowd_training_answer(worker=worker, item_id=item_id, answer=request.POST.get("answer"))
        except ValidationError as exc:
            errors = exc.message_dict
        except PermissionDenied:
            return redirect("crowd_go", key=worker.crowd_study.key)
        else:
            return render(request, "crowd/training_feedback.html", _context(worker, feedback=feedback))
    item = training_item_current(worker=worker)
    if item is None:
        return _to_phase(worker)
    answered = len(worker.training_answers)
    context = _context(
        worker,
        item=item,
        number=answered + 1,
        total=training_items_count(worker=worker),
        choices=[(FAITHFUL, "Faithful: the document supports everything it says"), (UNFAITHFUL, "Not faithful")],
        errors=errors,
    )
    return render(request, "crowd/training.html", context, status=400 if errors else 200)


@require_GET
@worker_required
def crowd_next(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    """The annotation phase: check what the worker submitted (warn, or block and end), then their next item
    in the annotation frame; when none is left, the next phase."""
    if worker.phase != ANNOTATION or worker.status != CrowdWorker.Status.ACTIVE:
        return _to_phase(worker)
    evaluation = crowd_work_evaluate(worker=worker)
    if evaluation.ended:
        return redirect("crowd_end", key=worker.crowd_study.key)
    for reason in evaluation.new_warnings:
        shown = reason.removeprefix("warn: ")
        messages.warning(request, f"Please work carefully: {shown}. Continuing like this ends the study for you.")
    assignment = crowd_item_next(worker=worker)
    if assignment is None and not crowd_items_done(worker=worker):
        # Nothing to do at all (every item has its k): no completion code for no work.
        return _refusal(
            request,
            "No items are left",
            "Every item of this study has all the judgements it needs, so there is nothing for you to do. Please "
            "return the study on your platform.",
            200,
            worker.crowd_study,
        )
    if assignment is None:
        return _to_phase(crowd_annotation_done(worker=worker))
    return redirect("annotate", assignment_id=assignment.pk)


@require_GET
@worker_required
def crowd_end(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    """The end page: the code of how the session ended and, when the study sets one, the platform's address."""
    try:
        code, url = crowd_end_code(worker=worker)
    except PermissionDenied:
        messages.info(request, "You have not finished the study yet: your code is shown at the end.")
        return _to_phase(worker)
    return render(request, "crowd/end.html", _context(worker, code=code, redirect_url=url))


# {"assignment": id} is all a paste report holds.
MAX_PASTE_BODY_BYTES = 1024


@require_POST
@worker_required
def crowd_paste(request: HttpRequest, worker: CrowdWorker) -> HttpResponse:
    """{"assignment": id}: text was pasted into an explanation of the worker's own item."""
    if len(request.body) > MAX_PASTE_BODY_BYTES:
        raise InputError("body", f"request too large: at most {MAX_PASTE_BODY_BYTES} bytes")
    body = json_parse(request.body or b"{}")  # bad JSON: an InputError, answered 400 by the middleware
    if not isinstance(body, dict):
        raise InputError("body", "send a JSON object")
    assignment_id = bounded_int(body.get("assignment"), field="assignment", minimum=1, maximum=MAX_ID)
    try:
        count = crowd_paste_record(worker=worker, assignment_id=assignment_id)
    except ObjectDoesNotExist:
        raise Http404("No such item of yours.") from None
    return JsonResponse({"pastes": count})
