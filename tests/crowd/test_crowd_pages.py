"""A crowd worker's session over HTTP: arrival by the link, what the session may reach, and the bad input of
issue 14 (no or malformed worker id, an id of another study, the completion page before finishing, a blocked
worker continuing, forged check answers over the API, two tabs)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client

from corpus.models import Dataset
from crowd.models import CrowdItemRecord, CrowdStudy, CrowdWorker
from crowd.services.workers import crowd_worker_end
from studies.models import Assignment

pytestmark = pytest.mark.django_db

PID = "5f1e2d3c4b5a69788796a5b4"


@pytest.fixture
def crowd(small_dataset: Dataset, rita: AbstractUser) -> CrowdStudy:
    from tests.crowd.factories import crowd_study_make

    return crowd_study_make(small_dataset, rita, consent_text="", phases=["annotation", "end"], training=[]).crowd


def link(crowd: CrowdStudy, pid: str | None = PID) -> str:
    query = f"?PROLIFIC_PID={pid}&STUDY_ID=abc&SESSION_ID=def" if pid is not None else ""
    return f"/crowd/{crowd.key}/{query}"


def worker_of(client: Client) -> CrowdWorker:
    return CrowdWorker.objects.get(pk=client.session["crowd_worker"])


def test_it_explains_a_link_without_a_worker_id(client: Client, crowd: CrowdStudy) -> None:
    answer = client.get(link(crowd, None))
    assert answer.status_code == 400 and b"participant id is missing" in answer.content
    assert b"PROLIFIC_PID" in answer.content
    assert client.get("/crowd/no-such-key/?PROLIFIC_PID=x").status_code == 404
    assert not CrowdWorker.objects.exists()


@pytest.mark.parametrize("pid", ["a%20b", "x" * 101, "a%00b", "%3Cb%3E", "%C3%BC"])
def test_it_refuses_a_malformed_worker_id_with_a_clear_page(client: Client, crowd: CrowdStudy, pid: str) -> None:
    answer = client.get(link(crowd, pid))
    assert answer.status_code == 400
    assert not CrowdWorker.objects.exists() and "_auth_user_id" not in client.session


def test_it_starts_the_session_and_keeps_it_inside_the_study(client: Client, crowd: CrowdStudy) -> None:
    answer = client.get(link(crowd))
    assert answer.status_code == 302 and answer["Location"] == f"/crowd/{crowd.key}/next/"
    answer = client.get(answer["Location"])
    assignment = Assignment.objects.get(annotator=worker_of(client).user)
    assert answer["Location"] == f"/annotate/{assignment.pk}/"
    assert client.get(f"/annotate/{assignment.pk}/").status_code == 200
    for path in ("/studies/", "/datasets/", "/accounts/api-token/", f"/studies/{crowd.study_id}/", "/admin/"):
        assert client.get(path).status_code == 403, path
    assert client.get("/api/v1/datasets/").status_code == 403
    assert client.get("/annotate/")["Location"] == f"/crowd/{crowd.key}/next/"
    assert client.get(f"/api/v1/assignments/{assignment.pk}/").status_code == 200


def test_it_shows_no_code_before_the_end(client: Client, crowd: CrowdStudy) -> None:
    client.get(link(crowd))
    answer = client.get(f"/crowd/{crowd.key}/end/")
    assert answer.status_code == 302 and answer["Location"] == f"/crowd/{crowd.key}/next/"
    assert crowd.completion_code.encode() not in client.get(f"/crowd/{crowd.key}/end/", follow=True).content


def test_it_gives_a_second_worker_id_in_the_same_browser_a_session_of_its_own(
    client: Client, crowd: CrowdStudy
) -> None:
    client.get(link(crowd))
    first = worker_of(client)
    client.get(link(crowd, "another-worker"))
    second = worker_of(client)
    assert second.pk != first.pk and int(client.session["_auth_user_id"]) == second.user_id
    client.get(link(crowd))  # the first worker comes back: their own session again, resumed
    assert worker_of(client).pk == first.pk


def test_it_keeps_a_worker_id_of_another_study_apart(
    client: Client, crowd: CrowdStudy, small_dataset: Dataset, rita: AbstractUser
) -> None:
    from tests.crowd.factories import crowd_study_make

    other = crowd_study_make(small_dataset, rita, consent_text="", phases=["annotation", "end"], training=[]).crowd
    client.get(link(crowd))
    first = worker_of(client)
    client.get(f"/crowd/{crowd.key}/next/")
    assignment = Assignment.objects.get(annotator=first.user)
    client.get(link(other))
    second = worker_of(client)
    assert second.user_id != first.user_id and second.crowd_study_id == other.pk
    assert client.get(f"/crowd/{crowd.key}/next/").status_code == 403  # the first study's pages: not this session
    assert client.get(f"/annotate/{assignment.pk}/").status_code == 404


def test_it_ends_a_blocked_workers_session_with_the_failure_code(client: Client, crowd: CrowdStudy) -> None:
    client.get(link(crowd))
    client.get(f"/crowd/{crowd.key}/next/")
    worker = worker_of(client)
    assignment = Assignment.objects.get(annotator=worker.user)
    crowd_worker_end(worker=worker, status="blocked", reason="block: 2 failed attention check(s)")
    body = json.dumps({"labels": {"0": "yes"}, "seconds": 30})
    draft = client.post(f"/api/v1/assignments/{assignment.pk}/draft/", "{}", content_type="application/json")
    assert draft.status_code == 403
    api = client.post(f"/api/v1/assignments/{assignment.pk}/submission/", body, content_type="application/json")
    assert api.status_code == 403
    answer = client.get(f"/crowd/{crowd.key}/next/", follow=True)
    assert b"FAIL0000" in answer.content and b"did not pass the study" in answer.content
    assert Assignment.objects.get(annotator=worker.user).status == "reclaimed"  # back in the pool, kept on record


def test_it_grades_a_check_on_its_labels_whatever_else_is_posted(client: Client, crowd: CrowdStudy) -> None:
    client.get(link(crowd))
    client.get(f"/crowd/{crowd.key}/next/")
    first = Assignment.objects.get(annotator=worker_of(client).user)
    client.post(
        f"/api/v1/assignments/{first.pk}/submission/",
        {"labels": {"0": "yes"}, "seconds": 30},
        content_type="application/json",
    )
    check = Assignment.objects.get(pk=int(client.get(f"/crowd/{crowd.key}/next/")["Location"].split("/")[2]))
    wrong = "no" if check.item.crowd_check.expected == "faithful" else "yes"
    forged = {"labels": {"0": wrong}, "seconds": 30, "check_passed": True, "passed": True, "crowd_check": None}
    answer = client.post(f"/api/v1/assignments/{check.pk}/submission/", forged, content_type="application/json")
    assert answer.status_code == 200 and "check" not in json.dumps(answer.json())
    assert (
        client.post(f"/crowd/{crowd.key}/paste/", {"assignment": -1}, content_type="application/json").status_code
        == 400
    )
    client.get(f"/crowd/{crowd.key}/next/")
    assert CrowdItemRecord.objects.get(assignment=check).check_passed is False


def test_it_gives_two_tabs_the_same_item(client: Client, crowd: CrowdStudy) -> None:
    client.get(link(crowd))
    other_tab = Client()
    other_tab.cookies = client.cookies
    first = client.get(f"/crowd/{crowd.key}/next/")["Location"]
    second = other_tab.get(f"/crowd/{crowd.key}/next/")["Location"]
    assert first == second
    assert Assignment.objects.filter(annotator=worker_of(client).user).count() == 1


def test_it_refuses_the_crowd_pages_to_a_session_without_a_worker(
    client: Client, crowd: CrowdStudy, alice: AbstractUser
) -> None:
    client.force_login(alice)
    answer = client.get(f"/crowd/{crowd.key}/next/")
    assert answer.status_code == 403 and b"Open the study from your platform" in answer.content


def test_it_limits_arrivals_per_address_and_answers_per_worker(client: Client, crowd: CrowdStudy, settings) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.THROTTLE_RATES, "crowd_arrival": "3/minute", "crowd_worker": "2/minute"},
    }
    answers = [client.get(link(crowd, f"w{n}")).status_code for n in range(4)]
    assert answers == [302, 302, 302, 429] and CrowdWorker.objects.count() == 3
    refused = client.get(link(crowd, "w9"))
    assert int(refused["Retry-After"]) > 0 and b"Too many requests" in refused.content
    client.get(f"/crowd/{crowd.key}/next/")
    pastes = [
        client.post(f"/crowd/{crowd.key}/paste/", {"assignment": 1}, content_type="application/json").status_code
        for _ in range(3)
    ]
    assert pastes[-1] == 429


def test_it_sends_an_ended_worker_from_their_items_to_the_end_page(client: Client, crowd: CrowdStudy) -> None:
    client.get(link(crowd))
    client.get(f"/crowd/{crowd.key}/next/")
    worker = worker_of(client)
    assignment = Assignment.objects.get(annotator=worker.user)
    crowd_worker_end(worker=worker, status="screened_out", reason="test")
    answer = client.get(f"/annotate/{assignment.pk}/", follow=True)
    assert answer.redirect_chain[-1][0] == f"/crowd/{crowd.key}/end/" and b"SCREEN99" in answer.content


def test_it_never_ends_an_accounts_session_by_a_link(client: Client, crowd: CrowdStudy, rita: AbstractUser) -> None:
    client.force_login(rita)
    answer = client.get(link(crowd))
    assert answer.status_code == 409 and b"private window" in answer.content
    assert int(client.session["_auth_user_id"]) == rita.pk and not CrowdWorker.objects.exists()


def test_it_gives_no_code_when_no_item_is_left(client: Client, crowd: CrowdStudy) -> None:
    from studies.models import StudyItem

    StudyItem.objects.filter(study_task__study=crowd.study, crowd_check__isnull=True).delete()
    client.get(link(crowd))
    answer = client.get(f"/crowd/{crowd.key}/next/")
    assert answer.status_code == 200 and b"No items are left" in answer.content
    assert crowd.completion_code.encode() not in answer.content
    assert worker_of(client).status == "active"
