"""What every page shares: role checks and the start page."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect

from common import roles
from common.error_pages import error_response
from common.exports import BINARY_FORMATS, EXPORT_FORMATS, export_chunks
from common.validation import InputError

API_PATH = "/api/"

View = Callable[..., HttpResponseBase]


def researcher_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not roles.user_is_researcher(request.user):
            raise PermissionDenied("Researchers only.")
        return view(request, *args, **kwargs)

    return wrapper


def input_error_answer(request: HttpRequest, exc: InputError) -> HttpResponse:
    """The 400 for bad client input, naming the field: {field: [message]} like every API validation error,
    {"errors": [...], "field": ...} to the annotation view's scripts (JSON requests), the app's 400 page otherwise."""
    if request.path_info.startswith(API_PATH):
        return JsonResponse({exc.field or "detail": [exc.message]}, status=400)
    if request.content_type == "application/json" or "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"errors": [f"malformed request: {exc}"], "field": exc.field}, status=400)
    return error_response(request, 400, f"Bad request: {exc}")


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if roles.user_is_researcher(request.user):
        return redirect("studies")
    return redirect("dashboard")


# --- annotators -----------------------------------------------------------------------------------


# The header (and Parquet metadata key) saying what an export holds, e.g. which judgements.
EXPORT_HEADER_PREFIX = "X-FaithAnno-"


def export_response(
    rows: Any,
    fields: Sequence[str],
    format_name: str,
    filename: str,
    types: Mapping[str, str],
    metadata: Mapping[str, str] | None = None,
) -> StreamingHttpResponse:
    """A streamed download of the rows as CSV, JSON lines or Parquet (columns of `types`); an unknown format
    answers 400 (the app's page). Each `metadata` entry is a response header X-FaithAnno-<Key> and, in
    Parquet, a key of the file's metadata."""
    if format_name not in EXPORT_FORMATS:
        raise BadRequest(f"Unknown export format {format_name!r}: use one of {', '.join(EXPORT_FORMATS)}.")
    content_type = EXPORT_FORMATS[format_name]
    if format_name not in BINARY_FORMATS:
        content_type += "; charset=utf-8"
    chunks = export_chunks(rows, fields, format_name, types, metadata=metadata)
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{format_name}"'
    for key, value in (metadata or {}).items():
        response[f"{EXPORT_HEADER_PREFIX}{key.title()}"] = value
    return response
