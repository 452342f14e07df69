from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from crowd.session import session_key


def crowd_session(request: HttpRequest) -> dict[str, Any]:
    """The link key of a crowd worker's session (None for everyone else): pages leave out what a worker
    cannot use and load the paste recorder."""
    return {"crowd_key": session_key(request)}
