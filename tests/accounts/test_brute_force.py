"""Brute force is held off: failed sign-ins lock an account and an address out (django-axes), password-reset
requests and the API are rate limited (DRF throttles), and honest annotators at work are never throttled."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.throttling import SimpleRateThrottle

from studies.models import Assignment, Judgement, Study
from tests.api.conftest import api_client_for
from tests.conftest import PASSWORD, client_for, units_of

pytestmark = pytest.mark.django_db


def sign_in(client: Client, username: str, password: str, path: str = "/accounts/login/", **extra: Any) -> Any:
    return client.post(path, {"username": username, "password": password}, **extra)


def signed_in_as(client: Client) -> str | None:
    user = client.get(reverse("api_token")).context
    return user["user"].get_username() if user and user["user"].is_authenticated else None


def rate(scope: str) -> tuple[int, int]:
    """(requests, seconds) of a throttle scope as the product configures it."""
    return SimpleRateThrottle.parse_rate(None, settings.THROTTLE_RATES[scope])


def test_it_refuses_the_right_password_after_30_wrong_ones(alice: AbstractUser) -> None:
    client = Client()
    answers = [sign_in(client, "alice", f"guess-{n}").status_code for n in range(30)]
    # The first failures are ordinary wrong passwords; from the limit on every attempt is refused unchecked.
    limit = settings.AXES_FAILURE_LIMIT
    assert answers[: limit - 1] == [200] * (limit - 1)
    assert set(answers[limit - 1 :]) == {429}
    right = sign_in(client, "alice", PASSWORD)
    assert right.status_code == 429
    assert signed_in_as(client) is None
    # Per account: another address does not get in either.
    elsewhere = Client(REMOTE_ADDR="203.0.113.7")
    assert sign_in(elsewhere, "alice", PASSWORD).status_code == 429
    assert signed_in_as(elsewhere) is None


def test_it_tells_a_locked_out_user_until_when(alice: AbstractUser) -> None:
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        answer = sign_in(client, "alice", f"guess-{n}")
    before = timezone.now()
    answer = sign_in(client, "alice", PASSWORD)
    page = answer.content.decode()
    assert answer.status_code == 429
    assert "Too many failed sign-ins for this account or from your network" in page
    shown = re.search(r"blocked until <strong>(\d\d:\d\d) (\w+)</strong>", page)
    expected = timezone.localtime(before + settings.AXES_COOLOFF_TIME)
    assert shown.group(2) == expected.tzname()
    # The shown minute is the end of the wait (the request may cross a minute boundary).
    assert shown.group(1) in {(expected + timedelta(seconds=s)).strftime("%H:%M") for s in (0, 5)}, (
        shown.group(1),
        expected,
    )
    assert 'name="username"' in page and 'name="password"' in page  # the form is still there, for later


def test_it_lets_the_account_in_again_once_the_wait_is_over(alice: AbstractUser) -> None:
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "alice", f"guess-{n}")
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    # The attempts age past the cool-off, as if AXES_COOLOFF_MINUTES had passed.
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert sign_in(client, "alice", PASSWORD).status_code == 302
    assert signed_in_as(client) == "alice"


def test_it_lets_an_administrator_lift_a_lockout_from_the_command_line(alice: AbstractUser) -> None:
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "alice", f"guess-{n}")
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    call_command("axes_reset_username", "alice", stdout=io.StringIO())  # as the README says
    assert sign_in(client, "alice", PASSWORD).status_code == 302


def test_it_locks_out_an_address_that_tries_many_accounts(alice: AbstractUser, bob: AbstractUser) -> None:
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    for n in range(settings.AXES_FAILURE_LIMIT):
        # A different (made-up) account each time, and a forged X-Forwarded-For, which is not trusted.
        sign_in(attacker, f"user{n}", "password1", HTTP_X_FORWARDED_FOR=f"10.0.{n}.1")
    assert sign_in(attacker, "bob", PASSWORD).status_code == 429
    assert signed_in_as(attacker) is None
    # bob himself, from his own address, is not affected.
    own = Client(REMOTE_ADDR="192.0.2.20")
    assert sign_in(own, "bob", PASSWORD).status_code == 302
    assert signed_in_as(own) == "bob"


def test_it_locks_the_admin_login_too(admin_user: AbstractUser) -> None:
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "admin", f"guess-{n}", path="/admin/login/")
    answer = sign_in(client, "admin", PASSWORD, path="/admin/login/")
    assert answer.status_code == 429
    assert "Too many failed sign-ins" in answer.content.decode()
    assert client.get("/admin/").status_code == 302  # still sent to the login page
    # The lock is the account's, whichever login page is used.
    assert sign_in(Client(), "admin", PASSWORD).status_code == 429


def test_it_limits_password_reset_requests_per_e_mail_address(alice: AbstractUser) -> None:
    allowed, _ = rate("password_reset_email")
    client = Client()
    for n in range(allowed):
        # From different addresses: only the e-mail address counts here.
        answer = client.post(reverse("password_reset"), {"email": "Alice@example.org"}, REMOTE_ADDR=f"192.0.2.{n}")
        assert answer.status_code == 302
    assert len(mail.outbox) == allowed
    refused = client.post(reverse("password_reset"), {"email": "alice@example.org"}, REMOTE_ADDR="192.0.2.99")
    assert refused.status_code == 429
    assert "Too many reset requests" in refused.content.decode()
    assert int(refused["Retry-After"]) > 0
    assert len(mail.outbox) == allowed  # no further mail
    # Another e-mail address from the same address is still served.
    assert client.post(reverse("password_reset"), {"email": "bob@example.org"}).status_code == 302


def test_it_limits_password_reset_requests_per_address(db: None) -> None:
    allowed, _ = rate("password_reset")
    client = Client(REMOTE_ADDR="198.51.100.23")
    for n in range(allowed):
        assert client.post(reverse("password_reset"), {"email": f"person{n}@example.org"}).status_code == 302
    refused = client.post(reverse("password_reset"), {"email": "someone-else@example.org"})
    assert refused.status_code == 429
    assert "Too many reset requests" in refused.content.decode()
    # Showing the form is not a request for a reset.
    assert client.get(reverse("password_reset")).status_code == 200


def test_it_throttles_anonymous_api_requests_per_address(db: None) -> None:
    allowed, _ = rate("anon")
    client = Client(REMOTE_ADDR="198.51.100.40")
    answers = [client.get(reverse("api_docs")).status_code for _ in range(allowed + 1)]
    assert answers[:allowed] == [200] * allowed
    assert answers[-1] == 429
    refused = client.get(reverse("api_schema"))
    assert refused.status_code == 429 and b"throttled" in refused.content
    assert int(refused["Retry-After"]) > 0
    assert Client(REMOTE_ADDR="198.51.100.41").get(reverse("api_docs")).status_code == 200


def test_it_throttles_api_requests_per_account(bertscore_study: Study, alice: AbstractUser, settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.THROTTLE_RATES, "user": "5/minute"},
    }
    script = api_client_for(alice)
    answers = [script.get(reverse("api_assignments")).status_code for _ in range(6)]
    assert answers == [200] * 5 + [429]
    assert "throttled" in script.get(reverse("api_assignments")).json()["detail"]
    # The budget is the account's: bob's script is not affected.
    bob = Assignment.objects.filter(item__study_task__study=bertscore_study).exclude(annotator=alice).first().annotator
    assert api_client_for(bob).get(reverse("api_assignments")).status_code == 200


def test_it_never_throttles_an_annotator_saving_at_full_speed(bertscore_study: Study, alice: AbstractUser) -> None:
    # Far more than a busy annotator's minute (one draft save per 0.6 s pause, a submission every few
    # seconds), on the web endpoints and over the API, at the product's rates.
    assignments = list(Assignment.objects.filter(annotator=alice).order_by("position"))
    browser = client_for(alice)
    script = api_client_for(alice)
    statuses = []
    for n in range(150):
        assignment = assignments[n % len(assignments)]
        labels = {str(unit.index): "correct" if n % 2 else "incorrect" for unit in units_of(assignment)}
        draft = {"draft": {"savedAt": n, "seconds": n, "comment": "", "task": {"labels": labels}}}
        statuses.append(
            browser.post(
                reverse("api_assignment_draft", args=[assignment.pk]),
                json.dumps(draft),
                content_type="application/json",
            ).status_code
        )
        if n % 3 == 0:
            body = {"labels": labels, "comment": "", "seconds": 5}
            statuses.append(
                browser.post(
                    reverse("api_assignment_submit", args=[assignment.pk]),
                    json.dumps(body),
                    content_type="application/json",
                ).status_code
            )
            statuses.append(
                script.post(reverse("api_assignment_submit", args=[assignment.pk]), body, format="json").status_code
            )
            statuses.append(script.get(reverse("api_assignment", args=[assignment.pk])).status_code)
    assert set(statuses) == {200}, sorted(set(statuses))
    assert Judgement.objects.filter(assignment__annotator=alice).exists()
