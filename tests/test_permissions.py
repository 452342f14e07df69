from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client
from django.urls import reverse

from studies.models import Assignment, Study
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def researcher_urls(study: Study) -> list[str]:
    return [
        reverse("studies"),
        reverse("study_new"),
        reverse("study_detail", args=[study.pk]),
        reverse("study_export", args=[study.pk, "csv"]),
        reverse("study_export", args=[study.pk, "jsonl"]),
    ]


def test_it_shows_an_annotator_only_their_own_items(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    bobs = Assignment.objects.filter(annotator=bob).first()
    assert client_for(alice).get(reverse("annotate", args=[bobs.pk])).status_code == 404
    assert client_for(carol).get(reverse("annotate", args=[bobs.pk])).status_code == 404
    assert client_for(bob).get(reverse("annotate", args=[bobs.pk])).status_code == 200
    dashboard = client_for(alice).get(reverse("dashboard"))
    shown = {a.pk for a in dashboard.context["assignments"]}
    assert shown == set(Assignment.objects.filter(annotator=alice).values_list("pk", flat=True))


def test_it_keeps_annotators_out_of_researcher_pages_exports_and_the_admin(
    bertscore_study: Study, alice: AbstractUser
) -> None:
    client = client_for(alice)
    for url in researcher_urls(bertscore_study):
        assert client.get(url).status_code == 403, url
    assert client.get("/admin/").status_code == 403
    assert client.get("/admin/corpus/dataset/").status_code == 403


def test_it_keeps_researchers_to_their_own_studies(
    bertscore_study: Study, rita: AbstractUser, ronald: AbstractUser
) -> None:
    assert client_for(rita).get(reverse("study_detail", args=[bertscore_study.pk])).status_code == 200
    client = client_for(ronald)
    assert client.get(reverse("study_detail", args=[bertscore_study.pk])).status_code == 404
    assert client.get(reverse("study_export", args=[bertscore_study.pk, "csv"])).status_code == 404
    assert bertscore_study.name not in client.get(reverse("studies")).content.decode()


def test_it_lets_admins_see_every_study_and_the_admin(bertscore_study: Study, admin_user: AbstractUser) -> None:
    client = client_for(admin_user)
    assert client.get(reverse("study_detail", args=[bertscore_study.pk])).status_code == 200
    assert client.get("/admin/corpus/summary/").status_code == 200


def test_it_sends_anonymous_visitors_to_the_login_page(bertscore_study: Study) -> None:
    client = Client()
    for url in [reverse("dashboard"), *researcher_urls(bertscore_study)]:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url
    assert client.post(reverse("api_assignment_submit", args=[1])).status_code == 401  # the API asks for credentials
