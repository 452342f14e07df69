from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from common import roles
from tests.conftest import PASSWORD, client_for

pytestmark = pytest.mark.django_db


def test_it_creates_an_annotator_from_the_command_line() -> None:
    out = io.StringIO()
    call_command("create_account", "dora", "--email", "dora@example.org", stdout=out)
    password = re.search(r"password: (\S+)", out.getvalue()).group(1)
    user = get_user_model().objects.get(username="dora")
    assert roles.user_is_annotator(user) and not user.is_staff
    assert user.check_password(password)
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_account", "dora")


def test_it_rejects_a_weak_password(db: None) -> None:
    with pytest.raises(CommandError, match="too short"):
        call_command("create_account", "eve", "--password", "abc")
    assert not get_user_model().objects.filter(username="eve").exists()


def test_it_creates_an_annotator_in_the_admin(admin_user: AbstractUser) -> None:
    client = client_for(admin_user)
    response = client.post(
        "/admin/accounts/annotatoraccount/add/",
        {
            "username": "frank",
            "email": "frank@example.org",
            "first_name": "Frank",
            "password1": "a-long-passphrase-1",
            "password2": "a-long-passphrase-1",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    user = get_user_model().objects.get(username="frank")
    assert roles.user_is_annotator(user)
    listing = client.get("/admin/accounts/annotatoraccount/").content.decode()
    assert "frank" in listing


def test_it_logs_in_and_out(alice: AbstractUser) -> None:
    client = Client()
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("dashboard")).status_code == 302


def test_it_sends_a_password_reset_link_that_works(alice: AbstractUser) -> None:
    client = Client()
    client.post(reverse("password_reset"), {"email": "alice@example.org"})
    assert len(mail.outbox) == 1
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200 and "Choose a new password" in form_page.content.decode()
    client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "brand-new-secret-9", "new_password2": "brand-new-secret-9"},
    )
    alice.refresh_from_db()
    assert alice.check_password("brand-new-secret-9")


def test_it_has_no_self_registration(db: None) -> None:
    client = Client()
    for url in ["/accounts/register/", "/accounts/signup/", "/register/"]:
        assert client.get(url).status_code == 404
    assert "Register" not in client.get(reverse("login")).content.decode()
