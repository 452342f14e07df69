"""Client input checks that apply to every request, before and after the view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from common.validation import InputError, printable, text_problem
from common.views import API_PATH, input_error_answer

# Form bodies are read here, except the API's multipart uploads: reading them would take in the files before
# the view decides whether it wants them (a web page's POST is read by the CSRF check anyway). Django decodes
# multipart fields so that no surrogate survives, and the API's serializer fields refuse NUL.
URLENCODED, MULTIPART = "application/x-www-form-urlencoded", "multipart/form-data"


class ClientInputMiddleware:
    """Every query-string and form parameter (name and values) must be storable text: NUL or a lone
    surrogate answers 400 naming the parameter before the view runs. An InputError that a view lets
    through (common.validation) answers 400 naming its field, like Http404 answers 404."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Callable[..., HttpResponse], *args: Any) -> HttpResponse | None:
        # Here rather than in __call__: every middleware has run (request.user is known to an error page, and
        # a form too large to parse fails where it always did), and no view has.
        try:
            _parameters_check(request)
        except InputError as exc:
            return input_error_answer(request, exc)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, InputError):
            return input_error_answer(request, exception)
        return None


def _parameters_check(request: HttpRequest) -> None:
    sources = [request.GET]
    api = request.path_info.startswith(API_PATH)
    if request.method == "POST" and (
        request.content_type == URLENCODED or (request.content_type == MULTIPART and not api)
    ):
        sources.append(request.POST)
    for parameters in sources:
        for name, values in parameters.lists():
            shown = printable(name)
            problem = text_problem(name)
            if problem is not None:
                raise InputError(shown, f"the parameter name {shown!r} {problem}")
            for value in values:
                problem = text_problem(value)
                if problem is not None:
                    raise InputError(shown, f"{shown} {problem}")
