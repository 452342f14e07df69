"""The rules the task views apply in the browser (note length, FEQA's follow-up questions, span overlap,
BUMP's labels, choice keys) come in the task state the server sends, on the page and in the API alike,
and they are the rules the server enforces when the work is submitted."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset
from protocols.tasks import STUDY_TASKS, get_task
from studies.models import Assignment, Study
from studies.services.studies import StudySpec, study_create
from tests.conftest import units_of

pytestmark = pytest.mark.django_db

RULES = ("maxNoteChars", "maxEditChars", "spansMayOverlap", "notPossible", "freestyle", "errorTypes", "choices")


def first_assignment(user: AbstractUser, task: str) -> Assignment:
    return Assignment.objects.filter(annotator=user, item__study_task__task=task).order_by("position").first()


def item_state(client: APIClient, assignment: Assignment) -> dict[str, Any]:
    answer = client.get(reverse("api_assignment", args=[assignment.pk]))
    assert answer.status_code == 200
    return answer.json()["item_state"]


def submit(client: APIClient, assignment: Assignment, body: dict[str, Any]) -> Any:
    return client.post(reverse("api_assignment_submit", args=[assignment.pk]), body, format="json")


def page_state(user: AbstractUser, assignment: Assignment) -> dict[str, Any]:
    browser = Client()
    browser.force_login(user)
    html = browser.get(reverse("annotate", args=[assignment.pk])).content.decode()
    found = re.search(r'<script id="annotate-state" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


def asked(units: list[dict[str, Any]], labels: dict[int, str]) -> list[int]:
    """The units asked given the labels, decided from the state alone (as static/js/tasks/sentences.js does)."""
    shown: list[int] = []
    for unit in units:
        if unit["requires"] is not None:
            parent, triggers = unit["requires"]
            if parent not in shown or labels.get(parent) not in triggers:
                continue
        shown.append(unit["index"])
    return shown


def test_it_sends_the_page_and_the_api_the_same_rules(
    task_study: Study, alice: AbstractUser, cast: Callable[[str], APIClient]
) -> None:
    for task in STUDY_TASKS:
        assignment = first_assignment(alice, task)
        api, page = item_state(cast("alice"), assignment), page_state(alice, assignment)
        assert {key: api.get(key) for key in RULES} == {key: page.get(key) for key in RULES}
        assert page["units"] == api["units"]
        definition = get_task(task)
        assert [(c["value"], c["key"]) for c in api["choices"]] == [(c.value, c.key) for c in definition.choices]
        server_units = {unit.index: unit for unit in units_of(assignment)}
        for unit in api["units"]:
            choices = definition.choices_for(server_units[unit["index"]])
            assert [(c["value"], c["key"]) for c in unit["choices"]] == [(c.value, c.key) for c in choices]


def test_it_refuses_a_note_one_character_longer_than_the_state_allows(
    task_study: Study, alice: AbstractUser, cast: Callable[[str], APIClient]
) -> None:
    assignment = first_assignment(alice, "sentence_consistency")
    state = item_state(cast("alice"), assignment)
    limit = state["maxNoteChars"]
    labels = {str(unit["index"]): "yes" for unit in state["units"]}
    too_long = submit(cast("alice"), assignment, {"labels": labels, "notes": dict.fromkeys(labels, "x" * (limit + 1))})
    assert too_long.status_code == 400
    assert any(f"at most {limit} characters" in error for error in too_long.json()["errors"])
    fits = submit(cast("alice"), assignment, {"labels": labels, "notes": dict.fromkeys(labels, "x" * limit)})
    assert fits.status_code == 200, fits.json()


def triggers(units: list[dict[str, Any]], index: int) -> set[str]:
    """The labels of unit `index` after which the state asks a follow-up question."""
    return {
        label for unit in units if unit["requires"] and unit["requires"][0] == index for label in unit["requires"][1]
    }


def test_it_asks_exactly_the_feqa_follow_up_questions_the_state_describes(
    task_study: Study, alice: AbstractUser, cast: Callable[[str], APIClient]
) -> None:
    assignment = first_assignment(alice, "feqa")
    units = item_state(cast("alice"), assignment)["units"]
    # Answer every question so that a follow-up applies wherever the state says one can.
    labels: dict[int, str] = {}
    for unit in units:
        if unit["index"] in asked(units, labels):
            values = [choice["value"] for choice in unit["choices"]]
            wanted = triggers(units, unit["index"])
            labels[unit["index"]] = next((value for value in values if value in wanted), values[0])
    assert asked(units, labels) == [unit["index"] for unit in units]  # every follow-up was reached
    as_sent = {str(index): label for index, label in labels.items()}
    accepted = submit(cast("alice"), assignment, {"labels": as_sent})
    assert accepted.status_code == 200, accepted.json()

    # An answer after which the state asks no follow-up: the server refuses answers to the follow-ups.
    root = units[0]
    closing = next(c["value"] for c in root["choices"] if c["value"] not in triggers(units, root["index"]))
    assert len(asked(units, {**labels, root["index"]: closing})) < len(labels)
    refused = submit(cast("alice"), assignment, {"labels": {**as_sent, str(root["index"]): closing}})
    assert refused.status_code == 400
    assert any("does not apply" in error for error in refused.json()["errors"])


def test_it_enforces_the_span_overlap_rule_the_state_gives(
    task_study: Study, alice: AbstractUser, cast: Callable[[str], APIClient]
) -> None:
    assignment = first_assignment(alice, "hallucination_spans")
    state = item_state(cast("alice"), assignment)
    words, label = state["words"], state["choices"][0]["value"]
    assert len(words) >= 3
    overlapping = [
        {"start": words[0][0], "end": words[1][1], "label": label},
        {"start": words[1][0], "end": words[2][1], "label": label},
    ]
    answer = submit(cast("alice"), assignment, {"spans": overlapping})
    assert (answer.status_code == 200) is state["spansMayOverlap"]
    if not state["spansMayOverlap"]:
        assert any("overlap" in error for error in answer.json()["errors"])
    apart = [overlapping[0], {"start": words[2][0], "end": words[2][1], "label": label}]
    assert submit(cast("alice"), assignment, {"spans": apart}).status_code == 200


def test_it_accepts_exactly_the_bump_labels_and_lengths_the_state_names(
    task_study: Study,
    scored_dataset: Dataset,
    alice: AbstractUser,
    rita: AbstractUser,
    cast: Callable[[str], APIClient],
) -> None:
    requested = first_assignment(alice, "bump")
    state = item_state(cast("alice"), requested)
    wanted = state["params"]["error_type"]
    assert wanted in {t["value"] for t in state["errorTypes"]}
    reference = state["summary"]
    edited = {"text": "Not " + reference, "label": wanted}
    other = next(t["value"] for t in state["errorTypes"] if t["value"] != wanted)
    assert submit(cast("alice"), requested, {"edit": {**edited, "label": other}}).status_code == 400
    assert submit(cast("alice"), requested, {"edit": {**edited, "label": state["freestyle"]}}).status_code == 400
    long_note = {"text": reference, "label": state["notPossible"], "note": "x" * (state["maxNoteChars"] + 1)}
    assert submit(cast("alice"), requested, {"edit": long_note}).status_code == 400
    long_text = {**edited, "text": "x " * (state["maxEditChars"] // 2) + "x"}
    too_long = submit(cast("alice"), requested, {"edit": long_text})
    assert too_long.status_code == 400
    assert any(f"at most {state['maxEditChars']}" in error for error in too_long.json()["errors"])
    impossible = {"text": reference, "label": state["notPossible"], "note": "x" * state["maxNoteChars"]}
    assert submit(cast("alice"), requested, {"edit": impossible}).status_code == 200
    assert submit(cast("alice"), requested, {"edit": edited}).status_code == 200

    study_create(
        spec=StudySpec(
            name="Freestyle",
            dataset=scored_dataset,
            tasks=["bump"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=rita,
            task_options={"bump": {"mode": "freestyle"}},
        )
    )
    freestyle = Assignment.objects.filter(annotator=alice, item__study_task__study__name="Freestyle").first()
    state = item_state(cast("alice"), freestyle)
    assert "error_type" not in state["params"]
    for label in [state["freestyle"], *(t["value"] for t in state["errorTypes"])]:
        answer = submit(cast("alice"), freestyle, {"edit": {"text": "Not " + reference, "label": label}})
        assert answer.status_code == 200, (label, answer.json())
    refused = submit(
        cast("alice"), freestyle, {"edit": {"text": reference, "label": state["notPossible"], "note": "x"}}
    )
    assert refused.status_code == 400
