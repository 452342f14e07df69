"""Turning an existing study public and private again (issue 14, point 1): from the study page and the API,
through the one crowd creation service. The work already handed out is settled without losing any, another
researcher changes nothing, and a replay changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from corpus.models import Dataset
from crowd.models import CrowdCheck, CrowdStudy
from crowd.services.assignment import crowd_item_next
from crowd.services.studies import CrowdSpec, crowd_study_make_private, crowd_study_make_public
from crowd.services.workers import StudyClosed, crowd_worker_arrive
from studies.models import Assignment, Study
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def push_study(small_dataset: Dataset, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser) -> Study:
    """rita's factuality study handed out to alice and bob (k = 2): alice submitted one item, bob started one
    (active time recorded), every other item is open and untouched."""
    study = study_create(
        spec=StudySpec(
            name="Push study",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study
    done = Assignment.objects.filter(annotator=alice).order_by("position").first()
    assert done is not None
    assignment_submit(assignment=done, user=alice, labels={"0": "yes"}, seconds=20.0)
    started = Assignment.objects.filter(annotator=bob).order_by("position").first()
    assert started is not None
    Assignment.objects.filter(pk=started.pk).update(time_spent=12.5)
    return study


def _state(study: Study) -> tuple[Any, ...]:
    """Everything making a study public could change."""
    study.refresh_from_db()
    assignments = sorted(Assignment.objects.filter(item__study_task__study=study).values_list("pk", "status"))
    return (
        study.pull_based,
        CrowdStudy.objects.filter(study=study).values_list("key", "public").first(),
        assignments,
        CrowdCheck.objects.filter(item__study_task__study=study).count(),
    )


def test_it_makes_an_existing_study_public_and_settles_the_work_handed_out(
    push_study: Study, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser
) -> None:
    open_before = Assignment.objects.filter(item__study_task__study=push_study, status="assigned").count()
    result = crowd_study_make_public(study=push_study, crowd=CrowdSpec(platform="mturk"), by=rita)
    push_study.refresh_from_db()
    assert push_study.pull_based and result.created and result.crowd.public
    assert (result.crowd.platform, result.crowd.worker_param) == ("mturk", "workerId")
    assert result.kept == 1 and result.released == open_before - 1 and result.checks > 0
    left = Assignment.objects.filter(item__study_task__study=push_study, item__crowd_check__isnull=True)
    assert sorted(left.values_list("annotator__username", "status")) == [("alice", "submitted"), ("bob", "assigned")]
    worker, _ = crowd_worker_arrive(crowd=result.crowd, params={"workerId": "A1WORKER"})
    worker.phase = "annotation"
    worker.save()
    pulled = crowd_item_next(worker=worker)
    assert pulled is not None and pulled.annotator_id == worker.user_id
    # A replay keeps the settings, the link and the checks, and hands back nothing more.
    state = _state(push_study)
    again = crowd_study_make_public(study=push_study, crowd=CrowdSpec(platform="generic"), by=rita)
    assert not again.created and (again.released, again.kept, again.checks) == (0, 0, 0)
    assert _state(push_study) == state and again.crowd.platform == "mturk"


def test_it_refuses_another_researcher_and_imported_judgements_and_changes_nothing(
    push_study: Study, ronald: AbstractUser, rita: AbstractUser
) -> None:
    before = _state(push_study)
    with pytest.raises(PermissionDenied):
        crowd_study_make_public(study=push_study, crowd=CrowdSpec(), by=ronald)
    with pytest.raises(ValidationError) as bad:
        crowd_study_make_public(study=push_study, crowd=CrowdSpec(check_rate=3.0), by=rita)
    assert "check_rate" in bad.value.message_dict
    with pytest.raises(ValidationError):
        crowd_study_make_private(study=push_study, by=rita)  # never public
    Study.objects.filter(pk=push_study.pk).update(kind=Study.Kind.IMPORTED)
    with pytest.raises(ValidationError) as imported:
        crowd_study_make_public(study=push_study, crowd=CrowdSpec(), by=rita)
    assert "study" in imported.value.message_dict
    Study.objects.filter(pk=push_study.pk).update(kind=Study.Kind.STUDY)
    assert _state(push_study) == before
    client, api = client_for(ronald), api_client_for(ronald)
    assert client.post(reverse("crowd_study_make_public", args=[push_study.pk])).status_code == 404
    url = reverse("api_study", args=[push_study.pk])
    assert api.patch(url, json.dumps({"crowd": {}}), content_type="application/json").status_code == 404
    assert _state(push_study) == before


def test_the_study_page_makes_it_public_and_private_again(push_study: Study, rita: AbstractUser) -> None:
    client = client_for(rita)
    page = client.get(reverse("study_detail", args=[push_study.pk]))
    assert b'id="make-public"' in page.content
    answer = client.post(reverse("crowd_study_make_public", args=[push_study.pk]), {"platform": "prolific"})
    assert answer.status_code == 302 and answer["Location"] == reverse("study_detail", args=[push_study.pk])
    crowd = CrowdStudy.objects.get(study=push_study)
    page = client.get(answer["Location"])
    text = page.content.decode()
    assert f"/crowd/{crowd.key}/" in text and "The study is public" in text and 'id="make-public"' not in text
    replay = client.post(reverse("crowd_study_make_public", args=[push_study.pk]), {"platform": "mturk"})
    assert replay.status_code == 302 and CrowdStudy.objects.get(study=push_study).platform == "prolific"
    bad = client.post(
        reverse("crowd_study_make_public", args=[Study.objects.create(name="x", dataset=push_study.dataset).pk]),
        {"platform": "venmo"},
    )
    assert bad.status_code == 404  # not rita's study
    closed = client.post(reverse("crowd_study_public", args=[push_study.pk]), {"public": "no", "back": "study"})
    assert closed["Location"] == reverse("study_detail", args=[push_study.pk])
    crowd.refresh_from_db()
    assert not crowd.public
    with pytest.raises(StudyClosed):
        crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": "5f0000000000000000000001"})
    worker_page = Client().get(f"/crowd/{crowd.key}/", {"PROLIFIC_PID": "5f0000000000000000000001"})
    assert worker_page.status_code == 403 and b"This study is closed" in worker_page.content
    client.post(reverse("crowd_study_public", args=[push_study.pk]), {"public": "yes", "back": "study"})
    crowd.refresh_from_db()
    assert crowd.public and CrowdStudy.objects.get(study=push_study).key == crowd.key  # the same link again


def test_the_api_makes_it_public_replays_and_closes_it(push_study: Study, rita: AbstractUser) -> None:
    api = api_client_for(rita)
    url = reverse("api_study", args=[push_study.pk])

    def patch(body: Any) -> Any:
        return api.patch(url, json.dumps(body), content_type="application/json")

    assert api.get(url).json()["crowd"] is None
    for bad, field in (({"crowd": {"check_rate": 3}}, "check_rate"), ({"crowd": "x"}, "crowd"), ({}, "crowd")):
        refused = patch(bad)
        assert refused.status_code == 400 and field in refused.json(), bad
    assert not CrowdStudy.objects.exists() and Assignment.objects.filter(status="assigned").count() > 1
    made = patch({"crowd": {"platform": "generic", "completion_code": "API123"}})
    assert made.status_code == 200, made.json()
    body = made.json()
    crowd = CrowdStudy.objects.get(study=push_study)
    assert body["created"] and body["kept"] == 1 and body["released"] > 0
    assert body["crowd"]["public"] and body["crowd"]["platform"] == "generic"
    assert body["crowd"]["public_link"].endswith(f"/crowd/{crowd.key}/")
    assert crowd.completion_code == "API123" and crowd.worker_param == "worker"
    replay = patch({"crowd": {"platform": "generic", "completion_code": "API123"}})
    assert replay.status_code == 200 and not replay.json()["created"] and replay.json()["released"] == 0
    assert CrowdStudy.objects.get().key == crowd.key
    assert api.get(url).json()["crowd"]["public"] is True
    for _ in range(2):  # closing is idempotent too
        closed = patch({"crowd": {"public": False}})
        assert closed.status_code == 200 and closed.json()["crowd"]["public"] is False
    assert api.get(url).json()["crowd"]["public"] is False
