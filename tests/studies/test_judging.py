from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from studies.models import Assignment, Judgement, Study
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def first_assignment(study: Study, user: AbstractUser) -> Assignment:
    return Assignment.objects.filter(item__study_task__study=study, annotator=user).order_by("position").first()


def post(client: Any, assignment: Assignment, labels: dict[Any, str], **extra: Any) -> Any:
    return client.post(
        reverse("api_assignment_submit", args=[assignment.pk]),
        data=json.dumps({"labels": labels, "comment": extra.get("comment", ""), "seconds": extra.get("seconds", 5)}),
        content_type="application/json",
    )


def test_it_stores_a_label_per_unit_and_marks_the_item_done(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    units = units_of(assignment)
    labels = {unit.index: "correct" for unit in units}
    response = post(client_for(alice), assignment, labels, comment="  tricky one ", seconds=12.5)
    assert response.status_code == 200, response.content
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.comment == "tricky one"
    assert assignment.time_spent == 12.5
    assert assignment.guidelines_version == 1
    stored = list(assignment.judgements.order_by("unit_index").values_list("unit_index", "unit_text", "label"))
    assert stored == [(u.index, u.text, "correct") for u in sorted(units, key=lambda u: u.index)]


def test_it_keeps_one_judgement_set_when_submitted_twice(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    units = units_of(assignment)
    client = client_for(alice)
    post(client, assignment, {u.index: "correct" for u in units}, seconds=3)
    first_created = dict(assignment.judgements.values_list("unit_index", "created_at"))
    response = post(client, assignment, {u.index: "incorrect" for u in units}, seconds=4)
    assert response.status_code == 200
    assert assignment.judgements.count() == len(units)
    assert set(assignment.judgements.values_list("label", flat=True)) == {"incorrect"}
    assert dict(assignment.judgements.values_list("unit_index", "created_at")) == first_created
    assignment.refresh_from_db()
    assert assignment.time_spent == 7


def test_it_rejects_a_label_outside_the_tasks_choices(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    labels = {u.index: "correct" for u in units_of(assignment)}
    labels[next(iter(labels))] = "yes"
    response = post(client_for(alice), assignment, labels)
    assert response.status_code == 400
    assert "'yes' is not a choice of task 'bertscore'" in response.json()["errors"][0]
    assert not Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_it_rejects_a_unit_that_does_not_exist(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    labels = {u.index: "correct" for u in units_of(assignment)}
    labels[999] = "correct"
    response = post(client_for(alice), assignment, labels)
    assert response.status_code == 400
    assert "unit 999 does not exist in this item" in response.json()["errors"]
    assert not Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).exists()


def test_it_rejects_an_incomplete_submission(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    units = units_of(assignment)
    response = post(client_for(alice), assignment, {units[0].index: "correct"})
    assert response.status_code == 400
    assert f"{len(units) - 1} unit(s) still need a label." in response.json()["errors"]
    assert not Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).exists()


def test_it_refuses_to_judge_an_item_assigned_to_someone_else(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    assignment = first_assignment(bertscore_study, bob)
    labels = {u.index: "correct" for u in units_of(assignment)}
    for intruder in (alice, carol):
        response = post(client_for(intruder), assignment, labels)
        assert response.status_code == 404
    assert not Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).exists()


def test_it_answers_400_to_a_malformed_request(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    response = client_for(alice).post(
        reverse("api_assignment_submit", args=[assignment.pk]), data="{", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["detail"].startswith("JSON parse error")


def test_it_reopens_a_submitted_item_with_its_labels(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = first_assignment(bertscore_study, alice)
    units = units_of(assignment)
    client = client_for(alice)
    post(client, assignment, {u.index: "dont_know" for u in units})
    page = client.get(reverse("annotate", args=[assignment.pk]))
    assert page.status_code == 200
    state = page.context["state"]
    assert state["submitted"] is True
    assert state["saved"]["labels"] == {str(u.index): "dont_know" for u in units}
    dashboard = client.get(reverse("dashboard")).content.decode()
    assert f'href="{reverse("annotate", args=[assignment.pk])}" aria-label="Edit item 1"' in dashboard


def test_it_continues_with_the_next_open_item(bertscore_study: Study, alice: AbstractUser) -> None:
    client = client_for(alice)
    assignments = list(
        Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=alice).order_by("position")
    )
    assert client.get(reverse("annotate_next")).url == reverse("annotate", args=[assignments[0].pk])
    post(client, assignments[0], {u.index: "correct" for u in units_of(assignments[0])})
    assert client.get(reverse("annotate_next")).url == reverse("annotate", args=[assignments[1].pk])
