"""A study's worker quality page (issue 14, points 7-9): every annotator's quality, flags and standing with
the actions on it, the payment rules with their preview and files, and the live progress."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from common.exports import csv_chunks, csv_lines
from common.roles import signed_in_user
from common.validation import InputError, bounded_int, finite_number
from common.views import researcher_required
from protocols.payments import APPROVED, MTURK_COLUMNS, REJECTED, mturk_rows, prolific_bonuses, prolific_ids
from review.selectors import quality as selectors
from stats.crowd_quality import COMPETENCE
from studies.models import Study
from studies.selectors.access import studies_for_user
from studies.selectors.participation import study_annotator
from studies.services.participation import participation_act
from studies.services.payments import payment_rules_set

# The payment files: name -> (file name, content type).
PAYMENT_FILES = {
    "prolific-approve": ("prolific-approve.txt", "text/plain"),
    "prolific-reject": ("prolific-reject.txt", "text/plain"),
    "prolific-bonus": ("prolific-bonus.txt", "text/plain"),
    "mturk": ("mturk.csv", "text/csv"),
}
# How many workers a payment file left out because their id would run as a spreadsheet formula (the
# quality page lists them).
LEFT_OUT_HEADER = "X-FaithAnno-Left-Out"
# The largest minimum active time a page accepts (a day).
MAX_MIN_SECONDS = 86_400.0


def quality_study(request: HttpRequest, study_id: int) -> Study:
    """An annotation study the user runs (admins: any); anything else answers 404."""
    return get_object_or_404(studies_for_user(user=signed_in_user(request)), pk=study_id, kind=Study.Kind.STUDY)


def quality_options(params: Any) -> dict[str, Any]:
    """The page's (and the API's) choices, checked: method, minimum seconds per item, the active window.
    InputError names the field."""
    method = params.get("method") or selectors.DEFAULT_METHOD
    if method not in COMPETENCE:
        raise InputError("method", f"method must be one of {', '.join(COMPETENCE)}")
    min_seconds = finite_number(
        params.get("min_seconds") or "0", field="min_seconds", minimum=0, maximum=MAX_MIN_SECONDS
    )
    active_minutes = bounded_int(
        params.get("active_minutes") or str(selectors.DEFAULT_ACTIVE_MINUTES),
        field="active_minutes",
        minimum=1,
        maximum=selectors.MAX_ACTIVE_MINUTES,
    )
    return {"method": method, "min_seconds": min_seconds, "active_minutes": active_minutes}


@researcher_required
@require_GET
def study_quality(request: HttpRequest, study_id: int) -> HttpResponse:
    study = quality_study(request, study_id)
    status, error = 200, ""
    try:
        options = quality_options(request.GET)
    except InputError as exc:
        options, status, error = quality_options({}), 400, exc.message
    quality = selectors.study_quality(study=study, **options)
    return render(
        request,
        "annotations/study/quality.html",
        {"study": study, "quality": quality, "options": options, "error": error, "payment_files": PAYMENT_FILES},
        status=status,
    )


@researcher_required
@require_POST
def study_quality_action(request: HttpRequest, study_id: int, annotator_id: int, action: str) -> HttpResponse:
    """Exclude (with a reason), reinstate, approve, reject or set a bonus; back to the page with what happened."""
    study = quality_study(request, study_id)
    annotator = study_annotator(study=study, annotator_id=annotator_id)
    if annotator is None:
        raise Http404("No such annotator in this study.")
    try:
        participation_act(
            study=study,
            annotator=annotator,
            action=action,
            reason=request.POST.get("reason", ""),
            amount=request.POST.get("amount"),
            by=signed_in_user(request),
        )
    except ValidationError as exc:
        for field, problems in exc.message_dict.items():
            messages.error(request, f"{annotator.username}, {field}: {' '.join(problems)}")
    else:
        messages.success(request, f"{annotator.username}: {action} done.")
    return redirect("study_quality", study_id=study.pk)


@researcher_required
@require_POST
def study_payment_rules(request: HttpRequest, study_id: int) -> HttpResponse:
    study = quality_study(request, study_id)
    try:
        payment_rules_set(
            study=study,
            per_item=request.POST.get("per_item", ""),
            per_accepted_item=request.POST.get("per_accepted_item", ""),
            gold_bonus=request.POST.get("gold_bonus", ""),
            gold_min_percent=request.POST.get("gold_min_percent", ""),
            currency=request.POST.get("currency", ""),
            by=signed_in_user(request),
        )
    except ValidationError as exc:
        for field, problems in exc.message_dict.items():
            messages.error(request, f"Payment rules, {field}: {' '.join(problems)}")
    else:
        messages.success(request, "Payment rules saved.")
    return redirect("study_quality", study_id=study.pk)


def payment_file_response(*, study: Study, name: str) -> HttpResponse:
    """One payment file of the study (PAYMENT_FILES), computed from its rules now; the page and the API
    serve it. An unknown name is a 404."""
    if name not in PAYMENT_FILES:
        raise Http404("No such payment file.")
    filename, content_type = PAYMENT_FILES[name]
    payments = selectors.study_payments(study=study)
    rows = payments.payable  # a worker id a spreadsheet would run is left out and listed on the quality page
    if name == "mturk":
        body = "".join(csv_chunks(mturk_rows(rows), MTURK_COLUMNS))
    elif name == "prolific-bonus":
        body = csv_lines(prolific_bonuses(rows))
    else:
        body = csv_lines(prolific_ids(rows, APPROVED if name == "prolific-approve" else REJECTED))
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-{filename}"'
    response[LEFT_OUT_HEADER] = str(len(payments.left_out))
    return response


@researcher_required
@require_GET
def study_payment_file(request: HttpRequest, study_id: int, name: str) -> HttpResponse:
    return payment_file_response(study=quality_study(request, study_id), name=name)
