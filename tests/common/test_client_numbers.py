"""Numbers from clients are finite: a non-finite or out-of-range time answers 400 naming `seconds`, writes
nothing, and every JSON answer and export stays strict JSON. Existing NaN times are repaired by a migration."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.urls import reverse

from studies.models import Assignment, Study
from studies.services.studies import MAX_REPORTED_SECONDS
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of
from tests.snapshots import changed_tables, database_state

pytestmark = pytest.mark.django_db

# Raw JSON text for the value of "seconds": what a forged client can put on the wire.
NON_FINITE = ['"nan"', '"NaN"', '"inf"', '"-inf"', '"Infinity"', "1e999", "-1e999", '"1e999"', "NaN", "Infinity"]
OUT_OF_RANGE = ["1e300", '"1e300"', "1" + "0" * 400, str(MAX_REPORTED_SECONDS + 1), "-1", "null", "true", '"soon"']


def strict_json(line: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(line, parse_constant=refuse)


def open_assignments(study: Study, user: AbstractUser) -> list[Assignment]:
    return list(Assignment.objects.filter(item__study_task__study=study, annotator=user).order_by("position"))


def body_with_seconds(assignment: Assignment, seconds: str) -> str:
    labels = {str(unit.index): "correct" for unit in units_of(assignment)}
    return f'{{"labels": {json.dumps(labels)}, "comment": "ok", "seconds": {seconds}}}'


def submitters(alice: AbstractUser) -> dict[str, Callable[[Assignment, str], Any]]:
    web, api = client_for(alice), api_client_for(alice)
    return {
        "web": lambda a, body: web.post(
            reverse("api_assignment_submit", args=[a.pk]), body, content_type="application/json"
        ),
        "api": lambda a, body: api.post(
            reverse("api_assignment_submit", args=[a.pk]), body, content_type="application/json"
        ),
    }


@pytest.mark.parametrize("seconds", NON_FINITE + OUT_OF_RANGE)
@pytest.mark.parametrize("endpoint", ["web", "api"])
def test_it_refuses_a_time_that_is_not_a_finite_number_in_range_and_writes_nothing(
    bertscore_study: Study, alice: AbstractUser, endpoint: str, seconds: str
) -> None:
    assignment = open_assignments(bertscore_study, alice)[0]
    submit = submitters(alice)[endpoint]
    before = database_state()
    answer = submit(assignment, body_with_seconds(assignment, seconds))
    assert answer.status_code == 400, answer.content
    body = answer.json()
    named = body.get("field") == "seconds" or "seconds" in body
    assert named and "seconds" in json.dumps(body), body
    assert changed_tables(before, database_state()) == []


@pytest.mark.parametrize("endpoint", ["web", "api"])
def test_it_counts_a_finite_time_and_caps_one_visit_at_four_hours(
    bertscore_study: Study, alice: AbstractUser, endpoint: str
) -> None:
    first, second = open_assignments(bertscore_study, alice)[:2]
    submit = submitters(alice)[endpoint]
    assert submit(first, body_with_seconds(first, '"12.5"')).status_code == 200
    assert submit(second, body_with_seconds(second, str(MAX_REPORTED_SECONDS))).status_code == 200
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.time_spent, second.time_spent) == (12.5, 4 * 3600)


def test_it_keeps_every_answer_and_export_strict_json_after_hostile_times(
    bertscore_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    assignments = open_assignments(bertscore_study, alice)
    submit = submitters(alice)
    assert submit["web"](assignments[0], body_with_seconds(assignments[0], "30")).status_code == 200
    for seconds in NON_FINITE:
        for endpoint in ("web", "api"):
            assert submit[endpoint](assignments[1], body_with_seconds(assignments[1], seconds)).status_code == 400
    researcher, annotator = api_client_for(rita), api_client_for(alice)
    for client, url in (
        (researcher, reverse("api_study", args=[bertscore_study.pk])),
        (researcher, reverse("api_study_assignments", args=[bertscore_study.pk])),
        (annotator, reverse("api_assignments")),
        (annotator, reverse("api_assignment", args=[assignments[0].pk])),
    ):
        answer = client.get(url)
        assert answer.status_code == 200, url
        strict_json(answer.content.decode())
    export = client_for(rita).get(reverse("study_export", args=[bertscore_study.pk, "jsonl"]))
    lines = b"".join(export.streaming_content).decode().splitlines()
    rows = [strict_json(line) for line in lines]
    assert rows and {row["seconds_spent_on_item"] for row in rows} == {30.0}
    page = client_for(rita).get(reverse("study_detail", args=[bertscore_study.pk])).content.decode()
    assert "nan s" not in page.lower() and "inf s" not in page.lower()


def test_it_repairs_times_stored_as_nan_or_infinity(
    bertscore_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    first, second, third = open_assignments(bertscore_study, alice)[:3]
    # What the web endpoint stored before client numbers were checked.
    Assignment.objects.filter(pk=first.pk).update(time_spent=float("nan"), status=Assignment.Status.SUBMITTED)
    Assignment.objects.filter(pk=second.pk).update(time_spent=float("inf"))
    Assignment.objects.filter(pk=third.pk).update(time_spent=42.0)
    researcher = api_client_for(rita)
    researcher.raise_request_exception = False
    url = reverse("api_study", args=[bertscore_study.pk])
    assert researcher.get(url).status_code == 500
    migration = importlib.import_module("annotations.migrations.0005_repair_nonfinite_time_spent")
    # The models the migration was written for (annotations.Assignment, on today's studies table).
    loader = MigrationLoader(connection)
    migration.repair_time_spent(loader.project_state(("annotations", "0005_repair_nonfinite_time_spent")).apps, None)
    times = dict(Assignment.objects.filter(pk__in=[first.pk, second.pk, third.pk]).values_list("pk", "time_spent"))
    assert times == {first.pk: 0.0, second.pk: 0.0, third.pk: 42.0}
    answer = researcher.get(url)
    assert answer.status_code == 200
    strict_json(answer.content.decode())


def test_it_refuses_non_finite_numbers_anywhere_in_an_api_body(bertscore_study: Study, rita: AbstractUser) -> None:
    body = f'{{"name": "x", "dataset": {bertscore_study.dataset_id}, "tasks": ["bertscore"], "k": 1e999}}'
    client = api_client_for(rita)
    before = database_state()
    answer = client.post(reverse("api_studies"), body, content_type="application/json")
    assert answer.status_code == 400 and "k" in answer.json()
    assert changed_tables(before, database_state()) == []


def test_it_refuses_in_an_api_float_field_what_drf_accepts() -> None:
    from rest_framework import serializers

    from api.fields import FiniteFloatField

    class Input(serializers.Serializer):
        seconds = FiniteFloatField(min_value=0, max_value=10)

    # DRF's own FloatField (3.18) refuses non-finite values but takes JSON true as 1.0 and other scripts' digits.
    assert [serializers.FloatField().to_internal_value(raw) for raw in (True, "\u0661", "1_0")] == [1.0, 1.0, 10.0]
    for raw in ("nan", "inf", "-Infinity", "1e999", json.loads("1e999"), 11, -1, "ten", True, "\u0661", "1_0"):
        payload = Input(data={"seconds": raw})
        assert not payload.is_valid() and list(payload.errors) == ["seconds"], raw
    payload = Input(data={"seconds": "2.5"})
    assert payload.is_valid() and payload.validated_data == {"seconds": 2.5}
