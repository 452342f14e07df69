"""'Cannot judge' over the API: the same action, checks and answers as the annotation view's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import Assignment, Study
from studies.services.studies import MAX_SKIP_NOTE_CHARS, assignment_submit
from tests.conftest import units_of

pytestmark = pytest.mark.django_db


def alices(study: Study) -> list[Assignment]:
    return list(
        Assignment.objects.filter(annotator__username="alice", item__study_task__study=study).order_by("position")
    )


def test_it_marks_an_item_cannot_judge_and_lists_the_reason(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    assignment = alices(bertscore_study)[0]
    url = reverse("api_assignment_skip", args=[assignment.pk])
    answer = cast("alice").post(url, {"reason": "not_english", "note": "Welsh"}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["id"], body["status"], body["skip_reason"], body["skip_note"]) == (
        assignment.pk,
        "skipped",
        "not_english",
        "Welsh",
    )
    assert body["skipped_at"]
    again = cast("alice").post(url, {"reason": "not_english", "note": "Welsh"}, format="json")
    assert again.status_code == 200 and again.json()["skipped_at"] == body["skipped_at"]
    listed = cast("rita").get(reverse("api_study_assignments", args=[bertscore_study.pk]), {"page_size": 100}).json()
    flagged = [row for row in listed["results"] if row["skip_reason"]]
    assert [(row["id"], row["annotator"], row["skip_note"]) for row in flagged] == [(assignment.pk, "alice", "Welsh")]
    detail = cast("rita").get(reverse("api_study", args=[bertscore_study.pk])).json()
    assert detail["skipped_items_reassigned"] is True
    assert {row["username"]: row["skipped"] for row in detail["progress"]} == {"alice": 1, "bob": 0}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"reason": "spam"}, "reason"),
        ({}, "reason"),
        ({"reason": "other"}, "note"),
        ({"reason": "other", "note": "  "}, "note"),
        ({"reason": "broken_text", "note": "x" * (MAX_SKIP_NOTE_CHARS + 1)}, "note"),
        ({"reason": "broken_text", "note": "a\x00b"}, "note"),
    ],
)
def test_it_refuses_a_bad_reason_or_note_naming_the_field(
    bertscore_study: Study, cast: Callable[[str], APIClient], payload: dict[str, str], field: str
) -> None:
    assignment = alices(bertscore_study)[0]
    answer = cast("alice").post(reverse("api_assignment_skip", args=[assignment.pk]), payload, format="json")
    assert answer.status_code == 400
    assert field in str(answer.json())
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ASSIGNED


def test_it_refuses_someone_elses_item_a_submitted_one_and_anonymous_callers(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    bobs = Assignment.objects.filter(annotator__username="bob").first()
    payload = {"reason": "not_english", "note": ""}
    for name in ("alice", "rita"):
        assert (
            cast(name).post(reverse("api_assignment_skip", args=[bobs.pk]), payload, format="json").status_code == 404
        )
    assert (
        cast("anonymous").post(reverse("api_assignment_skip", args=[bobs.pk]), payload, format="json").status_code
        == 401
    )
    done = alices(bertscore_study)[0]
    assignment_submit(assignment=done, user=done.annotator, labels={u.index: "correct" for u in units_of(done)})
    refused = cast("alice").post(reverse("api_assignment_skip", args=[done.pk]), payload, format="json")
    assert refused.status_code == 400 and "submitted" in refused.json()["errors"][0]
    assert Assignment.objects.get(pk=bobs.pk).status == Assignment.Status.ASSIGNED
