"""The upload size limit (FAITHANNO_UPLOAD_MAX_BYTES): a body over it answers 413 naming the limit before
anything reads it, so a large file never ties up a web worker."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from common.error_pages import error_response


def upload_limit_message(size: int | None = None) -> str:
    limit = settings.FAITHANNO_UPLOAD_MAX_BYTES
    told = f"The upload is {size:,} bytes; " if size is not None else "The upload is too large; "
    return (
        f"{told}the limit is {limit:,} bytes ({limit / 1024 / 1024:.1f} MiB, FAITHANNO_UPLOAD_MAX_BYTES). "
        "Import larger files with `python manage.py import_dataset`."
    )


def upload_too_large(request: HttpRequest, size: int | None = None) -> HttpResponse:
    return error_response(request, 413, upload_limit_message(size))


class UploadLimitMiddleware:
    """Refuses a request whose declared length (Content-Length) is over the limit. A body sent without a
    length is counted by the import views once Django has spooled it to disk."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.FAITHANNO_UPLOAD_MAX_BYTES:
            return upload_too_large(request, declared)
        return self.get_response(request)
