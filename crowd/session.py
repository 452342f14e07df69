"""What a crowd worker's session holds: the worker and their study's link key (set when they arrive)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

WORKER = "crowd_worker"
KEY = "crowd_key"


def session_worker_id(request: HttpRequest) -> Any:
    session = getattr(request, "session", None)
    return session.get(WORKER) if session is not None else None


def session_key(request: HttpRequest) -> Any:
    session = getattr(request, "session", None)
    return session.get(KEY) if session is not None else None
