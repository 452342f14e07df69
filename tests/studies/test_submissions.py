"""What the submission and draft endpoints refuse, and that a refusal changes nothing."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from studies.models import Assignment, Judgement, Study
from studies.services.studies import study_task_guidelines_update
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def item_of(study: Study, user: AbstractUser, task: str) -> Assignment:
    return (
        Assignment.objects.filter(item__study_task__study=study, annotator=user, item__study_task__task=task)
        .select_related("item__summary")
        .order_by("position")
        .first()
    )


def submit(client: Any, assignment: Assignment, **body: Any) -> Any:
    return client.post(
        reverse("annotate_submit", args=[assignment.pk]), data=json.dumps(body), content_type="application/json"
    )


def assert_nothing_changed(assignment: Assignment) -> None:
    assert not Judgement.objects.filter(assignment=assignment).exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and assignment.time_spent == 0


def test_it_refuses_a_unit_that_does_not_exist_and_a_label_from_another_task(
    task_study: Study, alice: AbstractUser
) -> None:
    client = client_for(alice)
    feqa = item_of(task_study, alice, "feqa")
    answer = submit(client, feqa, labels={"0": "meaningful", "1": "grammatical", "2": "faithful", "40": "faithful"})
    assert answer.status_code == 400 and "unit 40 does not exist in this item" in answer.json()["errors"]
    assert_nothing_changed(feqa)

    entailment = item_of(task_study, alice, "entailment")
    labels = {str(u.index): "correct" for u in units_of(entailment)}  # a QGQA/BERTScore label
    answer = submit(client, entailment, labels=labels)
    assert answer.status_code == 400
    assert answer.json()["errors"][0].startswith("'correct' is not a choice of task 'entailment' for unit 0")
    assert_nothing_changed(entailment)

    spans = item_of(task_study, alice, "hallucination_spans")
    answer = submit(client, spans, spans=[{"start": 0, "end": 3, "label": "correct"}])
    assert (
        answer.status_code == 400
        and "'correct' is not a choice of task 'hallucination_spans'" in (answer.json()["errors"][0])
    )
    assert_nothing_changed(spans)


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ([{"start": 0, "end": 500, "label": "extrinsic"}], "lies outside the summary"),
        ([{"start": 6, "end": 6, "label": "extrinsic"}], "start must be before end"),
        ([{"start": 9, "end": 2, "label": "extrinsic"}], "start must be before end"),
        (
            [{"start": 0, "end": 9, "label": "intrinsic"}, {"start": 4, "end": 12, "label": "extrinsic"}],
            "spans 1 (0-9) and 2 (4-12) overlap",
        ),
        ("0-9", "malformed request: spans must be a JSON list"),
    ],
)
def test_it_refuses_bad_spans_and_changes_nothing(
    task_study: Study, alice: AbstractUser, spans: Any, message: str
) -> None:
    assignment = item_of(task_study, alice, "hallucination_spans")
    answer = submit(client_for(alice), assignment, spans=spans, seconds=30)
    assert answer.status_code == 400
    assert any(message in error for error in answer.json()["errors"]), answer.json()
    assert_nothing_changed(assignment)


def test_it_refuses_an_edit_for_a_task_the_annotator_is_not_assigned(
    task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    bertscore = item_of(task_study, alice, "bertscore")
    edit = {"text": bertscore.item.summary.text + " Not.", "label": "freestyle"}
    answer = submit(client_for(alice), bertscore, edit=edit)
    assert answer.status_code == 400 and "task 'bertscore' takes no edit" in answer.json()["errors"]
    assert_nothing_changed(bertscore)

    bobs_bump = item_of(task_study, bob, "bump")
    edit = {"text": bobs_bump.item.summary.text + " Not.", "label": bobs_bump.item.params["error_type"]}
    for intruder in (alice, carol):
        answer = submit(client_for(intruder), bobs_bump, edit=edit)
        assert answer.status_code == 404  # as on the API: someone else's item does not exist for you
    assert_nothing_changed(bobs_bump)
    draft = client_for(carol).post(
        reverse("annotate_draft", args=[bobs_bump.pk]),
        data=json.dumps({"draft": {"task": {"edit": edit}}}),
        content_type="application/json",
    )
    assert draft.status_code == 404
    bobs_bump.refresh_from_db()
    assert bobs_bump.draft == {}


def test_it_stores_notes_spans_and_edits_and_replaces_them_on_a_second_submission(
    task_study: Study, alice: AbstractUser
) -> None:
    client = client_for(alice)
    spans = item_of(task_study, alice, "hallucination_spans")
    first = [{"start": 0, "end": 3, "label": "intrinsic"}, {"start": 4, "end": 9, "label": "extrinsic"}]
    assert submit(client, spans, spans=first).status_code == 200
    assert Judgement.objects.filter(assignment=spans).count() == 2
    assert submit(client, spans, spans=[{"start": 4, "end": 9, "label": "intrinsic"}]).status_code == 200
    assert list(Judgement.objects.filter(assignment=spans).values_list("unit_index", "start", "end", "label")) == [
        (0, 4, 9, "intrinsic")
    ]
    assert submit(client, spans, spans=[]).status_code == 200  # "the summary is faithful"
    assert not Judgement.objects.filter(assignment=spans).exists()
    spans.refresh_from_db()
    assert spans.status == Assignment.Status.SUBMITTED

    feqa = item_of(task_study, alice, "feqa")
    path = {"0": "meaningful", "1": "grammatical", "2": "unfaithful", "3": "hallucination"}
    assert submit(client, feqa, labels=path).status_code == 200
    assert submit(client, feqa, labels={"0": "nonsensical"}).status_code == 200
    assert dict(Judgement.objects.filter(assignment=feqa).values_list("unit_index", "label")) == {0: "nonsensical"}

    qags = item_of(task_study, alice, "sentence_consistency")
    (unit,) = units_of(qags)
    missing = submit(client, qags, labels={str(unit.index): "no"})
    assert missing.status_code == 400 and "need a short explanation" in missing.json()["errors"][0]
    assert (
        submit(client, qags, labels={str(unit.index): "no"}, notes={str(unit.index): "wrong date"}).status_code == 200
    )
    assert Judgement.objects.get(assignment=qags).note == "wrong date"


@pytest.mark.django_db(transaction=True)
def test_it_keeps_one_consistent_result_when_two_tabs_submit_at_once(task_study: Study, alice: AbstractUser) -> None:
    assignment = item_of(task_study, alice, "hallucination_spans")
    tabs = {
        "a": [{"start": 0, "end": 3, "label": "intrinsic"}, {"start": 4, "end": 9, "label": "extrinsic"}],
        "b": [{"start": 4, "end": 12, "label": "intrinsic"}],
    }
    start = threading.Barrier(len(tabs))
    answers: dict[str, int] = {}

    def tab(name: str) -> None:
        try:
            client = client_for(alice)
            start.wait()
            answers[name] = submit(client, assignment, spans=tabs[name], seconds=10).status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=tab, args=(name,)) for name in tabs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {"a": 200, "b": 200}
    rows = [
        {"start": start, "end": end, "label": label}
        for start, end, label in Judgement.objects.filter(assignment=assignment)
        .order_by("unit_index")
        .values_list("start", "end", "label")
    ]
    assert rows in (tabs["a"], tabs["b"])  # all of one tab, nothing mixed, nothing doubled
    assignment.refresh_from_db()
    assert assignment.time_spent == 20 and assignment.status == Assignment.Status.SUBMITTED


def test_it_keeps_drafts_on_the_server_for_another_device_and_clears_them_on_submission(
    task_study: Study, alice: AbstractUser
) -> None:
    assignment = item_of(task_study, alice, "factuality")
    draft = {"savedAt": 1, "seconds": 12, "comment": "hm", "task": {"labels": {"0": "no"}}}
    saved = client_for(alice).post(
        reverse("annotate_draft", args=[assignment.pk]),
        data=json.dumps({"draft": draft}),
        content_type="application/json",
    )
    assert saved.status_code == 200
    other_device = client_for(alice).get(reverse("annotate", args=[assignment.pk]))
    assert other_device.context["state"]["draft"] == draft
    for bad, message in [([1, 2], "draft: give an object"), ({"x": "y" * 300_000}, "at most")]:
        answer = client_for(alice).post(
            reverse("annotate_draft", args=[assignment.pk]),
            data=json.dumps({"draft": bad}),
            content_type="application/json",
        )
        assert answer.status_code == 400 and message in answer.json()["errors"][0]
    assignment.refresh_from_db()
    assert assignment.draft == draft
    unknown = client_for(alice).post(
        reverse("annotate_draft", args=[999_999]), data=json.dumps({"draft": draft}), content_type="application/json"
    )
    assert unknown.status_code == 404
    assert submit(client_for(alice), assignment, labels={"0": "no"}).status_code == 200
    assignment.refresh_from_db()
    assert assignment.draft == {} and assignment.draft_saved_at is None


def test_it_never_shows_an_annotator_anyone_elses_judgements(
    task_study: Study, alice: AbstractUser, bob: AbstractUser
) -> None:
    bobs = item_of(task_study, bob, "factuality")
    assert submit(client_for(bob), bobs, labels={"0": "no"}, comment="bob thinks so").status_code == 200
    alices = Assignment.objects.get(item=bobs.item, annotator=alice)
    page = client_for(alice).get(reverse("annotate", args=[alices.pk]))
    state = page.context["state"]
    assert state["saved"]["labels"] == {} and state["comment"] == "" and state["draft"] is None
    assert "bob thinks so" not in page.content.decode()
    assert client_for(alice).get(reverse("annotate", args=[bobs.pk])).status_code == 404


def test_it_records_the_guidelines_version_the_annotator_was_shown(task_study: Study, alice: AbstractUser) -> None:
    assignment = item_of(task_study, alice, "factuality")
    study_task = assignment.item.study_task
    shown = client_for(alice).get(reverse("annotate", args=[assignment.pk])).context["state"]["guidelinesVersion"]
    assert shown == 1
    version = study_task_guidelines_update(study_task=study_task, text="Count dates as facts.", user=None)
    assert version.version == 2
    assert study_task_guidelines_update(study_task=study_task, text=" Count dates as facts. ", user=None) is None
    for bad, message in [("x" * 20_001, "at most 20000"), ("a\x00b", "NUL"), (None, "must be text")]:
        with pytest.raises(ValidationError, match=message):
            study_task_guidelines_update(study_task=study_task, text=bad, user=None)
    study_task.refresh_from_db()
    assert study_task.guidelines_version == 2  # nothing changed
    assert submit(client_for(alice), assignment, labels={"0": "yes"}, guidelines_version=shown).status_code == 200
    assignment.refresh_from_db()
    assert assignment.guidelines_version == 1
    page = client_for(alice).get(reverse("annotate", args=[assignment.pk]))
    assert page.context["state"]["guidelinesVersion"] == 2 and "Count dates as facts." in page.content.decode()
    bad = submit(client_for(alice), assignment, labels={"0": "yes"}, guidelines_version=7)
    assert bad.status_code == 400 and bad.json()["errors"] == ["guidelines version 7 does not exist (current: 2)"]
    assert submit(client_for(alice), assignment, labels={"0": "yes"}).status_code == 200
    assignment.refresh_from_db()
    assert assignment.guidelines_version == 2
    assert list(study_task.guideline_versions.values_list("version", "text")) == [
        (2, "Count dates as facts."),
        (1, ""),
    ]
