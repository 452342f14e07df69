"""`crowd_prolific_poll` against a local HTTP server that speaks Prolific's JSON (never the real network):
the token is sent, every page is read, workers who returned give their items back; a link to another host,
a bad answer or a refused token change nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from crowd.models import CrowdStudy, CrowdWorker
from crowd.services.assignment import crowd_item_next
from studies.models import Assignment, Participation
from tests.crowd.test_crowd_platform import LEFT_ID, STAYING_ID, crowd, state, two_workers  # noqa: F401

pytestmark = pytest.mark.django_db
TOKEN = "test-token-4c1d"
PROLIFIC_STUDY = "s1"  # the STUDY_ID the test workers arrive with


class FakeProlific(BaseHTTPRequestHandler):
    """GET /api/v1/studies/<id>/submissions/[?page=2]: `pages` as Prolific lays them out."""

    pages: dict[str, Any] = {}
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        FakeProlific.seen.append((self.path, self.headers.get("Authorization", "")))
        if self.headers.get("Authorization") != f"Token {TOKEN}":
            self._answer(401, {"error": "Invalid token"})
        elif self.path in FakeProlific.pages:
            self._answer(200, FakeProlific.pages[self.path])
        else:
            self._answer(404, {"error": "Not found"})

    def _answer(self, status: int, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def prolific_api(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    # A port the system picks: the test's workers run in parallel and never share one.
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProlific)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.PROLIFIC_API_URL = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    FakeProlific.pages, FakeProlific.seen = {}, []
    try:
        yield FakeProlific.pages
    finally:
        server.shutdown()
        server.server_close()


def submission(participant: str, status: str) -> dict[str, Any]:
    return {"id": f"sub-{participant}", "participant_id": participant, "status": status, "study_id": PROLIFIC_STUDY}


FIRST = f"/api/v1/studies/{PROLIFIC_STUDY}/submissions/"
SECOND = FIRST + "?page=2"


def test_it_reads_every_page_and_releases_the_items_of_who_returned(
    crowd: CrowdStudy,  # noqa: F811
    prolific_api: dict[str, Any],
    settings: Any,
) -> None:
    leaving, _, held, other = two_workers(crowd)
    prolific_api[FIRST] = {
        "results": [submission(STAYING_ID, "ACTIVE")],
        "_links": {"next": {"href": f"{settings.PROLIFIC_API_URL}{SECOND}", "title": "Next"}},
    }
    prolific_api[SECOND] = {"results": [submission(LEFT_ID, "RETURNED")], "_links": {"next": {"href": None}}}
    out = StringIO()
    call_command("crowd_prolific_poll", "--study", str(crowd.study_id), stdout=out)
    assert "2 submission(s) of Prolific study s1" in out.getvalue() and "1 session(s) ended" in out.getvalue()
    assert FakeProlific.seen == [(FIRST, f"Token {TOKEN}"), (SECOND, f"Token {TOKEN}")]
    assert Assignment.objects.get(pk=held.pk).status == "reclaimed"
    assert Assignment.objects.get(pk=other.pk).status == "assigned"
    assert CrowdWorker.objects.get(pk=leaving.pk).status == "left"
    assert Participation.objects.get(external_id=LEFT_ID).platform_status == "returned"
    before = state(crowd)
    call_command("crowd_prolific_poll", "--study", str(crowd.study_id), stdout=out)  # a replay changes nothing
    assert state(crowd) == before
    assert crowd_item_next(worker=CrowdWorker.objects.get(pk=other.annotator.crowd_worker.pk)).pk == other.pk


@pytest.mark.parametrize(
    ("pages", "token", "words"),
    [
        (
            {
                FIRST: {
                    "results": [submission(LEFT_ID, "RETURNED")],
                    "_links": {"next": {"href": "http://evil.example.org/steal/"}},
                }
            },
            TOKEN,
            "another host",
        ),
        ({FIRST: {"results": [submission(LEFT_ID, "GONE")]}}, TOKEN, "Prolific API, line 1, status"),
        ({FIRST: {"results": [submission("bad id!", "RETURNED")]}}, TOKEN, "line 1, participant_id"),
        ({FIRST: {"results": [submission("9d1e2d3c4b5a69788796a5b4", "RETURNED")]}}, TOKEN, "no worker of this"),
        ({FIRST: b"<html>"}, TOKEN, "not JSON"),
        ({FIRST: {"results": []}}, "wrong-token", "HTTP 401"),
    ],
)
def test_it_refuses_a_bad_answer_and_changes_nothing(
    crowd: CrowdStudy,  # noqa: F811
    prolific_api: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    pages: dict[str, Any],
    token: str,
    words: str,
) -> None:
    two_workers(crowd)
    prolific_api.update(pages)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", token)
    before = state(crowd)
    with pytest.raises(CommandError) as caught:
        call_command("crowd_prolific_poll", "--study", str(crowd.study_id))
    assert words in str(caught.value) and token not in str(caught.value)
    assert state(crowd) == before


def test_it_needs_a_token_and_a_prolific_study(
    crowd: CrowdStudy,  # noqa: F811
    prolific_api: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PROLIFIC_API_TOKEN")
    two_workers(crowd)
    with pytest.raises(CommandError, match="PROLIFIC_API_TOKEN"):
        call_command("crowd_prolific_poll", "--study", str(crowd.study_id))
    CrowdWorker.objects.filter(crowd_study=crowd).update(platform_study_id="")
    with pytest.raises(CommandError, match="--prolific-study"):
        call_command("crowd_prolific_poll", "--study", str(crowd.study_id))
    assert FakeProlific.seen == []  # nothing was asked
