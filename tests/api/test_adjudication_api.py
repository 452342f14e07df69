"""The adjudication endpoints: the queue, one item, a decision, the automatic final labels; who may call them
and what bad input gets (issue 16, point 1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import Assignment, FinalLabel, Study, StudyItem
from studies.services.studies import assignment_submit
from tests.api.conftest import api_client_for
from tests.conftest import units_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def disputed(bertscore_study: Study, alice: AbstractUser, bob: AbstractUser) -> StudyItem:
    """alice: every unit correct; bob: the first item's units incorrect, the others correct."""
    first = None
    for assignment in Assignment.objects.filter(item__study_task__study=bertscore_study).order_by("item_id", "pk"):
        first = first or assignment.item
        label = "incorrect" if assignment.annotator == bob and assignment.item_id == first.pk else "correct"
        labels = {u.index: label for u in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels, comment="c")
    assert first is not None
    return first


def urls(item: StudyItem) -> dict[str, str]:
    study = item.study_task.study_id
    return {
        "queue": reverse("api_adjudication_queue", args=[study]),
        "item": reverse("api_adjudication_item", args=[study, item.pk]),
        "compute": reverse("api_final_labels_compute", args=[study]),
    }


def test_it_lists_reads_and_decides(disputed: StudyItem, rita: AbstractUser) -> None:
    client = api_client_for(rita)
    at = urls(disputed)
    queue = client.get(at["queue"]).json()
    assert queue["n_matching"] == 1 and queue["items"][0]["item"] == disputed.pk
    assert queue["items"][0]["lowest_agreement"] == 0.5 and queue["tasks"] == ["bertscore"]
    computed = client.post(at["compute"], {"method": "majority"}, format="json")
    assert computed.status_code == 200 and computed.json()["tasks"]["bertscore"]["unresolved"] > 0
    item = client.get(at["item"]).json()
    assert [rater["username"] for rater in item["raters"]] == ["alice", "bob"]
    unit = item["units"][0]
    assert unit["labels"] == {"alice": "correct", "bob": "incorrect"} and unit["majority"] is None
    assert unit["final"]["status"] == "unresolved" and unit["final"]["version"] == 1
    decided = client.post(at["item"], {"unit_index": unit["index"], "version": 1, "label": "correct"}, format="json")
    assert decided.status_code == 200
    final = decided.json()["final"]
    assert (final["label"], final["status"], final["by"], final["version"]) == ("correct", "adjudicated", "rita", 2)
    assert FinalLabel.objects.get(item=disputed, unit_index=unit["index"]).label == "correct"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"unit_index": 99999, "version": 0, "label": "correct"}, "unit_index"),
        ({"unit_index": -3, "version": 0, "label": "correct"}, "unit_index"),
        ({"unit_index": 2**40, "version": 0, "label": "correct"}, "unit_index"),
        ({"unit_index": "UNIT", "version": 0, "label": "faithful"}, "label"),
        ({"unit_index": "UNIT", "version": 0, "label": "c\u0000"}, "label"),
        ({"unit_index": "UNIT", "version": 0, "accept": "all"}, "accept"),
        ({"unit_index": "UNIT", "version": 0, "accept": "majority"}, "accept"),
        ({"unit_index": "UNIT", "version": 0, "label": "correct", "note": "\u0000"}, "note"),
        ({"unit_index": "UNIT", "version": 1.5, "label": "correct"}, "version"),
        ({"unit_index": "UNIT", "version": 7, "label": "correct"}, "version"),
    ],
)
def test_it_refuses_bad_decisions_naming_the_field(
    disputed: StudyItem, rita: AbstractUser, body: dict[str, Any], field: str
) -> None:
    if body["unit_index"] == "UNIT":
        body = {**body, "unit_index": units_of(Assignment.objects.filter(item=disputed).first())[0].index}
    answer = api_client_for(rita).post(urls(disputed)["item"], body, format="json")
    assert answer.status_code in (400, 409) and field in answer.json(), answer.json()
    assert not FinalLabel.objects.exists()


def test_it_refuses_a_replayed_decision(disputed: StudyItem, rita: AbstractUser) -> None:
    client = api_client_for(rita)
    index = units_of(Assignment.objects.filter(item=disputed).first())[0].index
    body = {"unit_index": index, "version": 0, "label": "incorrect"}
    assert client.post(urls(disputed)["item"], body, format="json").status_code == 200
    replayed = client.post(urls(disputed)["item"], {**body, "label": "correct"}, format="json")
    assert replayed.status_code == 409 and "reload" in replayed.json()["version"][0]
    assert FinalLabel.objects.get(item=disputed, unit_index=index).label == "incorrect"


def test_it_answers_404_to_everyone_but_the_studys_researchers_adjudicators_and_admins(
    disputed: StudyItem, cast: Callable[[str], APIClient], carol: AbstractUser
) -> None:
    at = urls(disputed)
    index = units_of(Assignment.objects.filter(item=disputed).first())[0].index
    body = {"unit_index": index, "version": 0, "label": "incorrect"}
    for role in ("ronald", "alice"):
        client = cast(role)
        assert client.get(at["queue"]).status_code == 404
        assert client.get(at["item"]).status_code == 404
        assert client.post(at["item"], body, format="json").status_code == 404
        assert client.post(at["compute"], {}, format="json").status_code == 404
    assert cast("anonymous").get(at["queue"]).status_code == 401
    assert not FinalLabel.objects.exists()
    assert cast("admin").get(at["item"]).status_code == 200
    disputed.study_task.study.adjudicators.add(carol)
    answer = api_client_for(carol).post(at["item"], body, format="json")
    assert answer.status_code == 200 and answer.json()["final"]["by"] == "carol"


def test_it_refuses_bad_queue_filters_and_compute_methods(disputed: StudyItem, rita: AbstractUser) -> None:
    client = api_client_for(rita)
    at = urls(disputed)
    for query, field in (({"below": "nan"}, "below"), ({"below": "3"}, "below"), ({"task": "qgqa"}, "task")):
        answer = client.get(at["queue"], query)
        assert answer.status_code == 400 and field in answer.json()
    answer = client.post(at["compute"], {"method": "oracle"}, format="json")
    assert answer.status_code == 400 and "method" in answer.json()
    assert not FinalLabel.objects.exists()
