"""Adjudicating span and edit tasks (issue 16, point 1): the automatic decision of an item, the adjudicator's
spans or edit checked as a submission is, stale posts, other researchers' items and the exports' gold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from analysis.selectors.exports import study_judgement_rows
from review.services.adjudication import AdjudicationConflict, final_decision_adjudicate, study_final_labels_compute
from studies.models import Assignment, FinalLabel, Study, StudyItem
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for

pytestmark = pytest.mark.django_db
Status = FinalLabel.Status
SUMMARY = "The world's oldest person died on March 5, 1898 in Piedmont."
MARCH = SUMMARY.index("March 5, 1898")
DATE = (MARCH, MARCH + len("March 5, 1898"))
PIEDMONT = (SUMMARY.index("Piedmont"), SUMMARY.index("Piedmont") + len("Piedmont"))


@pytest.fixture
def whole_study(small_dataset: Any, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: Any) -> Study:
    return study_create(
        spec=StudySpec(
            name="spans and edits",
            dataset=small_dataset,
            tasks=["hallucination_spans", "bump"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study


def spans_item(study: Study) -> StudyItem:
    return StudyItem.objects.get(study_task__study=study, study_task__task="hallucination_spans", summary__text=SUMMARY)


def span(bounds: tuple[int, int], label: str) -> dict[str, Any]:
    return {"start": bounds[0], "end": bounds[1], "label": label}


def mark(item: StudyItem, user: AbstractUser, spans: list[dict[str, Any]]) -> None:
    assignment_submit(assignment=Assignment.objects.get(item=item, annotator=user), user=user, spans=spans)


def post(client: Client, item: StudyItem, body: Any) -> Any:
    url = reverse("api_adjudication_item", args=[item.study_task.study_id, item.pk])
    return client.post(url, body if isinstance(body, str) else json.dumps(body), content_type="application/json")


def test_it_takes_the_character_majority_of_the_spans_and_leaves_a_tie_unresolved(
    whole_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    item = spans_item(whole_study)
    mark(item, alice, [span(DATE, "intrinsic"), span(PIEDMONT, "extrinsic")])
    mark(item, bob, [span(DATE, "intrinsic")])
    mark(item, carol, [span(DATE, "extrinsic")])
    study_final_labels_compute(study=whole_study)
    row = FinalLabel.objects.get(item=item)
    # The date: three of three (two intrinsic); Piedmont: one of three.
    assert (row.status, row.label, row.unit_index, row.n_raters) == (Status.MAJORITY, "hallucinated", 0, 3)
    assert row.data == {"spans": [{**span(DATE, "intrinsic"), "text": "March 5, 1898"}]}
    # Two annotators: Piedmont splits them in half, so nothing is decided for them.
    other = StudyItem.objects.filter(study_task=item.study_task).exclude(pk=item.pk).first()
    assert other is not None
    text = other.summary.text
    mark(other, alice, [span((0, len(text.split()[0])), "extrinsic")])
    mark(other, bob, [])
    study_final_labels_compute(study=whole_study)
    assert FinalLabel.objects.get(item=other).status == Status.UNRESOLVED


def test_it_sets_an_adjudicators_spans_and_refuses_bad_ones_without_a_change(
    whole_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser
) -> None:
    item = spans_item(whole_study)
    mark(item, alice, [span(DATE, "intrinsic")])
    mark(item, bob, [span(PIEDMONT, "extrinsic")])
    client = client_for(rita)
    answer = post(client, item, {"version": 0, "spans": [span(DATE, "extrinsic"), span(PIEDMONT, "extrinsic")]})
    assert answer.status_code == 200, answer.content
    final = answer.json()["final"]
    assert (final["status"], final["label"], final["by"], final["version"]) == (
        "adjudicated",
        "hallucinated",
        "rita",
        1,
    )
    assert [s["text"] for s in final["data"]["spans"]] == ["March 5, 1898", "Piedmont"]
    before = FinalLabel.objects.values().get(item=item)
    bad = [
        ({"version": 1, "spans": [span((50, 999), "intrinsic")]}, "spans", "outside the summary"),
        ({"version": 1, "spans": [span((MARCH, MARCH + 8), "intrinsic"), span(DATE, "intrinsic")]}, "spans", "overlap"),
        ({"version": 1, "spans": [span(DATE, "intrinsic\x00")]}, None, "NUL"),
        ({"version": 1, "spans": [span(DATE, "made-up")]}, "spans", "not a choice"),
        ({"version": 1, "spans": [{"start": True, "end": 3, "label": "intrinsic"}]}, "spans", "whole numbers"),
        ({"version": 1, "spans": "all of it"}, "spans", "list"),
        ({"version": 1, "edit": {"text": "x", "label": "coreference"}}, "edit", "takes spans, not an edit"),
        ({"version": 1, "label": "intrinsic"}, "label", "takes no label"),
        ({"version": 1, "annotator": "carol"}, "annotator", "has not submitted"),
        ({"version": 1, "accept": "aggregated"}, "accept", "must be one of majority, unresolved"),
        ({"version": 1}, "spans", "exactly one"),
        ({"version": 1, "unit_index": 3, "accept": "majority"}, "unit_index", "one decision"),
    ]
    for body, field, said in bad:
        answer = post(client, item, body)
        assert answer.status_code == 400, (body, answer.content)
        assert said in json.dumps(answer.json()), (body, answer.json())
        if field is not None:
            assert field in answer.json()
        assert FinalLabel.objects.values().get(item=item) == before
    # A replayed post (version 0) and a stale one answer 409 and change nothing.
    assert post(client, item, {"version": 0, "accept": "unresolved"}).status_code == 409
    assert FinalLabel.objects.values().get(item=item) == before
    # Another researcher's item does not exist for them.
    assert post(client_for(ronald), item, {"version": 1, "accept": "unresolved"}).status_code == 404
    with pytest.raises(StudyItem.DoesNotExist):
        final_decision_adjudicate(user=ronald, item_id=item.pk, version=1, accept="unresolved")
    # Taking one annotator's spans, then the majority (one of two marked each: no span has a majority).
    taken = final_decision_adjudicate(user=rita, item_id=item.pk, version=1, annotator="bob")
    assert (taken.method, taken.data["spans"][0]["text"], taken.version) == ("annotator:bob", "Piedmont", 2)
    majority = final_decision_adjudicate(user=rita, item_id=item.pk, version=2, accept="majority", note="split")
    assert (majority.label, majority.data, majority.method, majority.note) == (
        "faithful",
        {"spans": []},
        "majority",
        "split",
    )
    with pytest.raises(AdjudicationConflict):
        final_decision_adjudicate(user=rita, item_id=item.pk, version=2, accept="unresolved")
    # A recomputation keeps the decision.
    study_final_labels_compute(study=whole_study)
    assert FinalLabel.objects.get(item=item).method == "majority"


def test_it_decides_an_edit_by_majority_by_picking_one_or_by_the_adjudicators_own(
    whole_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    item = StudyItem.objects.filter(study_task__study=whole_study, study_task__task="bump").order_by("pk").first()
    assert item is not None
    reference, wanted = item.summary.text, item.params["error_type"]
    same = {"text": reference.replace(reference.split()[-1], "yesterday."), "label": wanted}
    for user, edit in ((alice, same), (bob, same), (carol, {"text": "Nobody " + reference, "label": wanted})):
        assignment_submit(assignment=Assignment.objects.get(item=item, annotator=user), user=user, edit=edit)
    study_final_labels_compute(study=whole_study)
    row = FinalLabel.objects.get(item=item)
    assert (row.status, row.label, row.data["edited"], row.data["from"]) == (
        Status.MAJORITY,
        wanted,
        same["text"],
        "alice",
    )
    picked = final_decision_adjudicate(user=rita, item_id=item.pk, version=row.version, annotator="carol")
    assert (picked.data["edited"], picked.data["from"], picked.method) == (
        "Nobody " + reference,
        "carol",
        "annotator:carol",
    )
    with pytest.raises(ValidationError) as refused:
        final_decision_adjudicate(
            user=rita, item_id=item.pk, version=picked.version, edit={"text": reference, "label": wanted}
        )
    assert "unchanged" in str(refused.value.message_dict["edit"])
    own = final_decision_adjudicate(
        user=rita, item_id=item.pk, version=picked.version, edit={"text": reference + " Twice.", "label": wanted}
    )
    assert (own.status, own.data["edited"], own.data["from"]) == (Status.ADJUDICATED, reference + " Twice.", "")


def test_it_puts_the_final_spans_beside_every_span_row_of_the_export(
    whole_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    item = spans_item(whole_study)
    mark(item, alice, [span(DATE, "intrinsic"), span(PIEDMONT, "extrinsic")])
    mark(item, bob, [span(DATE, "intrinsic")])
    final_decision_adjudicate(user=rita, item_id=item.pk, version=0, spans=[span(PIEDMONT, "intrinsic")])
    rows = [row for row in study_judgement_rows(study=whole_study) if row["summary_id"] == item.summary_id]
    assert len(rows) == 3
    for row in rows:
        assert (row["final_label"], row["final_status"], row["final_by"]) == ("hallucinated", "adjudicated", "rita")
        assert row["final_data"]["spans"] == [{**span(PIEDMONT, "intrinsic"), "text": "Piedmont"}]


def test_it_shows_span_and_edit_items_on_the_page_and_in_the_api(
    whole_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser
) -> None:
    item = spans_item(whole_study)
    mark(item, alice, [span(DATE, "intrinsic")])
    mark(item, bob, [])
    bump = StudyItem.objects.filter(study_task__study=whole_study, study_task__task="bump").order_by("pk").first()
    assert bump is not None
    edited = {"text": bump.summary.text + " Twice.", "label": bump.params["error_type"]}
    assignment_submit(assignment=Assignment.objects.get(item=bump, annotator=alice), user=alice, edit=edited)
    client = client_for(rita)
    page = client.get(reverse("adjudication_item", args=[whole_study.pk, item.pk])).content.decode()
    assert 'data-source="alice"' in page and 'id="final-summary"' in page and "adjudicate_whole.js" in page
    page = client.get(reverse("adjudication_item", args=[whole_study.pk, bump.pk])).content.decode()
    assert "Twice." in page and 'id="own-edit"' in page
    whole = client.get(reverse("api_adjudication_item", args=[whole_study.pk, item.pk])).json()["whole"]
    assert whole["kind"] == "spans" and whole["raters"] == [
        {"name": "alice", "spans": [span(DATE, "intrinsic")]},
        {"name": "bob", "spans": []},
    ]
    # One of two marked the date: a tie, so the majority marks nothing.
    assert whole["majority"] == {"label": "faithful", "data": {"spans": []}}
    queue = client.get(reverse("api_adjudication_queue", args=[whole_study.pk])).json()
    assert {row["item"] for row in queue["items"]} == {item.pk}  # the lone edit agrees with itself
    assert client_for(ronald).get(reverse("adjudication_item", args=[whole_study.pk, item.pk])).status_code == 404
