"""Final labels and adjudication (issue 16, point 1): automatic labels, decisions, and bad input."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from review.services.adjudication import (
    AdjudicationConflict,
    automatic_label,
    final_label_adjudicate,
    final_labels_compute,
)
from studies.models import Assignment, FinalLabel, Study, StudyItem, StudyTask
from studies.services.studies import StudySpec, assignment_skip, assignment_submit, study_create
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db
Status = FinalLabel.Status


def judged_study(study: Study, alice: AbstractUser, bob: AbstractUser) -> StudyItem:
    """alice labels every unit correct; bob every unit of the first item incorrect except unit 0 (so that
    item has one unanimous unit and ties on the others), the other items correct. Returns the first item."""
    first = None
    for assignment in Assignment.objects.filter(item__study_task__study=study, annotator=alice).order_by("item_id"):
        assignment_submit(assignment=assignment, user=alice, labels={u.index: "correct" for u in units_of(assignment)})
    for assignment in Assignment.objects.filter(item__study_task__study=study, annotator=bob).order_by("item_id"):
        units = units_of(assignment)
        if first is None:
            first = assignment.item
            labels = {u.index: "correct" if n == 0 else "incorrect" for n, u in enumerate(units)}
        else:
            labels = {u.index: "correct" for u in units}
        assignment_submit(assignment=assignment, user=bob, labels=labels, seconds=12.0, comment="hard one")
    assert first is not None
    return first


def post(client: Client, item: StudyItem, body: Any) -> Any:
    """A decision as the page posts it: to the API under the session."""
    url = reverse("api_adjudication_item", args=[item.study_task.study_id, item.pk])
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data, content_type="application/json")


def test_it_names_the_automatic_label_of_a_unit() -> None:
    assert automatic_label(["yes"], None, "").status == Status.UNANIMOUS
    assert automatic_label(["yes", "yes"], None, "").label == "yes"
    majority = automatic_label(["yes", "yes", "no"], None, "")
    assert (majority.label, majority.status, round(majority.agreement, 2)) == ("yes", Status.MAJORITY, 0.67)
    tie = automatic_label(["yes", "no"], "no", "dawid_skene")
    assert (tie.label, tie.status, tie.method) == ("no", Status.AGGREGATED, "dawid_skene")
    assert automatic_label(["yes", "no"], None, "").status == Status.UNRESOLVED


def test_it_computes_final_labels_and_keeps_an_adjudicators_decision(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    study_task = StudyTask.objects.get(study=bertscore_study)
    counts = final_labels_compute(study_task=study_task)
    ties = FinalLabel.objects.filter(item=item, status=Status.UNRESOLVED)
    assert counts[Status.UNRESOLVED] == ties.count() > 0
    assert counts[Status.UNANIMOUS] == FinalLabel.objects.exclude(item=item).count() + 1
    tied = ties.first()
    assert tied is not None and tied.label == "" and tied.n_raters == 2 and tied.agreement == 0.5
    decided = final_label_adjudicate(
        user=rita, item_id=item.pk, unit_index=tied.unit_index, version=tied.version, label="incorrect", note="checked"
    )
    assert (decided.status, decided.label, decided.adjudicated_by, decided.note) == (
        Status.ADJUDICATED,
        "incorrect",
        rita,
        "checked",
    )
    # A crowd model breaks the remaining ties; the decision stays.
    final_labels_compute(study_task=study_task, method="wawa")
    decided.refresh_from_db()
    assert (decided.status, decided.label, decided.aggregated_method) == (Status.ADJUDICATED, "incorrect", "wawa")
    others = FinalLabel.objects.filter(item=item, status=Status.AGGREGATED)
    assert others.exists() and all(row.method == "wawa" and row.label for row in others)


def test_it_accepts_the_majority_or_the_aggregated_label_in_one_post(
    scored_dataset: Any, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="three",
            dataset=scored_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study
    item = StudyItem.objects.filter(study_task__study=study).order_by("pk").first()
    for user, label in ((alice, "yes"), (bob, "no"), (carol, "no")):
        assignment_submit(assignment=Assignment.objects.get(item=item, annotator=user), user=user, labels={0: label})
    client = client_for(rita)
    answer = post(client, item, {"unit_index": 0, "version": 0, "accept": "aggregated"})
    assert answer.status_code == 400 and "no aggregated label" in answer.json()["accept"][0]
    answer = post(client, item, {"unit_index": 0, "version": 0, "accept": "majority"})
    assert answer.status_code == 200
    final = answer.json()["final"]
    assert (final["label"], final["status"], final["method"], final["by"], final["version"]) == (
        "no",
        "adjudicated",
        "majority",
        "rita",
        1,
    )
    final_labels_compute(study_task=item.study_task, method="mace")
    row = FinalLabel.objects.get(item=item, unit_index=0)
    answer = post(client, item, {"unit_index": 0, "version": row.version, "accept": "aggregated"})
    assert answer.status_code == 200 and answer.json()["final"]["method"] == "aggregated:mace"
    answer = post(client, item, {"unit_index": 0, "version": row.version + 1, "accept": "unresolved", "note": "unsure"})
    assert answer.status_code == 200
    row.refresh_from_db()
    assert (row.status, row.label, row.note, row.adjudicated_by) == (Status.UNRESOLVED, "", "unsure", rita)


def test_it_refuses_items_of_another_researchers_study(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, ronald: AbstractUser, rita: AbstractUser
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    final_labels_compute(study_task=item.study_task)
    before = list(FinalLabel.objects.values_list("pk", "label", "status", "version"))
    with pytest.raises(StudyItem.DoesNotExist):
        final_label_adjudicate(user=ronald, item_id=item.pk, unit_index=0, version=1, label="incorrect")
    for user in (ronald, alice):  # another researcher; an annotator of the study
        client = client_for(user)
        assert post(client, item, {"unit_index": 0, "version": 1, "label": "incorrect"}).status_code == 404
        assert client.get(reverse("adjudication_queue", args=[bertscore_study.pk])).status_code == 404
        assert client.get(reverse("adjudication_item", args=[bertscore_study.pk, item.pk])).status_code == 404
        answer = client.post(reverse("adjudication_compute", args=[bertscore_study.pk]), {"method": "majority"})
        assert answer.status_code == 404
    # An item of rita's study posted under ronald's own study id finds nothing either.
    own = study_create(
        spec=StudySpec(
            name="ronald's",
            dataset=bertscore_study.dataset,
            tasks=["bertscore"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=ronald,
        )
    ).study
    answer = client_for(ronald).post(
        reverse("api_adjudication_item", args=[own.pk, item.pk]),
        json.dumps({"unit_index": 0, "version": 1, "label": "incorrect"}),
        content_type="application/json",
    )
    assert answer.status_code == 404
    assert list(FinalLabel.objects.values_list("pk", "label", "status", "version")) == before


def test_it_lets_a_named_adjudicator_decide(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    client = client_for(carol)
    assert client.get(reverse("adjudication_queue", args=[bertscore_study.pk])).status_code == 404
    bertscore_study.adjudicators.add(carol)
    assert client.get(reverse("adjudication_queue", args=[bertscore_study.pk])).status_code == 200
    unit = units_of(Assignment.objects.filter(item=item).first())[1]
    answer = post(client, item, {"unit_index": unit.index, "version": 0, "label": "dont_know"})
    assert answer.status_code == 200 and answer.json()["final"]["by"] == "carol"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"unit_index": 99999, "version": 0, "label": "correct"}, "unit_index", "does not exist in item"),
        ({"unit_index": -1, "version": 0, "label": "correct"}, "unit_index", "between 0 and"),
        ({"unit_index": "1e3", "version": 0, "label": "correct"}, "unit_index", "whole number"),
        ({"unit_index": True, "version": 0, "label": "correct"}, "unit_index", "whole number"),
        ({"unit_index": "UNIT", "version": 0, "label": "yes"}, "label", "is not a choice of task 'bertscore'"),
        ({"unit_index": "UNIT", "version": 0, "label": ["correct"]}, "label", "is not a choice"),
        ({"unit_index": "UNIT", "version": 0, "accept": "everything"}, "accept", "accept must be one of"),
        ({"unit_index": "UNIT", "version": 0, "accept": "majority"}, "accept", "the annotators tie"),
        ({"unit_index": "UNIT", "version": 0}, "label", "give either a label"),
        ({"unit_index": "UNIT", "version": 0, "label": "correct", "accept": "majority"}, "label", "give either"),
        ({"unit_index": "UNIT", "version": "nan", "label": "correct"}, "version", "whole number"),
        ({"unit_index": "UNIT", "version": 0, "label": "correct", "note": "a\u0000b"}, "note", "NUL"),
        ({"unit_index": "UNIT", "version": 0, "label": "correct", "note": "x" * 2001}, "note", "at most 2000"),
    ],
)
def test_it_refuses_bad_adjudications_naming_the_field_and_changes_nothing(
    bertscore_study: Study,
    alice: AbstractUser,
    bob: AbstractUser,
    rita: AbstractUser,
    body: dict[str, Any],
    field: str,
    words: str,
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    tied = units_of(Assignment.objects.filter(item=item).first())[1]  # alice correct, bob incorrect
    if body["unit_index"] == "UNIT":
        body = {**body, "unit_index": tied.index}
    answer = post(client_for(rita), item, body)
    assert answer.status_code == 400 and field in answer.json(), answer.content
    assert not FinalLabel.objects.exists()
    with pytest.raises(ValidationError) as raised:
        final_label_adjudicate(user=rita, item_id=item.pk, **body)
    assert words in " ".join(raised.value.message_dict[field])


def test_it_refuses_a_replayed_or_stale_post(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    client = client_for(rita)
    unit = units_of(Assignment.objects.filter(item=item).first())[0]
    first = {"unit_index": unit.index, "version": 0, "label": "incorrect"}
    assert post(client, item, first).status_code == 200
    replay = post(client, item, {**first, "label": "correct"})
    assert replay.status_code == 409 and "changed since this page loaded it" in replay.json()["version"][0]
    assert FinalLabel.objects.get(item=item, unit_index=unit.index).label == "incorrect"
    with pytest.raises(AdjudicationConflict):
        final_label_adjudicate(user=rita, item_id=item.pk, unit_index=unit.index, version=0, label="correct")
    assert post(client, item, "not json").status_code == 400
    assert post(client, item, "[1, 2]").status_code == 400


def test_it_lists_disagreements_with_filters(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    item = judged_study(bertscore_study, alice, bob)
    client = client_for(rita)
    url = reverse("adjudication_queue", args=[bertscore_study.pk])
    queue = client.get(url).context["queue"]
    assert [row.item_id for row in queue.rows] == [item.pk] and queue.rows[0].lowest_agreement == 0.5
    everything = client.get(url, {"below": "1.01"}).context["queue"]
    assert everything.n_matching == StudyItem.objects.filter(study_task__study=bertscore_study).count()
    assert client.get(url, {"flagged": "1"}).context["queue"].n_matching == 0
    assert client.get(url, {"below": "0.5"}).context["queue"].n_matching == 0
    for bad in ({"below": "nan"}, {"below": "2"}, {"task": "qgqa"}, {"below": "1e999"}):
        answer = client.get(url, bad)
        assert answer.status_code == 400 and next(iter(bad)) in answer.content.decode()
    page = client.get(reverse("adjudication_item", args=[bertscore_study.pk, item.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "hard one" in html and "12 s" in html
    assert page.context["view"].columns == ["alice", "bob"]
    # Every unit is decided: the "still to decide" filter drops the item.
    for unit in page.context["view"].units:
        if len(set(unit.labels.values())) > 1:
            final_label_adjudicate(user=rita, item_id=item.pk, unit_index=unit.index, version=0, label="correct")
    assert client.get(url, {"open": "1"}).context["queue"].n_matching == 0
    # The analysis page's disagreement list links each unit's item to its adjudication.
    analysis = client.get(reverse("study_analysis", args=[bertscore_study.pk])).content.decode()
    assert reverse("adjudication_item", args=[bertscore_study.pk, item.pk]) in analysis
    assert client.get(url).context["queue"].rows[0].n_decided > 0


def test_it_flags_items_an_annotator_could_not_judge(
    scored_dataset: Any, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="skips",
            dataset=scored_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study
    flagged, plain = list(StudyItem.objects.filter(study_task__study=study).order_by("pk"))[:2]
    skipper = Assignment.objects.filter(item=flagged).order_by("pk").first()
    assignment_skip(assignment_id=skipper.pk, user=skipper.annotator, reason="broken_text")
    for item in (flagged, plain):
        labels = iter(["yes", "no"])
        for assignment in Assignment.objects.filter(item=item, status=Assignment.Status.ASSIGNED):
            assignment_submit(assignment=assignment, user=assignment.annotator, labels={0: next(labels)})
    url = reverse("adjudication_queue", args=[study.pk])
    client = client_for(rita)
    assert {row.item_id for row in client.get(url).context["queue"].rows} == {flagged.pk, plain.pk}
    rows = client.get(url, {"flagged": "1"}).context["queue"].rows
    assert [(row.item_id, row.n_skipped) for row in rows] == [(flagged.pk, 1)]
    page = client.get(reverse("adjudication_item", args=[study.pk, flagged.pk]))
    assert "Broken text" in page.content.decode()


def test_it_computes_final_labels_from_the_command(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser
) -> None:
    judged_study(bertscore_study, alice, bob)
    out = io.StringIO()
    call_command("final_labels", "--study", str(bertscore_study.pk), "--method", "wawa", stdout=out)
    counts = json.loads(out.getvalue())["bertscore"]
    assert counts["aggregated"] > 0 and counts["unresolved"] == 0
    assert FinalLabel.objects.filter(status=Status.AGGREGATED, method="wawa").count() == counts["aggregated"]
    with pytest.raises(CommandError, match="no study 999999"):
        call_command("final_labels", "--study", "999999")


def test_it_refuses_a_crowd_model_over_too_many_judgements_in_a_request(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, monkeypatch: Any
) -> None:
    judged_study(bertscore_study, alice, bob)
    monkeypatch.setattr("review.views.adjudication.MAX_REQUEST_JUDGEMENTS", 3)
    url = reverse("adjudication_compute", args=[bertscore_study.pk])
    answer = client_for(rita).post(url, {"method": "wawa"}, follow=True)
    assert (
        "takes too long for a request" in answer.content.decode()
        and "manage.py final_labels" in answer.content.decode()
    )
    assert not FinalLabel.objects.exists()
    answer = client_for(rita).post(url, {"method": "majority"}, follow=True)
    assert "bertscore:" in answer.content.decode() and FinalLabel.objects.exists()
