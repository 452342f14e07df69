"""400, 403, 404 and 500 are answered with the app's own pages (with its navigation) and JSON under /api/,
with DEBUG off and on (the demo): nobody sees Django's technical pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client
from django.urls import reverse

from studies.models import Assignment, Study
from tests.conftest import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.error_urls")]

TECHNICAL = ("URLconf", "Traceback", "seeing this error because you have", "DEBUG = True", "hunter2", "Request Method")


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request: pytest.FixtureRequest, settings: Any) -> bool:
    settings.DEBUG = request.param
    return request.param


def assert_own_page(answer: Any, status: int, title: str, signed_in: bool = True) -> str:
    page = answer.content.decode()
    assert answer.status_code == status
    assert answer["Content-Type"].startswith("text/html")
    assert 'data-testid="error-page"' in page and f"<h1>{title}" in page, page[:3000]
    for marker in TECHNICAL:
        assert marker not in page, marker
    if signed_in:
        assert '<nav aria-label="Main">' in page and "Log out" in page
    return page


def assert_api_error(answer: Any, status: int) -> None:
    assert answer.status_code == status
    assert answer["Content-Type"] == "application/json"
    assert set(answer.json()) == {"detail"}
    for marker in TECHNICAL:
        assert marker not in answer.content.decode()


def test_it_answers_404_with_its_own_page(debug: bool, alice: AbstractUser) -> None:
    client = client_for(alice)
    page = assert_own_page(client.get("/no-such-page/"), 404, "Not found")
    assert "My items" in page  # the annotator's navigation
    assert_own_page(client.get("/annotate/987654/"), 404, "Not found")  # raised by a view
    assert_own_page(Client().get("/no-such-page/"), 404, "Not found", signed_in=False)
    # A missing slash is still added (not answered 404).
    assert client.get("/annotate").status_code == 301


def test_it_answers_api_404_with_json(debug: bool, alice: AbstractUser) -> None:
    client = client_for(alice)
    assert_api_error(client.get("/api/v1/no-such-endpoint/"), 404)
    assert_api_error(client.get("/api/v1/assignments/987654/"), 404)


def test_it_answers_403_with_its_own_page(debug: bool, alice: AbstractUser) -> None:
    page = assert_own_page(client_for(alice).get("/studies/"), 403, "Not allowed")
    assert "Researchers only." in page
    assert_api_error(client_for(alice).get("/api/v1/datasets/"), 403)


def test_it_answers_a_failed_csrf_check_with_its_own_page(debug: bool, alice: AbstractUser) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = assert_own_page(client.post("/accounts/api-token/", {"rotate": "1"}), 403, "Not allowed")
    assert "Reload it and try again" in page


def test_it_answers_400_with_its_own_page(debug: bool, alice: AbstractUser) -> None:
    client = client_for(alice)
    assert_own_page(client.get("/test-bad-request/"), 400, "Bad request")
    # Raised in a middleware: too many form fields, and a host name the site does not serve.
    fields = {f"field{n}": "x" for n in range(1001)}
    assert_own_page(client.post("/accounts/api-token/", fields), 400, "Bad request")
    assert_own_page(Client().get("/accounts/login/", HTTP_HOST="evil.example"), 400, "Bad request", signed_in=False)
    assert_api_error(client.get("/api/v1/datasets/", HTTP_HOST="evil.example"), 400)


def test_it_answers_500_with_its_own_page(debug: bool, alice: AbstractUser) -> None:
    client = client_for(alice)
    client.raise_request_exception = False
    page = assert_own_page(client.get("/test-crash/"), 500, "Something went wrong")
    assert "My items" in page
    assert_api_error(client.get("/api/v1/test-crash/"), 500)


def test_it_answers_bad_input_on_a_page_with_the_apps_own_400_page_naming_the_field(
    bertscore_study: Study, rita: AbstractUser
) -> None:
    # A view's InputError (here a malformed annotator id) becomes the error page, not plain text.
    answer = client_for(rita).post(reverse("study_annotators", args=[bertscore_study.pk]), {"remove": "abc"})
    page = assert_own_page(answer, 400, "Bad request")
    assert "remove" in page


def test_it_answers_a_refused_comparison_with_its_own_page_saying_why(
    debug: bool, explained_dataset: Any, rita: AbstractUser
) -> None:
    # It was the one plain-text 400 of the pages.
    client = client_for(rita)
    oldest, bridge = [document.summaries.first() for document in explained_dataset.documents.order_by("pk")[:2]]
    across = client.get(f"{reverse('summary_compare')}?a={oldest.pk}&b={bridge.pk}")
    page = assert_own_page(across, 400, "Bad request")
    assert "Cannot compare" in page and "different documents" in page
    page = assert_own_page(client.get(f"{reverse('summary_compare')}?a=x&b={oldest.pk}"), 400, "Bad request")
    assert "must be a summary id" in page


def test_it_answers_an_unknown_export_format_with_its_own_page_naming_the_formats(
    debug: bool, bertscore_study: Study, rita: AbstractUser
) -> None:
    client = client_for(rita)
    page = assert_own_page(client.get(f"/studies/{bertscore_study.pk}/judgements.xlsx"), 400, "Bad request")
    assert "Unknown export format &#x27;xlsx&#x27;: use one of csv, jsonl" in page
    answer = client.get(f"/api/v1/studies/{bertscore_study.pk}/exports/judgements.xlsx")
    assert_api_error(answer, 400)
    assert "Unknown export format" in answer.json()["detail"]


def test_it_answers_a_method_a_page_does_not_take_with_its_own_page(
    debug: bool, bertscore_study: Study, alice: AbstractUser
) -> None:
    client = client_for(alice)
    assignment = Assignment.objects.filter(annotator=alice, item__study_task__study=bertscore_study).first()
    # A form's address opened as a link (require_POST), and a page posted to (require_GET).
    answer = client_for(bertscore_study.created_by).get(reverse("study_reclaim", args=[bertscore_study.pk]))
    page = assert_own_page(answer, 405, "Not possible this way")
    assert answer["Allow"] == "POST" and "Go back" in page
    answer = client.post(reverse("annotate", args=[assignment.pk]))
    assert_own_page(answer, 405, "Not possible this way")
    assert answer["Allow"] == "GET"
    signed_out = Client().post(reverse("summary_compare"))  # the sign-in comes first
    assert signed_out.status_code == 302
