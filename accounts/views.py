"""The signed-in user's own account settings (their API token) and the guarded sign-in pages: the
lockout answer of django-axes and the rate-limited password-reset form."""

from __future__ import annotations

import math
from typing import Any

from axes.helpers import get_cool_off
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from accounts.selectors import api_token_get
from accounts.services import api_token_get_or_create, api_token_rotate
from common.roles import signed_in_user
from common.throttles import PasswordResetEmailThrottle, PasswordResetThrottle, throttle_wait

TOO_MANY_REQUESTS = 429


@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """Show the token; POST creates it (or, with "rotate", replaces it)."""
    if request.method == "POST":
        if "rotate" in request.POST:
            api_token_rotate(user=signed_in_user(request))
            messages.success(request, "A new token was made; the old one no longer works.")
        else:
            api_token_get_or_create(user=signed_in_user(request))
        return redirect("api_token")
    return render(request, "accounts/api_token.html", {"token": api_token_get(user=signed_in_user(request))})


def login_locked_out(request: HttpRequest, response: HttpResponse | None, credentials: Any) -> HttpResponse:
    """django-axes' answer to a sign-in while the username or the address is locked out (web and admin login):
    the login page again, saying until when. Every attempt during the lockout starts the wait again."""
    # axes_attempt_time: set on the request by django-axes.
    locked_until = (getattr(request, "axes_attempt_time", None) or timezone.now()) + get_cool_off(request)
    context = {
        "form": AuthenticationForm(request),
        "next": request.POST.get("next", ""),
        "locked_until": locked_until,
    }
    return render(request, "registration/login.html", context, status=TOO_MANY_REQUESTS)


class PasswordResetView(auth_views.PasswordResetView):
    """Django's password-reset form, limited per address and per e-mail address (THROTTLE_PASSWORD_RESET*)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = throttle_wait(request, [PasswordResetThrottle(), PasswordResetEmailThrottle()])
        if wait is None:
            return super().post(request, *args, **kwargs)
        context = self.get_context_data(form=self.get_form(), retry_minutes=max(1, math.ceil(wait / 60)))
        answer = self.render_to_response(context, status=TOO_MANY_REQUESTS)
        answer["Retry-After"] = str(math.ceil(wait))
        return answer
