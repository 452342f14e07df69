"""Reads about accounts."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from rest_framework.authtoken.models import Token


def api_token_get(*, user: AbstractUser) -> Token | None:
    """The user's API token, or None before they created one."""
    return Token.objects.filter(user=user).first()
