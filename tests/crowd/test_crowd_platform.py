"""Workers who left on the platform (issue 14): the platform's export applied by the service, the crowd page,
the API and `crowd_platform_status`; their open items go back to the pool, their submitted work stays."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from corpus.models import Dataset
from crowd.models import CrowdStudy, CrowdWorker
from crowd.services.assignment import crowd_item_next
from crowd.services.platform import crowd_platform_file_apply
from crowd.services.workers import crowd_worker_arrive
from protocols.platform_status import PlatformFileError
from studies.models import Assignment, Judgement, Participation
from tests.conftest import client_for
from tests.crowd.factories import crowd_study_make
from tests.crowd.test_crowd_services import arrive, submit, to_annotation
from tests.protocols.test_platform_status import MTURK_HEAD, MTURK_ROW, prolific

pytestmark = pytest.mark.django_db
LEFT_ID, STAYING_ID = "5f1e2d3c4b5a69788796a5b4", "6a1e2d3c4b5a69788796a5b4"


@pytest.fixture
def crowd(small_dataset: Dataset, rita: AbstractUser) -> CrowdStudy:
    return crowd_study_make(small_dataset, rita, check_rate=0, max_items_per_worker=100).crowd


def two_workers(crowd: CrowdStudy) -> tuple[CrowdWorker, CrowdWorker, Assignment, Assignment]:
    """One worker who submitted an item and holds the next, another who holds one."""
    leaving, staying = to_annotation(arrive(crowd, LEFT_ID)), to_annotation(arrive(crowd, STAYING_ID))
    done = crowd_item_next(worker=leaving)
    submit(done, "yes")
    held = crowd_item_next(worker=leaving)
    other = crowd_item_next(worker=staying)
    return leaving, staying, held, other


def state(crowd: CrowdStudy) -> list[tuple[object, ...]]:
    """Everything an application of the platform's statuses may change."""
    return [
        *Assignment.objects.filter(item__study_task__study=crowd.study).order_by("pk").values_list("pk", "status"),
        *CrowdWorker.objects.filter(crowd_study=crowd).order_by("pk").values_list("pk", "status", "phase"),
        *Participation.objects.filter(study=crowd.study).order_by("pk").values_list("pk", "platform_status"),
        (Judgement.objects.count(),),
    ]


def test_it_releases_the_open_items_of_a_worker_who_returned_and_keeps_their_work(crowd: CrowdStudy) -> None:
    leaving, _, held, other = two_workers(crowd)
    data = prolific((LEFT_ID, "RETURNED"), (STAYING_ID, "ACTIVE"))
    report = crowd_platform_file_apply(crowd=crowd, data=data, source="prolific.csv", skip_unknown=False)
    assert (report.platform, report.workers, report.recorded, report.ended, report.released) == (
        "prolific",
        2,
        2,
        1,
        1,
    )
    leaving.refresh_from_db()
    assert (leaving.status, leaving.phase) == ("left", "end") and "Returned" in leaving.end_reason
    assert Assignment.objects.get(pk=held.pk).status == "reclaimed"  # back in the pool, kept on record
    assert Assignment.objects.get(pk=other.pk).status == "assigned"  # the other worker keeps theirs
    assert Assignment.objects.filter(annotator=leaving.user, status="submitted").count() == 1  # work stays
    assert not leaving.participation.excluded
    statuses = dict(Participation.objects.filter(study=crowd.study).values_list("external_id", "platform_status"))
    assert statuses == {LEFT_ID: "returned", STAYING_ID: "active"}
    # The released item goes to the next worker who pulls.
    newcomer = to_annotation(arrive(crowd, "7b1e2d3c4b5a69788796a5b4"))
    assert crowd_item_next(worker=newcomer).item_id == held.item_id
    before = state(crowd)
    replay = crowd_platform_file_apply(crowd=crowd, data=data, source="prolific.csv", skip_unknown=False)
    assert (replay.recorded, replay.ended, replay.released) == (0, 0, 0) and state(crowd) == before


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (prolific((LEFT_ID, "RETURNED"), ("0000000000000000000000aa", "RETURNED")), "line 3, Participant id"),
        (prolific((LEFT_ID, "RETURNED"), ("=cmd|x", "RETURNED")), "line 3, Participant id"),
        (prolific((LEFT_ID, "RETURNED"), (STAYING_ID, "LEFT")), "line 3, Status"),
        ((MTURK_HEAD + MTURK_ROW.format(aid="A", wid=LEFT_ID, status="Returned")).encode(), "mturk export"),
        (prolific((LEFT_ID, "RETURNED")) + b"\xff\xfe", "UTF-8"),
    ],
)
def test_it_refuses_a_bad_file_and_changes_nothing(crowd: CrowdStudy, data: bytes, words: str) -> None:
    two_workers(crowd)
    before = state(crowd)
    with pytest.raises(PlatformFileError) as caught:
        crowd_platform_file_apply(crowd=crowd, data=data, source="prolific.csv", skip_unknown=False)
    assert words in str(caught.value) and str(caught.value).startswith("prolific.csv, line")
    assert state(crowd) == before


