"""Researcher pages: the inspector of one summary and the comparison of two summaries of one document."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from common.error_pages import error_response
from common.roles import signed_in_user
from common.validation import MAX_ID, InputError, bounded_int
from common.views import researcher_required
from corpus.models import Summary
from inspector.selectors.inspect import InspectionError, summary_comparison, summary_inspection


@researcher_required
@require_GET
def summary_inspect(request: HttpRequest, summary_id: int) -> HttpResponse:
    try:
        inspection = summary_inspection(summary_id=summary_id, user=signed_in_user(request))
    except Summary.DoesNotExist:
        raise Http404("No such summary.") from None
    return render(request, "annotations/inspect/summary.html", {"inspection": inspection})


def _summary_id(request: HttpRequest, key: str) -> int:
    raw = request.GET.get(key, "")
    try:
        return bounded_int(raw, field=key, minimum=1, maximum=MAX_ID)
    except InputError:
        message = f"parameter {key!r} must be a summary id (a positive whole number), got {raw!r}"
        raise InputError(key, message) from None


@researcher_required
@require_GET
def summary_compare(request: HttpRequest) -> HttpResponse:
    try:
        a_id, b_id = _summary_id(request, "a"), _summary_id(request, "b")
        comparison = summary_comparison(a_id=a_id, b_id=b_id, user=signed_in_user(request))
    except (InputError, InspectionError) as exc:
        return error_response(request, 400, f"Cannot compare: {exc}.")
    except Summary.DoesNotExist:
        raise Http404("No such summary.") from None
    return render(request, "annotations/inspect/compare.html", {"comparison": comparison})
