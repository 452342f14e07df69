"""The product's URLs and error handlers plus views that fail, for the error-page tests."""

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.urls import path
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from faithanno.urls import handler400, handler403, handler404, handler500
from faithanno.urls import urlpatterns as product_urlpatterns


def crash(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug, with secret-looking details: DATABASE password=hunter2")


def refuse(request: HttpRequest) -> HttpResponse:
    raise BadRequest("a request the view cannot use")


@api_view(["GET"])
@permission_classes([AllowAny])
def api_crash(request: Request) -> Response:
    raise RuntimeError("an API bug")


urlpatterns = [
    path("test-crash/", crash),
    path("test-bad-request/", refuse),
    path("api/v1/test-crash/", api_crash),
    *product_urlpatterns,
]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
