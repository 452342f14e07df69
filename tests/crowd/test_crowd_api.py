"""A public study over the API: POST /api/v1/studies/ with `crowd` (issue 14, point 1)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser

from corpus.models import Dataset
from crowd.models import CrowdStudy
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_it_creates_a_public_study_over_the_api_and_answers_its_link(
    small_dataset: Dataset, rita: AbstractUser, settings
) -> None:
    settings.SITE_URL = "https://faithanno.example.org"
    body = {
        "name": "Public",
        "dataset": small_dataset.pk,
        "tasks": ["factuality"],
        "annotators_per_item": 2,
        "crowd": {"platform": "mturk", "consent_text": "Yes?", "check_rate": 0.1},
    }
    answer = client_for(rita).post("/api/v1/studies/", body, content_type="application/json")
    assert answer.status_code == 201, answer.json()
    crowd = CrowdStudy.objects.get()
    assert answer.json()["public_link"] == f"https://faithanno.example.org/crowd/{crowd.key}/"
    assert (crowd.platform, crowd.worker_param, crowd.completion_url) == ("mturk", "workerId", "")
    assert crowd.study.created_by == rita and crowd.study.pull_based


def test_it_answers_bad_crowd_settings_by_field_and_creates_nothing(small_dataset: Dataset, rita: AbstractUser) -> None:
    body = {"name": "P", "dataset": small_dataset.pk, "tasks": ["factuality"], "crowd": {"check_rate": float("1e9")}}
    answer = client_for(rita).post("/api/v1/studies/", body, content_type="application/json")
    assert answer.status_code == 400 and "check_rate" in answer.json()
    answer = client_for(rita).post(
        "/api/v1/studies/", {**body, "crowd": {"phases": ["end"], "worker": 1}}, content_type="application/json"
    )
    assert answer.status_code == 400 and "crowd" in answer.json()
    answer = client_for(rita).post("/api/v1/studies/", {**body, "crowd": []}, content_type="application/json")
    assert answer.status_code == 400
    assert not CrowdStudy.objects.exists()
