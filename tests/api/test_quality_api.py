"""The worker quality endpoints (issue 14, points 7-9): thin, researchers of the study only, hostile input
refused by field, replayed actions give the same standing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import Participation, PaymentRules, Study
from tests.api.conftest import api_client_for

pytestmark = pytest.mark.django_db


def _post(client: APIClient, url: str, body: object) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_it_answers_the_quality_of_every_worker_and_the_live_progress(
    crowd_study: Study,
    cast: Callable[[str], APIClient],
) -> None:
    url = reverse("api_study_quality", args=[crowd_study.pk])
    data = cast("rita").get(url, {"method": "majority", "min_seconds": "5"}).json()
    workers = {row["username"]: row for row in data["workers"]}
    assert set(workers) == {"alice", "bob", "carol"} and data["method_used"] == "majority"
    assert workers["carol"]["fast_items"] == 2 and workers["carol"]["checks_graded"] is None
    assert workers["alice"]["payment"]["total"] == "0.00" and data["live"]["items_at_k"] == 2
    assert cast("ronald").get(url).status_code == 404
    assert cast("alice").get(url).status_code == 403
    assert cast("anonymous").get(url).status_code in (401, 403)
    for bad in ({"method": "coin"}, {"min_seconds": "nan"}, {"min_seconds": "-1"}, {"active_minutes": "0"}):
        refused = cast("rita").get(url, bad)
        assert refused.status_code == 400 and set(refused.json()) == set(bad)


def test_it_applies_actions_at_once_and_replays_them_idempotently(
    crowd_study: Study,
    rita: AbstractUser,
    carol: AbstractUser,
) -> None:
    client = api_client_for(rita)
    url = reverse("api_study_annotator_standing", args=[crowd_study.pk, carol.pk])
    first = _post(client, url, {"action": "exclude", "reason": "failed checks"})
    again = _post(client, url, {"action": "exclude", "reason": "failed checks"})
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert first.json()["excluded"] is True
    agreement = client.get(reverse("api_study_agreement", args=[crowd_study.pk])).json()[0]
    assert "carol" not in {row["annotator"] for row in agreement["annotators"]}
    assert _post(client, url, {"action": "bonus", "amount": "1.25"}).json()["bonus"] == "1.25"
    assert _post(client, url, {"action": "bonus", "amount": "1.25"}).json()["bonus"] == "1.25"
    assert _post(client, url, {"action": "reject"}).json()["review"] == "rejected"
    assert _post(client, url, {"action": "reinstate"}).json()["excluded"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "exclude"}, "reason"),
        ({"action": "exclude", "reason": "bad\u0000"}, "reason"),
        ({"action": "exclude", "reason": "x" * 2001}, "reason"),
        ({"action": "promote"}, "action"),
        ({"action": "bonus"}, "amount"),
        ({"action": "bonus", "amount": "NaN"}, "amount"),
        ({"action": "bonus", "amount": "-1"}, "amount"),
        ({"action": "bonus", "amount": "1e9"}, "amount"),
        ({"action": "bonus", "amount": "1000000"}, "amount"),
        ({"action": "bonus", "amount": True}, "amount"),
        ({"action": "bonus", "amount": 1e300}, "amount"),
    ],
)
def test_it_refuses_bad_actions_naming_the_field_and_changes_nothing(
    crowd_study: Study,
    rita: AbstractUser,
    carol: AbstractUser,
    body: dict[str, object],
    field: str,
) -> None:
    response = _post(
        api_client_for(rita), reverse("api_study_annotator_standing", args=[crowd_study.pk, carol.pk]), body
    )
    assert response.status_code == 400 and field in response.json()
    assert not Participation.objects.filter(excluded=True).exists()
    assert not Participation.objects.filter(bonus__gt=0).exists()


def test_it_refuses_infinity_in_the_json_body(crowd_study: Study, rita: AbstractUser, carol: AbstractUser) -> None:
    url = reverse("api_study_annotator_standing", args=[crowd_study.pk, carol.pk])
    response = api_client_for(rita).post(url, '{"action": "bonus", "amount": 1e999}', content_type="application/json")
    assert response.status_code == 400
    assert not Participation.objects.filter(bonus__gt=0).exists()


def test_it_finds_no_annotator_of_another_study_or_researcher(
    crowd_study: Study,
    rita: AbstractUser,
    ronald: AbstractUser,
    carol: AbstractUser,
    admin_user: AbstractUser,
) -> None:
    url = reverse("api_study_annotator_standing", args=[crowd_study.pk, carol.pk])
    assert _post(api_client_for(ronald), url, {"action": "approve"}).status_code == 404
    assert (
        _post(
            api_client_for(rita),
            reverse("api_study_annotator_standing", args=[crowd_study.pk, ronald.pk]),
            {"action": "approve"},
        ).status_code
        == 404
    )
    assert not Participation.objects.exists()
    assert _post(api_client_for(admin_user), url, {"action": "approve"}).status_code == 200


def test_it_sets_payment_rules_and_serves_the_payment_files(
    crowd_study: Study,
    rita: AbstractUser,
    ronald: AbstractUser,
    alice: AbstractUser,
) -> None:
    from studies.services.participation import participation_get_or_create

    participation_get_or_create(study=crowd_study, annotator=alice, platform="prolific", external_id="5f1a")
    client = api_client_for(rita)
    url = reverse("api_study_payment_rules", args=[crowd_study.pk])
    assert client.get(url).json()["per_item"] == "0.00"
    saved = client.put(url, json.dumps({"per_item": "0.20", "currency": "USD"}), content_type="application/json")
    assert saved.status_code == 200 and saved.json()["per_item"] == "0.20" and saved.json()["currency"] == "USD"
    for bad in (
        {"per_item": "nan"},
        {"per_item": "0.2", "gold_min_percent": 150},
        {"per_item": "0.2", "gold_bonus": "-5"},
    ):
        refused = client.put(url, json.dumps(bad), content_type="application/json")
        assert refused.status_code == 400
    assert str(PaymentRules.objects.get().per_item) == "0.20"
    assert (
        api_client_for(ronald).put(url, json.dumps({"per_item": "9"}), content_type="application/json").status_code
        == 404
    )
    bonus = client.get(reverse("api_study_payment_file", args=[crowd_study.pk, "prolific-bonus"]))
    assert bonus.status_code == 200 and bonus.content.decode() == "5f1a,0.40\n"
    assert client.get(reverse("api_study_payment_file", args=[crowd_study.pk, "venmo"])).status_code == 404


QUALITY_API_QUERIES = 16


def test_the_quality_endpoint_runs_a_fixed_number_of_queries(crowd_study: Study, rita: AbstractUser) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studies.models import Assignment
    from studies.services.studies import assignment_submit

    client = api_client_for(rita)
    url = reverse("api_study_quality", args=[crowd_study.pk])
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    for assignment in Assignment.objects.filter(item__study_task__study=crowd_study, status="assigned")[:6]:
        assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": "no"}, seconds=4)
    with CaptureQueriesContext(connection) as more:
        assert client.get(url).status_code == 200
    assert len(few.captured_queries) == len(more.captured_queries) == QUALITY_API_QUERIES
