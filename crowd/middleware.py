"""A crowd worker's session reaches nothing but their own study: its crowd pages and their own items (the
annotation views and the API's assignment endpoints, which only ever show a user their own assignments).
The home page, the dashboard and "next item" lead to the study's current phase; anything else answers 403."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from common.error_pages import error_response
from common.views import API_PATH
from crowd.selectors.crowd import crowd_worker_is_active
from crowd.session import session_key, session_worker_id

# The annotation frame and the API endpoints of one's own assignments (every one of them answers 404 for
# anyone else's); open to a worker whose session is still running.
FRAME = frozenset(
    {
        "annotate",
        "api_assignments",
        "api_assignment",
        "api_assignment_submit",
        "api_assignment_draft",
        "api_assignment_skip",
    }
)
TO_PHASE = frozenset({"home", "dashboard", "annotate_next"})


class CrowdSessionMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        worker_id = session_worker_id(request)
        if worker_id is None:
            return None
        name = request.resolver_match.url_name if request.resolver_match else None
        key = session_key(request)
        if name == "crowd_start":
            return None  # another link (or this one again) starts or resumes that worker's session
        if name and name.startswith("crowd_") and kwargs.get("key") == key:
            return None
        if name in TO_PHASE and request.method == "GET":
            return redirect("crowd_next", key=key)
        if name in FRAME:
            if crowd_worker_is_active(worker_id=worker_id):
                return None
            if request.method == "GET" and not request.path_info.startswith(API_PATH):
                return redirect("crowd_go", key=key)  # the session has ended: its end page
        return error_response(request, 403, "A study participant's session reaches only the study.")
