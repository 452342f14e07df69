"""How errors are answered: the app's own pages for 400, 403, 404, 405 and 500, with the navigation of every
page, and JSON under /api/ (as the API's own errors). Nobody is shown Django's technical pages, which list
the URL configuration, settings and source code, not even with DEBUG on in the demo: tracebacks go to the
log (the console of bin/start)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.utils.safestring import SafeString, mark_safe
from django.views.debug import ExceptionReporter

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


# status -> (page title, page text, the API's "detail")
ERRORS: dict[int, tuple[str, str, str]] = {
    400: ("Bad request", "The request could not be understood. Go back and try again.", "Bad request."),
    403: ("Not allowed", "Your account cannot open this page.", "You do not have permission to perform this action."),
    404: ("Not found", "There is nothing here, or it is not yours to see.", "Not found."),
    405: (
        "Not possible this way",
        "This address only answers the page's own buttons and forms. Go back and use them.",
        "Method not allowed.",
    ),
    413: ("Upload too large", "The file is larger than this site accepts.", "Request body too large."),
    500: (
        "Something went wrong",
        "The error has been logged. Please try again in a moment.",
        "Server error.",
    ),
}


def error_response(request: HttpRequest, status: int, reason: str = "") -> HttpResponse:
    """The answer for an error status: JSON under /api/, else the error page (`reason` replaces its text)."""
    title, text, detail = ERRORS[status]
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": reason or detail}, status=status)
    template = loader.get_template("error.html")
    context = {"status": status, "title": title, "text": reason or text}
    try:
        body = template.render(context, request)
    except Exception:
        # The page's navigation needs the database (the user's roles); when that is what failed, the page
        # is still shown, without navigation.
        if status != 500:
            raise
        logger.exception("The error page could not be rendered with the request; rendering it without.")
        body = template.render(context)
    return HttpResponse(body, status=status)


def _reason(exception: BaseException | None) -> str:
    """The text our own views raise BadRequest with (written for the user); Django's SuspiciousOperation
    messages describe internals and are not shown."""
    return str(exception) if isinstance(exception, BadRequest) else ""


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 400, _reason(exception))


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # Our own PermissionDenied messages say what is missing ("Researchers only.").
    return error_response(request, 403, str(exception or ""))


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return error_response(request, 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form sent without a valid CSRF token: usually a page left open past its session."""
    return error_response(
        request,
        403,
        "The form could not be accepted: the page was open too long or from another site. Reload it and try again.",
    )


class ErrorPageReporter(ExceptionReporter):
    """With DEBUG on, Django renders uncaught exceptions (status 500) and SuspiciousOperation/BadRequest
    (status 400) with this reporter, in any middleware or view: the app's page instead of the technical
    one. Error e-mails to the admins keep Django's full report."""

    def _status(self) -> int:
        if self.exc_type is not None and issubclass(self.exc_type, (SuspiciousOperation, BadRequest)):
            return 400
        return 500

    # Both return what Django's would, a SafeString: the page is rendered by the template engine (autoescaped)
    # and the text is made of the fixed ERRORS.
    def get_traceback_html(self) -> SafeString:
        if self.is_email or self.request is None:
            return super().get_traceback_html()
        return mark_safe(error_response(self.request, self._status(), _reason(self.exc_value)).content.decode())

    def get_traceback_text(self) -> SafeString:
        if self.is_email or self.request is None:
            return super().get_traceback_text()
        title, _, detail = ERRORS[self._status()]
        return mark_safe(f"{title}: {detail}\n")


class DebugNotFoundMiddleware:
    """With DEBUG on, Django answers a 404 with its technical page, which lists every URL pattern; this
    answers with the app's page instead. It is the innermost middleware, so the page still passes through
    the others (security headers, the missing-slash redirect)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.DEBUG and response.status_code == 404 and request.resolver_match is None:
            return page_not_found(request)  # no URL pattern matched
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if settings.DEBUG and isinstance(exception, Http404):
            return page_not_found(request, exception)
        return None


class DebugApiErrorsMiddleware:
    """With DEBUG on, turns the pages ErrorPageReporter renders for /api/ requests into the API's JSON. It
    comes right after SecurityMiddleware, so it also sees errors raised by the middleware inside it (a host
    name the site does not serve, too many form fields)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and request.path.startswith(API_PREFIX)
            and response.status_code in (400, 500)
            and not hasattr(response, "accepted_renderer")  # not an answer of the API's own views
            and response.get("Content-Type", "").startswith(("text/html", "text/plain"))
        ):
            return error_response(request, response.status_code, _reported_detail(response))
        return response


def _reported_detail(response: HttpResponse) -> str:
    """The "detail" of the API error ErrorPageReporter rendered (sent as HTML by Django's debug handler),
    or "" for any other page."""
    try:
        detail = json.loads(response.content).get("detail", "")
    except (ValueError, AttributeError):
        return ""
    return detail if isinstance(detail, str) else ""


class BodilessErrorMiddleware:
    """Answers a 4xx that a view or decorator sent without a body (require_GET's and require_POST's 405, a bare
    HttpResponseForbidden) with the app's page, or the API's JSON under /api/, keeping its headers (Allow).
    It is the innermost middleware, so the page passes through the others."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        status = response.status_code
        if 400 <= status < 500 and status in ERRORS and not response.streaming and not response.content:
            page = error_response(request, status)
            for header in ("Allow", "Retry-After"):
                if header in response:
                    page[header] = response[header]
            return page
        return response