def test_it_refuses_a_worker_of_another_study_unless_told_to_skip_unknown_ids(
    crowd: CrowdStudy, small_dataset: Dataset, rita: AbstractUser
) -> None:
    leaving, *_ = two_workers(crowd)
    other = crowd_study_make(small_dataset, rita).crowd
    to_annotation(arrive(other, "9d1e2d3c4b5a69788796a5b4"))
    data = prolific(("9d1e2d3c4b5a69788796a5b4", "RETURNED"), (LEFT_ID, "TIMED-OUT"))
    with pytest.raises(PlatformFileError) as caught:
        crowd_platform_file_apply(crowd=crowd, data=data, source="export.csv", skip_unknown=False)
    assert caught.value.line == 2 and "no worker of this study" in caught.value.message
    report = crowd_platform_file_apply(crowd=crowd, data=data, source="export.csv", skip_unknown=True)
    assert report.unknown == ["9d1e2d3c4b5a69788796a5b4"] and report.ended == 1
    assert CrowdWorker.objects.get(crowd_study=other).status == "active"  # the other study's worker is untouched
    leaving.refresh_from_db()
    assert leaving.status == "left"


def test_it_reads_mturks_batch_results_for_an_mturk_study(small_dataset: Dataset, rita: AbstractUser) -> None:
    crowd = crowd_study_make(small_dataset, rita, platform="mturk", check_rate=0).crowd
    worker = to_annotation(arrive_mturk(crowd, "AZ3456EXAMPLE"))
    held = crowd_item_next(worker=worker)
    body = MTURK_HEAD + MTURK_ROW.format(aid="A1", wid="AZ3456EXAMPLE", status="Abandoned")
    report = crowd_platform_file_apply(crowd=crowd, data=body.encode(), source="batch.csv", skip_unknown=False)
    assert (report.ended, report.released) == (1, 1)
    assert Assignment.objects.get(pk=held.pk).status == "reclaimed"


def arrive_mturk(crowd: CrowdStudy, worker_id: str) -> CrowdWorker:
    worker, _ = crowd_worker_arrive(crowd=crowd, params={"workerId": worker_id, "hitId": "3HIT", "assignmentId": "A1"})
    return worker


def test_it_applies_the_export_from_the_command_line(crowd: CrowdStudy, tmp_path: Path) -> None:
    two_workers(crowd)
    path = tmp_path / "prolific_export.csv"
    path.write_bytes(prolific((LEFT_ID, "TIMED-OUT")))
    out = StringIO()
    call_command("crowd_platform_status", "--study", str(crowd.study_id), "--file", str(path), stdout=out)
    assert "1 session(s) ended, 1 open item(s) back in the pool" in out.getvalue()
    path.write_bytes(prolific((LEFT_ID, "TIMED-OUT"), ("abc", "NOPE")))
    with pytest.raises(CommandError, match=r"prolific_export\.csv, line 3, Status"):
        call_command("crowd_platform_status", "--study", str(crowd.study_id), "--file", str(path))
    with pytest.raises(CommandError, match="No public study"):
        call_command("crowd_platform_status", "--study", "999999", "--file", str(path))


