"""API clients for the cast: each signs in with their own token, as a script would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from rest_framework.test import APIClient

from accounts.services import api_token_get_or_create


def api_client_for(user: AbstractUser | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_get_or_create(user=user).key}")
    return client


@pytest.fixture
def cast(
    alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> Callable[[str], APIClient]:
    """role name -> a client signed in as that member of the cast ("anonymous": no token)."""
    users: dict[str, Any] = {
        "anonymous": None,
        "alice": alice,
        "bob": bob,
        "rita": rita,
        "ronald": ronald,
        "admin": admin_user,
    }
    return lambda name: api_client_for(users[name])
