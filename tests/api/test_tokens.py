"""People get an API token on their account page; scripts get one from a command."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_it_creates_shows_and_rotates_a_token_on_the_account_page(rita: AbstractUser) -> None:
    client = client_for(rita)
    page = client.get(reverse("api_token"))
    assert page.status_code == 200
    assert "Create a token" in page.content.decode()
    assert not Token.objects.filter(user=rita).exists()
    client.post(reverse("api_token"))
    first = Token.objects.get(user=rita).key
    assert first in client.get(reverse("api_token")).content.decode()
    client.post(reverse("api_token"), {"rotate": "1"})
    second = Token.objects.get(user=rita).key
    assert second != first
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    assert api.get(reverse("api_studies")).status_code == 401
    api.credentials(HTTP_AUTHORIZATION=f"Token {second}")
    assert api.get(reverse("api_studies")).status_code == 200


def test_it_links_the_token_page_from_the_navigation(alice: AbstractUser) -> None:
    assert f'href="{reverse("api_token")}"' in client_for(alice).get(reverse("dashboard")).content.decode()


def test_it_sends_anonymous_visitors_of_the_token_page_to_the_login(db: None) -> None:
    from django.test import Client

    answer = Client().get(reverse("api_token"))
    assert answer.status_code == 302 and answer["Location"].startswith(reverse("login"))


def test_it_prints_and_rotates_a_token_from_the_command(rita: AbstractUser) -> None:
    out = io.StringIO()
    call_command("api_token", "rita", stdout=out)
    key = out.getvalue().strip()
    assert key == Token.objects.get(user=rita).key
    again = io.StringIO()
    call_command("api_token", "rita", stdout=again)
    assert again.getvalue().strip() == key
    rotated = io.StringIO()
    call_command("api_token", "rita", "--rotate", stdout=rotated)
    assert rotated.getvalue().strip() not in ("", key)
    with pytest.raises(CommandError, match="nobody"):
        call_command("api_token", "nobody")
