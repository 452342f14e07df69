"""A researcher's pages of public studies: the new-study form with crowd settings, the study's crowd page,
closing the link and the survey answers' download (issue 14, points 1 and 2)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client

from corpus.models import Dataset
from crowd.models import CrowdStudy
from crowd.services.workers import crowd_consent, crowd_survey_answer, crowd_worker_arrive
from tests.conftest import client_for
from tests.crowd.factories import crowd_study_make

pytestmark = pytest.mark.django_db


def form(dataset: Dataset, **fields: str) -> dict[str, object]:
    return {
        "dataset": dataset.pk,
        "name": "Web public",
        "tasks": ["factuality"],
        "selection_mode": "all",
        "seed": 0,
        "annotators_per_item": 2,
        **fields,
    }


def test_it_creates_a_public_study_from_the_web_form(small_dataset: Dataset, rita: AbstractUser) -> None:
    client = client_for(rita)
    assert b"public study" in client.get("/studies/new/").content
    settings = json.dumps({"platform": "generic", "completion_code": "WEB123", "check_rate": 0.25})
    answer = client.post("/studies/new/public/", form(small_dataset, settings=settings))
    crowd = CrowdStudy.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/studies/{crowd.study_id}/crowd/"
    assert (crowd.platform, crowd.worker_param, crowd.completion_code) == ("generic", "worker", "WEB123")
    page = client.get(answer["Location"])
    assert f"/crowd/{crowd.key}/".encode() in page.content and b"WEB123" in page.content


def test_it_shows_bad_crowd_settings_on_the_form(small_dataset: Dataset, rita: AbstractUser) -> None:
    client = client_for(rita)
    for settings, shown in (
        ("{not json", b"not valid JSON"),
        ('{"check_rate": 3}', b"Check rate"),
        ('{"colour": 1}', b"Unknown crowd settings"),
    ):
        answer = client.post("/studies/new/public/", form(small_dataset, settings=settings))
        assert answer.status_code == 200 and shown in answer.content
    answer = client.post("/studies/new/public/", form(small_dataset, checks='{"document": "nowhere"}'))
    assert b"line 1" in answer.content
    assert not CrowdStudy.objects.exists()


def test_it_closes_the_link_and_exports_the_survey_answers_safely(
    small_dataset: Dataset, rita: AbstractUser, ronald: AbstractUser, alice: AbstractUser
) -> None:
    crowd = crowd_study_make(small_dataset, rita).crowd
    worker, _ = crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": "w1"})
    worker = crowd_consent(worker=worker, accepted=True)
    crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "Yes", "news": ["Paper", "Online"]})
    client = client_for(rita)
    client.post(f"/studies/{crowd.study_id}/crowd/public/", {"public": "no"})
    crowd.refresh_from_db()
    assert not crowd.public
    csv = client.get(f"/studies/{crowd.study_id}/crowd/surveys.csv")
    text = b"".join(csv.streaming_content).decode()
    assert "w1,prolific,active,pre_survey,news,Paper; Online" in text
    assert client_for(ronald).get(f"/studies/{crowd.study_id}/crowd/").status_code == 404  # not his study
    assert client_for(alice).get(f"/studies/{crowd.study_id}/crowd/").status_code == 403
    assert Client().get(f"/studies/{crowd.study_id}/crowd/").status_code == 302  # to the login page
