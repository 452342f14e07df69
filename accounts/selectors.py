"""Reads about accounts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from rest_framework.authtoken.models import Token

from common import roles


def api_token_get(*, user: User) -> Token | None:
    """The user's API token, or None before they created one."""
    return Token.objects.filter(user=user).first()


def users_named(*, usernames: Sequence[str]) -> list[Any]:
    """The accounts with these usernames; unknown names are left out (the caller names them)."""
    return list(get_user_model().objects.filter(username__in=list(usernames)))


def user_get(*, user_id: int) -> Any:
    """One account by id; raises the user model's DoesNotExist."""
    return get_user_model().objects.get(pk=user_id)


def annotator_accounts() -> QuerySet[Any]:
    """Active accounts with the annotator role: who may be given a study's items."""
    return get_user_model().objects.filter(groups__name=roles.ANNOTATOR, is_active=True).order_by("username")


def adjudicator_accounts() -> QuerySet[Any]:
    """Active people's accounts who may be named a study's adjudicator: annotators, researchers and admins.
    Imported crowd labels' holders (external), crowd workers and LLM judges (model) are no one to decide."""
    people = Q(groups__name__in=[roles.ANNOTATOR, roles.RESEARCHER]) | Q(is_superuser=True)
    return get_user_model().objects.filter(people, is_active=True).distinct().order_by("username")


def model_rater_accounts() -> QuerySet[Any]:
    """The accounts of LLM judges (judges app): raters in the analyses, never counted as human annotators."""
    return get_user_model().objects.filter(groups__name=roles.MODEL)
