"""The Django admin, answering 403 to signed-in people who are not staff instead of a login redirect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


class FaithAnnoAdminSite(admin.AdminSite):
    site_header = "FaithAnno administration"
    site_title = "FaithAnno admin"

    def admin_view(self, view: View, cacheable: bool = False) -> View:
        inner = super().admin_view(view, cacheable)

        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.user.is_authenticated and not self.has_permission(request):
                raise PermissionDenied("The admin is for administrators.")
            return inner(request, *args, **kwargs)

        # AdminSite.admin_view returns a view of the type it was given; guarded takes the same arguments.
        return cast(View, guarded)

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.user.is_authenticated and not self.has_permission(request):
            raise PermissionDenied("The admin is for administrators.")
        return super().login(request, extra_context)
