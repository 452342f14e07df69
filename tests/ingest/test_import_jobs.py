"""Uploaded imports run on a worker as import jobs, never inside the request (issue 11 point 6): the size
limit answers 413, the API answers 202 with the job, the job shows progress and errors, a second delivery
imports nothing, other researchers cannot see the job; the streamed import splits the same sentences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from corpus.importers.records import DocumentRecord, Origin
from corpus.models import Dataset, Document, ImportJob, Summary
from ingest.jobs import import_dataset_job
from ingest.services.import_jobs import checked_records
from ingest.services.imports import ImportChecks
from tests.api.conftest import api_client_for
from tests.conftest import DATA, client_for
from tests.scoring.conftest import ROOT, database_url
from tests.snapshots import changed_tables, database_state

pytestmark = pytest.mark.django_db

GOOD = {"id": "d1", "text": "A first text. It has two sentences.", "summaries": [{"system": "s", "text": "One."}]}
BAD = {"id": "d2", "text": "Another text.", "summaries": [{"system": "s", "text": 5}]}


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/x-ndjson")


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def api_import(client: Any, name: str, text: str, dataset: str = "uploaded") -> Any:
    return client.post(reverse("api_datasets"), {"file": upload(name, text), "format": "jsonl", "name": dataset})


def uploads_left(settings: Any) -> list[Path]:
    folder = Path(settings.FAITHANNO_UPLOAD_DIR)
    return list(folder.rglob("*")) if folder.exists() else []


def test_it_answers_413_naming_the_limit_to_an_api_upload_over_it_and_writes_nothing(
    rita: AbstractUser, settings: Any, import_worker: Callable[[], Any]
) -> None:
    settings.FAITHANNO_UPLOAD_MAX_BYTES = 2000
    client = api_client_for(rita)
    before = database_state()
    with import_worker():
        answer = api_import(client, "big.jsonl", jsonl(*[{**GOOD, "id": f"d{i}"} for i in range(40)]))
    assert answer.status_code == 413, answer.content
    assert "2,000 bytes" in answer.json()["detail"]
    assert changed_tables(before, database_state()) == []
    assert uploads_left(settings) == []


def test_it_answers_413_to_a_web_upload_over_the_limit_and_writes_nothing(
    rita: AbstractUser, settings: Any, import_worker: Callable[[], Any]
) -> None:
    settings.FAITHANNO_UPLOAD_MAX_BYTES = 2000
    client = client_for(rita)
    before = database_state()
    body = {"file": upload("big.jsonl", jsonl(*[{**GOOD, "id": f"d{i}"} for i in range(40)])), "format": "jsonl"}
    with import_worker():
        answer = client.post(reverse("dataset_import_upload"), {**body, "name": "web"})
    assert answer.status_code == 413
    assert "2,000 bytes" in answer.content.decode()
    assert changed_tables(before, database_state()) == []
    assert uploads_left(settings) == []


def test_it_answers_202_with_a_job_that_a_worker_takes_to_done(
    rita: AbstractUser, settings: Any, import_worker: Callable[[], Any]
) -> None:
    with import_worker():
        answer = api_import(api_client_for(rita), "small.jsonl", (DATA / "small.jsonl").read_text(), dataset="uploaded")
    assert answer.status_code == 202, answer.content
    url = answer.json()["url"]
    assert answer["Location"] == url
    job = api_client_for(rita).get(url).json()
    dataset = Dataset.objects.get(name="uploaded")
    lines = len((DATA / "small.jsonl").read_text().splitlines())
    assert (job["status"], job["lines_done"], job["lines_total"], job["errors"]) == ("done", lines, lines, [])
    assert job["dataset"] == dataset.pk
    assert Summary.objects.filter(document__dataset=dataset).count() > 0
    assert "dataset 'uploaded'" in job["report"]
    assert uploads_left(settings) == []  # the stored upload is gone once imported


def test_it_fails_a_bad_files_job_naming_file_line_and_field_and_writes_nothing(
    rita: AbstractUser, import_worker: Callable[[], Any]
) -> None:
    client = api_client_for(rita)
    before = database_state()
    with import_worker():
        answer = api_import(client, "mine.jsonl", jsonl(GOOD, BAD), dataset="bad")
    assert answer.status_code == 202
    job = client.get(answer.json()["url"]).json()
    assert job["status"] == "failed"
    [error] = job["errors"]
    assert (error["file"], error["line"], error["field"]) == ("mine.jsonl", 2, "summaries[0].text")
    assert error["message"].startswith("mine.jsonl, line 2")
    assert not Dataset.objects.filter(name="bad").exists()
    assert changed_tables(before, database_state()) == ["annotations_importjob"]


def test_it_imports_nothing_on_a_second_delivery_of_the_same_job(rita: AbstractUser, tmp_path: Path) -> None:
    path = tmp_path / "small.jsonl"
    path.write_text((DATA / "small.jsonl").read_text())
    job = ImportJob.objects.create(created_by=rita, name="twice", format="jsonl", file_name=path.name, path=str(path))
    assert import_dataset_job.apply(kwargs={"job_id": job.pk}).get() is True
    after_first = database_state()
    # The broker hands the same task out again (acks-late after a lost worker): the job is done.
    assert import_dataset_job.apply(kwargs={"job_id": job.pk}).get() is False
    assert changed_tables(after_first, database_state()) == []
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE


def test_it_leaves_a_running_job_to_its_live_worker_and_takes_over_a_dead_ones(
    rita: AbstractUser, tmp_path: Path, settings: Any
) -> None:
    path = tmp_path / "small.jsonl"
    path.write_text((DATA / "small.jsonl").read_text())
    now = timezone.now()
    job = ImportJob.objects.create(
        created_by=rita, name="taken", format="jsonl", file_name=path.name, path=str(path),
        status=ImportJob.Status.RUNNING, started_at=now, heartbeat_at=now,
    )  # fmt: skip
    assert import_dataset_job.apply(kwargs={"job_id": job.pk}).get() is False
    assert not Dataset.objects.filter(name="taken").exists()
    stale = now - timedelta(seconds=settings.FAITHANNO_IMPORT_STALE_SECONDS + 1)
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    assert import_dataset_job.apply(kwargs={"job_id": job.pk}).get() is True
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and Dataset.objects.filter(name="taken").exists()


def test_it_answers_404_to_another_researcher_on_the_job(
    rita: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> None:
    job = ImportJob.objects.create(created_by=rita, name="hers", format="jsonl", file_name="a.jsonl", path="/none")
    api_url, web_url = reverse("api_import_job", args=[job.pk]), reverse("import_job", args=[job.pk])
    assert api_client_for(ronald).get(api_url).status_code == 404
    assert client_for(ronald).get(web_url).status_code == 404
    assert client_for(ronald).get(web_url, {"format": "json"}).status_code == 404
    assert api_client_for(rita).get(api_url).status_code == 200
    assert api_client_for(admin_user).get(api_url).status_code == 200
    assert "hers" not in client_for(ronald).get(reverse("datasets")).content.decode()


def test_it_shows_a_running_jobs_progress_on_the_datasets_page_and_its_own(rita: AbstractUser) -> None:
    job = ImportJob.objects.create(
        created_by=rita, name="growing", format="jsonl", file_name="big.jsonl", path="/none",
        status=ImportJob.Status.RUNNING, lines_done=300, lines_total=1000,
    )  # fmt: skip
    client = client_for(rita)
    listing = client.get(reverse("datasets")).content.decode()
    assert "big.jsonl" in listing and "300 of 1000" in listing and "running" in listing
    page = client.get(reverse("import_job", args=[job.pk])).content.decode()
    assert "300 of 1000 lines" in page
    assert '<meta http-equiv="refresh"' in page  # the page refreshes itself while the job runs
    status = client.get(reverse("import_job", args=[job.pk]), {"format": "json"}).json()
    assert (status["status"], status["lines_done"], status["lines_total"]) == ("running", 300, 1000)
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.DONE, lines_done=1000)
    assert '<meta http-equiv="refresh"' not in client.get(reverse("import_job", args=[job.pk])).content.decode()


def test_it_uploads_on_the_datasets_page_and_the_worker_imports_the_file(
    rita: AbstractUser, import_worker: Callable[[], Any]
) -> None:
    body = {"file": upload("small.jsonl", (DATA / "small.jsonl").read_text()), "format": "jsonl", "name": "web"}
    with import_worker():
        answer = client_for(rita).post(reverse("dataset_import_upload"), body)
    job = ImportJob.objects.get(created_by=rita)
    assert answer.status_code == 302 and answer["Location"] == reverse("import_job", args=[job.pk])
    assert job.status == ImportJob.Status.DONE and job.dataset == Dataset.objects.get(name="web")
    assert "Done:" in client_for(rita).get(answer["Location"]).content.decode()


def test_it_splits_the_same_sentences_as_before_in_the_streamed_command_import() -> None:
    call_command("import_dataset", str(DATA / "cnndm_sample.jsonl"), format_name="jsonl", name="cnndm")
    before = json.loads((DATA / "cnndm_sample_sentences.json").read_text())
    documents = Document.objects.filter(dataset__name="cnndm")
    assert {d.external_id: d.sentences for d in documents} == before["documents"]
    summaries = Summary.objects.filter(document__in=documents).select_related("document")
    assert {f"{s.document.external_id}/{s.system}": s.sentences for s in summaries} == before["summaries"]


def test_it_reads_only_a_batch_ahead_while_splitting_a_stream(settings: Any) -> None:
    settings.FAITHANNO_IMPORT_SPACY_BATCH = 4
    read: list[int] = []

    def endless() -> Iterator[DocumentRecord]:
        number = 0
        while True:
            number += 1
            read.append(number)
            yield DocumentRecord(external_id=str(number), text="One sentence. Two.", origin=Origin("f", number))

    stream = checked_records(endless(), ImportChecks(name="stream"))
    first = next(stream)
    assert first.split_sentences == [[0, 13], [14, 18]]
    assert len(read) <= 8  # a batch or two, not the (endless) file


# Far beyond what the work needs even on a loaded machine: a deadline, never a timing assertion.
WORKER_DEADLINE_SECONDS = 600


@pytest.mark.django_db(transaction=True)
def test_it_imports_an_upload_on_a_real_worker_over_bin_starts_filesystem_broker(
    rita: AbstractUser, tmp_path: Path
) -> None:
    """bin/start's setup: CELERY_BROKER_URL=filesystem:// and one worker process, no Redis."""
    upload_dir = tmp_path / "uploads" / "job"
    upload_dir.mkdir(parents=True)
    path = upload_dir / "small.jsonl"
    path.write_text((DATA / "small.jsonl").read_text())
    job = ImportJob.objects.create(created_by=rita, name="fs", format="jsonl", file_name=path.name, path=str(path))
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": "filesystem://",
        "FAITHANNO_DATA_DIR": str(tmp_path / "data"),
        "FAITHANNO_UPLOAD_DIR": str(tmp_path / "uploads"),
        "OMP_NUM_THREADS": "1",
    }
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "faithanno.celery", "worker", "--pool", "solo", "--loglevel", "INFO"],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        send = (
            "import django; django.setup(); from corpus.models import ImportJob; "
            "from ingest.services.import_jobs import import_job_enqueue; "
            f"import_job_enqueue(job=ImportJob.objects.get(pk={job.pk}))"
        )
        subprocess.run([sys.executable, "-c", send], cwd=ROOT, env=env, check=True)
        deadline = time.monotonic() + WORKER_DEADLINE_SECONDS
        while not ImportJob.objects.get(pk=job.pk).finished:
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    assert Summary.objects.filter(document__dataset__name="fs").count() > 0
    assert (tmp_path / "data" / "celery" / "control").is_dir()  # the broker's files stay in the data folder
