"""Accounts and roles. There is no self-registration: admins and commands create people."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from rest_framework.authtoken.models import Token

from common import roles
from corpus.models import Dataset


def role_group(role: str) -> Group:
    group, _ = Group.objects.get_or_create(name=role)
    return group


def generate_password() -> str:
    return secrets.token_urlsafe(12)


@transaction.atomic
def account_create(
    *, username: str, role: str, email: str = "", password: str | None = None, first_name: str = ""
) -> tuple[User, str]:
    """Create a login for an annotator, a researcher or an admin. Returns the user and the password set."""
    if role not in roles.ROLES:
        raise ValueError(f"role must be one of {', '.join(roles.ROLES)}, got {role!r}")
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ValueError(f"a user named {username!r} already exists")
    password = password or generate_password()
    user = user_model(username=username, email=email, first_name=first_name)
    validate_password(password, user)
    user.set_password(password)
    if role == roles.ADMIN:
        user.is_staff = user.is_superuser = True
    user.save()
    if role != roles.ADMIN:
        user.groups.add(role_group(role))
    return user, password


def external_username(dataset: Dataset, worker: str) -> str:
    """External crowd workers are namespaced by dataset: 'wid_0' of two datasets are different people."""
    cleaned = re.sub(r"[^A-Za-z0-9@.+_-]+", "-", f"{dataset.name}.{worker}").strip("-")
    return f"ext.{cleaned}"[:150]


def external_annotators_get_or_create(*, dataset: Dataset, workers: Sequence[str]) -> dict[str, User]:
    """Accounts that hold imported labels. They cannot log in (inactive, no usable password)."""
    user_model = get_user_model()
    names = {worker: external_username(dataset, worker) for worker in workers}
    existing = {user.username: user for user in user_model.objects.filter(username__in=names.values())}
    created = []
    for name in names.values():
        if name not in existing:
            user = user_model(username=name, is_active=False)
            user.set_unusable_password()
            created.append(user)
    if created:
        user_model.objects.bulk_create(created)
        existing = {user.username: user for user in user_model.objects.filter(username__in=names.values())}
        role_group(roles.EXTERNAL).user_set.add(*[existing[u.username] for u in created])
    return {worker: existing[name] for worker, name in names.items()}


def model_rater_account_get_or_create(*, username: str) -> User:
    """The account that holds an LLM judge's labels (judges app). It cannot log in (inactive, no usable
    password) and is in the model role, so analyses take it as a rater and never count it as a human."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is None:
        user = user_model(username=username, is_active=False)
        user.set_unusable_password()
        user.save()
    elif not user.groups.filter(name=roles.MODEL).exists():
        raise ValueError(f"{username!r} is a person's account, not a model rater's")
    user.groups.add(role_group(roles.MODEL))
    return user


def api_token_get_or_create(*, user: User) -> Token:
    """The user's API token (one per user), created on first use."""
    token, _ = Token.objects.get_or_create(user=user)
    return token


@transaction.atomic
def api_token_rotate(*, user: User) -> Token:
    """A new API token for the user; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
