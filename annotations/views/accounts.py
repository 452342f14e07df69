"""The signed-in user's own account settings: their API token."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotations.selectors.accounts import api_token_get
from annotations.services.accounts import api_token_get_or_create, api_token_rotate


@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """Show the token; POST creates it (or, with "rotate", replaces it)."""
    if request.method == "POST":
        if "rotate" in request.POST:
            api_token_rotate(user=request.user)
            messages.success(request, "A new token was made; the old one no longer works.")
        else:
            api_token_get_or_create(user=request.user)
        return redirect("api_token")
    return render(request, "accounts/api_token.html", {"token": api_token_get(user=request.user)})
