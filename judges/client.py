"""One chat completions request over HTTP(S), with the standard library: a time-out on the whole answer, a
bounded body, no redirects (a redirect would carry the API key to another host) and no key in any error
message or log line."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from protocols.llm_judge import EndpointError

CHAT_PATH = "/chat/completions"
# Statuses another try may cure: rate limits, overloaded or restarting servers.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
READ_CHUNK = 64 * 1024


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise EndpointError(f"the endpoint redirects (HTTP {code}); give the final URL", retryable=False)


_OPENER = urllib.request.build_opener(_NoRedirects)


def endpoint_url(raw: str) -> str:
    """The chat completions URL from a base URL (`http://host:8000/v1`) or the full one; ValueError for
    anything that is not an http(s) URL with a host."""
    url = raw.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"endpoint must be an http:// or https:// URL with a host, got {raw[:200]!r}")
    if parts.username or parts.password:
        raise ValueError("endpoint: put the API key in its own field, not in the URL")
    if parts.query or parts.fragment:
        raise ValueError("endpoint: a URL without ?query or #fragment")
    if len(url) > 500:
        raise ValueError(f"endpoint has {len(url)} characters; at most 500")
    return url if url.rstrip("/").endswith(CHAT_PATH) else url.rstrip("/") + CHAT_PATH


def _read_bounded(response: Any, max_bytes: int, deadline: float) -> bytes:
    length = response.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > max_bytes:
        raise EndpointError(f"the response has {int(length)} bytes; at most {max_bytes} are read")
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise EndpointError("the endpoint did not finish its answer in time")
        chunk = response.read(READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise EndpointError(f"the response is larger than {max_bytes} bytes")
        chunks.append(chunk)


def chat_post(*, url: str, api_key: str, body: Mapping[str, Any], timeout: float, max_bytes: int) -> bytes:
    """POST the body, return the response body; EndpointError says why not (never naming the key)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    deadline = time.monotonic() + timeout
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return _read_bounded(response, max_bytes, deadline)
    except EndpointError:
        raise
    except urllib.error.HTTPError as exc:
        detail = ""
        try:
            detail = exc.read(2000).decode("utf-8", "replace")
            detail = detail.replace(api_key, "***") if api_key else detail
        except OSError:
            pass
        hint = " (check the API key)" if exc.code in (401, 403) else ""
        raise EndpointError(
            f"HTTP {exc.code} {exc.reason}{hint}" + (f": {detail[:300]}" if detail else ""),
            retryable=exc.code in RETRYABLE_STATUSES,
        ) from None
    except TimeoutError:
        raise EndpointError(f"no answer within {timeout:g} s (time-out)") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError | socket.timeout):
            raise EndpointError(f"no answer within {timeout:g} s (time-out)") from None
        raise EndpointError(f"cannot reach the endpoint: {exc.reason}") from None
    except (OSError, ValueError) as exc:
        raise EndpointError(f"the connection failed: {type(exc).__name__}") from None
