"""Who reads and writes an assignment (issue 11 point 9): someone else's answers 404 on the web as on the
API, so ids cannot be probed; an annotator removed from a study no longer opens, drafts, submits or lists
its assignments, while the work they submitted stays in the study's data."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import Assignment, Judgement, Study
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def post_json(client: Client, name: str, assignment_id: int, body: dict[str, Any]) -> Any:
    return client.post(reverse(name, args=[assignment_id]), data=json.dumps(body), content_type="application/json")


WAYS = ("web open", "web draft", "web submit", "api open", "api submit")


def answers(web: Client, api: APIClient, assignment_id: int) -> dict[str, int]:
    """Status of every way to read or write one assignment, on the web and over the API."""
    return {
        "web open": web.get(reverse("annotate", args=[assignment_id])).status_code,
        "web draft": post_json(web, "api_assignment_draft", assignment_id, {"draft": {"comment": "mine"}}).status_code,
        "web submit": post_json(web, "api_assignment_submit", assignment_id, {"labels": {"0": "yes"}}).status_code,
        "api open": api.get(reverse("api_assignment", args=[assignment_id])).status_code,
        "api submit": api.post(
            reverse("api_assignment_submit", args=[assignment_id]), {"labels": {"0": "yes"}}, format="json"
        ).status_code,
    }


@pytest.fixture
def study(small_dataset: Any, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser) -> Study:
    """rita's factuality study; alice, bob and carol each judge every item's summary in turn (k = 2)."""
    return study_create(
        spec=StudySpec(
            name="Access",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study


def test_it_answers_404_on_the_web_and_the_api_for_someone_elses_assignment_as_for_none(
    study: Study, alice: AbstractUser, bob: AbstractUser, ronald: AbstractUser
) -> None:
    bobs = Assignment.objects.filter(item__study_task__study=study, annotator=bob).first()
    missing = Assignment.objects.order_by("-pk").first().pk + 1000
    for intruder in (alice, ronald):
        web, api = client_for(intruder), api_client_for(intruder)
        assert answers(web, api, bobs.pk) == answers(web, api, missing) == dict.fromkeys(WAYS, 404)
    bobs.refresh_from_db()
    assert bobs.status == Assignment.Status.ASSIGNED and bobs.draft == {} and not bobs.judgements.exists()
    # The owner is answered; what the intruders tried left nothing behind.
    own = answers(client_for(bob), api_client_for(bob), bobs.pk)
    assert own == dict.fromkeys(WAYS, 200)


def test_it_shuts_a_removed_annotator_out_of_the_study_and_keeps_their_submitted_work(
    study: Study, carol: AbstractUser, rita: AbstractUser
) -> None:
    carols = list(Assignment.objects.filter(item__study_task__study=study, annotator=carol).order_by("position"))
    done, still_open = carols[0], carols[1]
    assignment_submit(assignment=done, user=carol, labels={"0": "no"}, comment="carol was here")
    web, api = client_for(carol), api_client_for(carol)
    queue = reverse("api_assignments")
    assert {row["id"] for row in api.get(queue).json()["results"]} == {a.pk for a in carols}
    assert web.get(reverse("annotate", args=[done.pk])).status_code == 200

    removed = client_for(rita).post(reverse("study_annotators", args=[study.pk]), {"remove": carol.pk})
    assert removed.status_code == 302 and not study.annotators.filter(pk=carol.pk).exists()

    assert not Assignment.objects.filter(pk=still_open.pk).exists()  # handed to the others
    for assignment in (done, still_open):
        assert answers(web, api, assignment.pk) == dict.fromkeys(WAYS, 404)
    assert api.get(queue).json()["results"] == []
    assert web.get(reverse("dashboard")).context["assignments"] == []
    assert web.get(reverse("annotate_next")).url == reverse("dashboard")
    # What carol submitted stays in the study's data, unchanged by her attempts after removal.
    judgement = Judgement.objects.get(assignment=done)
    assert judgement.label == "no"
    export = client_for(rita).get(reverse("study_export", args=[study.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [(row["annotator"], row["label"], row["comment"]) for row in rows] == [("carol", "no", "carol was here")]
    progress = api_client_for(rita).get(reverse("api_study", args=[study.pk])).json()["progress"]
    assert {row["username"]: (row["member"], row["done"]) for row in progress}["carol"] == (False, 1)
