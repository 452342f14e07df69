"""Prolific's API: the submissions of one Prolific study, page by page (GET /api/v1/studies/<id>/submissions/
with `Authorization: Token <token>`), read into platform statuses (protocols.platform_status).

The token goes only to the configured host: no redirect is followed and a "next page" link to another host is
refused, and no error message carries the token. Each page is bounded in size and time."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import quote, urlsplit

from protocols.platform_status import (
    WORKER_ID,
    PlatformFileError,
    PlatformStatus,
    platform_statuses_merge,
    prolific_results_read,
)

SOURCE = "Prolific API"
TIMEOUT_SECONDS = 30
MAX_PAGE_BYTES = 10 * 1024 * 1024
MAX_PAGES = 1000


def _refused(message: str, *, page: int | None = None, field: str | None = None) -> PlatformFileError:
    return PlatformFileError(SOURCE, message, line=page, field=field)


def _next_path(answer: dict[str, Any], scheme: str, netloc: str, page: int) -> str | None:
    """The next page's path and query (Prolific's `_links.next.href`, or a plain `next`), None at the end."""
    links = answer.get("_links")
    link = links.get("next") if isinstance(links, dict) else answer.get("next")
    href = link.get("href") if isinstance(link, dict) else link
    if href in (None, ""):
        return None
    if not isinstance(href, str):
        raise _refused("the next page's link is not text", page=page, field="_links.next.href")
    parts = urlsplit(href)
    if parts.netloc and (parts.scheme, parts.netloc) != (scheme, netloc):
        raise _refused("the next page is on another host: not followed (it would carry the token)", page=page)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _get(scheme: str, netloc: str, path: str, token: str, page: int) -> dict[str, Any]:
    connection_class = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    connection = connection_class(netloc, timeout=TIMEOUT_SECONDS)
    try:
        connection.request("GET", path, headers={"Authorization": f"Token {token}", "Accept": "application/json"})
        response = connection.getresponse()
        body = response.read(MAX_PAGE_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise _refused(f"cannot reach {netloc}: {type(exc).__name__}", page=page) from None
    finally:
        connection.close()
    if response.status != 200:
        hint = " (check PROLIFIC_API_TOKEN)" if response.status in (401, 403) else ""
        raise _refused(f"HTTP {response.status} {response.reason}{hint}", page=page)
    if len(body) > MAX_PAGE_BYTES:
        raise _refused(f"a page larger than {MAX_PAGE_BYTES:,} bytes", page=page)
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise _refused("the answer is not JSON", page=page) from None
    if not isinstance(answer, dict):
        raise _refused("the answer is not a JSON object", page=page)
    return answer


def prolific_statuses_fetch(*, base_url: str, token: str, prolific_study_id: str) -> list[PlatformStatus]:
    """Every submission's status of the Prolific study, one per participant. PlatformFileError says what went
    wrong (the line is the page, or the submission's number for a bad submission)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.query:
        raise _refused(f"PROLIFIC_API_URL must be an http(s) URL with a host, got {base_url[:200]!r}")
    if not token:
        raise _refused("no token: set the environment variable PROLIFIC_API_TOKEN")
    if not WORKER_ID.fullmatch(prolific_study_id):
        raise _refused("the Prolific study id is 1-100 letters, digits, - or _", field="prolific_study")
    path: str | None = f"{parts.path.rstrip('/')}/api/v1/studies/{quote(prolific_study_id)}/submissions/"
    statuses: list[PlatformStatus] = []
    for page in range(1, MAX_PAGES + 1):
        if path is None:
            return platform_statuses_merge(statuses, source=SOURCE)
        answer = _get(parts.scheme, parts.netloc, path, token, page)
        statuses += prolific_results_read(answer.get("results"), source=SOURCE, first=len(statuses) + 1)
        path = _next_path(answer, parts.scheme, parts.netloc, page)
    raise _refused(f"more than {MAX_PAGES} pages")
