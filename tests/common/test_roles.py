"""signed_in_user: the one place a view turns request.user into the User that services and selectors take."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from rest_framework.request import Request

from common.roles import signed_in_user

pytestmark = pytest.mark.django_db


def test_it_gives_the_signed_in_user_of_a_page_or_api_request(alice: AbstractUser) -> None:
    page = RequestFactory().get("/")
    page.user = alice
    assert signed_in_user(page) == alice
    api = Request(RequestFactory().get("/api/v1/assignments/"))
    api.user = alice
    assert signed_in_user(api) == alice


def test_it_refuses_an_anonymous_request_that_got_past_the_checks() -> None:
    page = RequestFactory().get("/")
    page.user = AnonymousUser()
    with pytest.raises(PermissionDenied, match="Sign in first"):
        signed_in_user(page)
