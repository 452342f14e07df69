"""What every page shares: role checks and the start page."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from annotations import roles

View = Callable[..., HttpResponse]


def researcher_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not roles.user_is_researcher(request.user):
            raise PermissionDenied("Researchers only.")
        return view(request, *args, **kwargs)

    return wrapper


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if roles.user_is_researcher(request.user):
        return redirect("studies")
    return redirect("dashboard")


# --- annotators -----------------------------------------------------------------------------------