def test_it_applies_an_upload_on_the_crowd_page_and_shows_the_status_on_the_quality_page(
    crowd: CrowdStudy, rita: AbstractUser, ronald: AbstractUser
) -> None:
    leaving, *_ = two_workers(crowd)
    url = f"/studies/{crowd.study_id}/crowd/platform-status/"
    upload = SimpleUploadedFile("export.csv", prolific((LEFT_ID, "RETURNED")), content_type="text/csv")
    assert client_for(ronald).post(url, {"file": upload}).status_code == 404  # not ronald's study
    assert CrowdWorker.objects.get(pk=leaving.pk).status == "active"
    upload = SimpleUploadedFile("export.csv", prolific((LEFT_ID, "RETURNED")), content_type="text/csv")
    answer = client_for(rita).post(url, {"file": upload}, follow=True)
    assert "1 session(s) ended" in answer.content.decode()
    assert CrowdWorker.objects.get(pk=leaving.pk).status == "left"
    page = client_for(rita).get(f"/studies/{crowd.study_id}/quality/").content.decode()
    assert 'data-platform-status="returned"' in page and "On the platform: Returned (unpaid)" in page
    bad = SimpleUploadedFile("export.csv", b"Participant id,Status\n=1+1,RETURNED\n", content_type="text/csv")
    answer = client_for(rita).post(url, {"file": bad})
    assert answer.status_code == 400 and "export.csv, line 2, Participant id" in answer.content.decode()


def test_it_ends_the_session_of_a_worker_who_left_with_a_page_saying_so(crowd: CrowdStudy, client: Client) -> None:
    assert client.get(f"/crowd/{crowd.key}/", {"PROLIFIC_PID": LEFT_ID}).status_code == 302
    worker = CrowdWorker.objects.get()
    to_annotation(worker)
    assert client.get(f"/crowd/{crowd.key}/next/").status_code == 302
    held = Assignment.objects.get(annotator=worker.user)
    crowd_platform_file_apply(crowd=crowd, data=prolific((LEFT_ID, "RETURNED")), source="e.csv", skip_unknown=False)
    answer = client.get(f"/crowd/{crowd.key}/next/", follow=True)
    assert "This study is closed for you" in answer.content.decode() and "DONE1234" not in answer.content.decode()
    submitted = client.post(
        f"/api/v1/assignments/{held.pk}/submission/", {"labels": {"0": "yes"}}, content_type="application/json"
    )
    assert submitted.status_code == 403 and Assignment.objects.get(pk=held.pk).status == "reclaimed"


def test_it_answers_an_api_upload_with_the_report_or_the_error(
    crowd: CrowdStudy, rita: AbstractUser, ronald: AbstractUser
) -> None:
    two_workers(crowd)
    url = f"/api/v1/studies/{crowd.study_id}/crowd/platform-status/"
    upload = SimpleUploadedFile("export.csv", prolific((LEFT_ID, "RETURNED")), content_type="text/csv")
    assert client_for(ronald).post(url, {"file": upload}).status_code == 404
    upload = SimpleUploadedFile("export.csv", prolific((LEFT_ID, "RETURNED"), ("zz9", "RETURNED")))
    answer = client_for(rita).post(url, {"file": upload})
    assert answer.status_code == 400 and "export.csv, line 3, Participant id" in answer.json()["file"][0]
    upload = SimpleUploadedFile("export.csv", prolific((LEFT_ID, "RETURNED"), ("zz9", "RETURNED")))
    answer = client_for(rita).post(url, {"file": upload, "skip_unknown": "true"})
    assert answer.status_code == 200
    assert answer.json() == {
        "platform": "prolific",
        "workers": 1,
        "recorded": 1,
        "ended": 1,
        "released": 1,
        "unknown": ["zz9"],
    }
    quality = client_for(rita).get(f"/api/v1/studies/{crowd.study_id}/quality/").json()
    assert {w["external_id"]: w["platform_status"] for w in quality["workers"]}[LEFT_ID] == "returned"


def test_it_gives_no_item_to_a_pull_that_waited_while_the_worker_left(crowd: CrowdStudy) -> None:
    leaving, *_ = two_workers(crowd)
    submit(Assignment.objects.get(annotator=leaving.user, status="assigned"), "no")
    crowd_platform_file_apply(crowd=crowd, data=prolific((LEFT_ID, "TIMED-OUT")), source="e.csv", skip_unknown=False)
    assert leaving.status == "active"  # the pull's stale view of the worker, read before the study's turn
    assert crowd_item_next(worker=leaving) is None
    assert not Assignment.objects.filter(annotator=leaving.user, status="assigned").exists()
