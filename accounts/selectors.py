"""Reads about accounts."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import QuerySet
from rest_framework.authtoken.models import Token

from common import roles


def api_token_get(*, user: User) -> Token | None:
    """The user's API token, or None before they created one."""
    return Token.objects.filter(user=user).first()


def annotator_accounts() -> QuerySet[Any]:
    """Active accounts with the annotator role: who may be given a study's items."""
    return get_user_model().objects.filter(groups__name=roles.ANNOTATOR, is_active=True).order_by("username")
