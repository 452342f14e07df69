"""A study's researchers name and remove its adjudicators without the admin (issue 16, point 1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.services import model_rater_account_get_or_create
from studies.models import Study
from studies.services.adjudicators import study_adjudicators_set
from studies.services.studies import StudySpec, study_create
from tests.conftest import client_for, make_user

pytestmark = pytest.mark.django_db


def adjudicator_names(study: Study) -> list[str]:
    return sorted(study.adjudicators.values_list("username", flat=True))


def test_it_lets_the_studys_researcher_set_adjudicators_and_refuses_other_accounts(
    crowd_study: Study, carol: AbstractUser, ronald: AbstractUser, rita: AbstractUser
) -> None:
    assert study_adjudicators_set(user=rita, study_id=crowd_study.pk, adjudicators=["carol", "ronald"]) == [
        "carol",
        "ronald",
    ]
    assert adjudicator_names(crowd_study) == ["carol", "ronald"]
    # An LLM judge's account, a deactivated annotator, an unknown name, NUL: refused by name, nothing changes.
    model_rater_account_get_or_create(username="judge-bot")
    gone = make_user("dora", "annotator")
    gone.is_active = False
    gone.save()
    for bad, said in (
        (["carol", "judge-bot"], "judge-bot"),
        (["dora"], "dora"),
        (["nobody"], "nobody"),
        (["car\x00ol"], "NUL"),
        ("carol", "list"),
    ):
        with pytest.raises(ValidationError) as raised:
            study_adjudicators_set(user=rita, study_id=crowd_study.pk, adjudicators=bad)
        assert said in str(raised.value.message_dict["adjudicators"])
        assert adjudicator_names(crowd_study) == ["carol", "ronald"]
    assert study_adjudicators_set(user=rita, study_id=crowd_study.pk, adjudicators=[]) == []


def test_it_refuses_another_researcher_on_the_page_the_api_and_the_service(
    crowd_study: Study, carol: AbstractUser, ronald: AbstractUser
) -> None:
    with pytest.raises(Study.DoesNotExist):
        study_adjudicators_set(user=ronald, study_id=crowd_study.pk, adjudicators=["ronald"])
    client = client_for(ronald)
    page = client.post(reverse("study_adjudicators", args=[crowd_study.pk]), {"add": "ronald"})
    assert page.status_code == 404
    api = client.patch(
        reverse("api_study", args=[crowd_study.pk]), {"adjudicators": ["ronald"]}, content_type="application/json"
    )
    assert api.status_code == 404
    assert adjudicator_names(crowd_study) == []


def test_it_adds_and_removes_adjudicators_on_the_page_and_in_the_api(
    crowd_study: Study, carol: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    url = reverse("study_adjudicators", args=[crowd_study.pk])
    assert client.post(url, {"add": "carol"}).status_code == 302
    assert adjudicator_names(crowd_study) == ["carol"]
    detail = client.get(reverse("study_detail", args=[crowd_study.pk])).content.decode()
    assert 'data-adjudicator="carol"' in detail
    # Removing someone who is no adjudicator says so and changes nothing.
    answer = client.post(url, {"remove": "bob"}, follow=True)
    assert "not adjudicators of this study: bob" in answer.content.decode()
    client.post(url, {"remove": "carol"})
    assert adjudicator_names(crowd_study) == []

    api_url = reverse("api_study", args=[crowd_study.pk])
    answer = client.patch(api_url, {"adjudicators": ["carol", "rita"]}, content_type="application/json")
    assert answer.status_code == 200 and answer.json()["adjudicators"] == ["carol", "rita"]
    assert client.get(api_url).json()["adjudicators"] == ["carol", "rita"]
    refused = client.patch(api_url, {"adjudicators": ["carol", "ghost"]}, content_type="application/json")
    assert refused.status_code == 400 and "ghost" in refused.json()["adjudicators"][0]
    assert adjudicator_names(crowd_study) == ["carol", "rita"]


def test_it_lets_a_named_adjudicator_reach_the_adjudication_queue(
    small_dataset: Any, alice: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="named",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=rita,
        )
    ).study
    queue = reverse("adjudication_queue", args=[study.pk])
    assert client_for(carol).get(queue).status_code == 404
    study_adjudicators_set(user=rita, study_id=study.pk, adjudicators=["carol"])
    assert client_for(carol).get(queue).status_code == 200
