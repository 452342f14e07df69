"""Roles are Django groups; admins are superusers. External annotators hold imported crowd labels; model
raters hold the labels of an LLM judge (judges app): a rater in every analysis, never counted as a human."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request

ADMIN = "admin"
RESEARCHER = "researcher"
ANNOTATOR = "annotator"
EXTERNAL = "external"
# Crowd workers who arrived by a study's public link (the crowd app): no password, one study, no role pages.
CROWD = "crowd"
MODEL = "model"
ROLES = (ADMIN, RESEARCHER, ANNOTATOR)


def user_has_role(user: Any, role: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if role == ADMIN:
        return bool(user.is_superuser)
    # Group names are cached on the user object for the request: pages ask several times.
    cached = getattr(user, "_faithanno_groups", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._faithanno_groups = cached
    return role in cached


def user_is_researcher(user: Any) -> bool:
    return user_has_role(user, ADMIN) or user_has_role(user, RESEARCHER)


def user_is_annotator(user: Any) -> bool:
    return user_has_role(user, ANNOTATOR)


def user_is_model_rater(user: Any) -> bool:
    return user_has_role(user, MODEL)


def signed_in_user(request: HttpRequest | Request) -> User:
    """The request's user, for a view that only signed-in users reach (login_required, IsAuthenticated):
    narrows `request.user` (a User or AnonymousUser) to the User the services and selectors take, and
    refuses (403) a request that got here without one."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("Sign in first.")
    return user
