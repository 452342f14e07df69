"""What a crowd study's exports carry (issue 14, point 10): the phase of every judgement, the attention checks
on request with their kind, expectation and outcome, one row per worker with their check pass rate, and the
training attempts; CSV cells a spreadsheet would run are neutralised, Parquet keeps the types."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.exports import CHECKS_INCLUDE, study_judgement_rows
from corpus.models import Dataset
from crowd.models import CrowdStudy, CrowdWorker
from crowd.services.assignment import crowd_item_next, crowd_work_evaluate
from crowd.services.workers import (
    crowd_consent,
    crowd_instructions_read,
    crowd_survey_answer,
    crowd_training_answer,
    crowd_worker_arrive,
)
from studies.models import Assignment
from studies.services.studies import assignment_submit
from tests.api.conftest import api_client_for
from tests.conftest import client_for
from tests.crowd.factories import crowd_study_make

pytestmark = pytest.mark.django_db

WORKER = "-cmd"  # a valid platform id (letters, digits, - and _) that a spreadsheet would run


@pytest.fixture
def crowd(small_dataset: Dataset, rita: AbstractUser) -> CrowdStudy:
    return crowd_study_make(small_dataset, rita).crowd


def _failing(assignment: Assignment) -> str:
    return "no" if assignment.item.crowd_check.expected == "faithful" else "yes"


@pytest.fixture
def worked(crowd: CrowdStudy) -> tuple[CrowdWorker, Assignment, Assignment]:
    """A worker who fails the training once and passes it, answers the pre-survey with a formula, judges one
    item and fails one attention check (graded)."""
    worker, _ = crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": WORKER, "SESSION_ID": "s-1"})
    worker = crowd_consent(worker=worker, accepted=True)
    worker = crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "Yes", "news": ["Online"]})
    worker = crowd_instructions_read(worker=worker)
    items = list(crowd.training_items.order_by("position"))
    for attempt in (1, 2):
        for item in items:
            answer = item.expected if attempt == 2 else "faithful"
            crowd_training_answer(worker=worker, item_id=item.pk, answer=answer)
    worker.refresh_from_db()
    real = crowd_item_next(worker=worker)
    assignment_submit(assignment=real, user=real.annotator, labels={"0": "yes"}, seconds=30.0)
    check = crowd_item_next(worker=worker)
    assert check is not None and hasattr(check.item, "crowd_check")
    assignment_submit(assignment=check, user=check.annotator, labels={"0": _failing(check)}, seconds=30.0)
    crowd_work_evaluate(worker=worker)
    return worker, real, check


def test_it_marks_the_phase_and_leaves_the_checks_out_unless_asked(
    crowd: CrowdStudy, worked: tuple[CrowdWorker, Assignment, Assignment]
) -> None:
    _, real, check = worked
    default = list(study_judgement_rows(study=crowd.study))
    assert {row["summary_id"] for row in default} == {real.item.summary_id}
    assert {(row["phase"], row["check_kind"], row["check_passed"]) for row in default} == {("annotation", "", None)}
    rows = {row["summary_id"]: row for row in study_judgement_rows(study=crowd.study, checks=CHECKS_INCLUDE)}
    assert set(rows) == {real.item.summary_id, check.item.summary_id}
    marked = rows[check.item.summary_id]
    expected = check.item.crowd_check.expected
    assert marked["phase"] == "attention_check" and marked["check_passed"] is False
    assert marked["check_expected"] == expected and marked["check_source"] == check.item.crowd_check.kind
    assert marked["check_kind"] == ("positive" if expected == "faithful" else "negative")
    assert rows[real.item.summary_id]["phase"] == "annotation"
    with pytest.raises(ValueError, match="checks"):
        list(study_judgement_rows(study=crowd.study, checks="maybe"))


def _text(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def test_the_downloads_offer_the_checks_on_request_and_say_so(
    crowd: CrowdStudy, worked: tuple[CrowdWorker, Assignment, Assignment], rita: AbstractUser, tmp_path: Path
) -> None:
    _, _, check = worked
    client = client_for(rita)
    plain = client.get(reverse("study_export", args=[crowd.study_id, "csv"]))
    assert plain["X-FaithAnno-Checks"] == "exclude" and "attention_check" not in _text(plain)
    page = client.get(reverse("study_export", args=[crowd.study_id, "csv"]), {"checks": "include"})
    assert page["X-FaithAnno-Checks"] == "include" and "judgements-checks.csv" in page["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(_text(page))))
    assert [row["check_passed"] for row in rows if row["phase"] == "attention_check"] == ["False"]
    assert {row["worker_id"] for row in rows} == {"'" + WORKER}  # neutralised in CSV
    api = api_client_for(rita)
    url = reverse("api_study_judgements_export", args=[crowd.study_id, "jsonl"])
    lines = [json.loads(line) for line in _text(api.get(url, {"checks": "include"})).splitlines()]
    assert {line["phase"] for line in lines} == {"annotation", "attention_check"}
    assert {line["worker_id"] for line in lines} == {WORKER}  # JSON lines keep the raw value
    assert api.get(url, {"checks": "maybe"}).status_code == 400
    path = tmp_path / "judgements.parquet"
    call_command("export_judgements", study=crowd.study_id, format_name="parquet", output=path, include_checks=True)
    table = pq.read_table(path)
    assert table.schema.metadata[b"checks"] == b"include"
    assert str(table.schema.field("check_passed").type) == "bool"
    assert table["check_passed"].to_pylist().count(False) == 1
    assert check.item.summary_id in table["summary_id"].to_pylist()


def test_it_exports_one_row_per_worker_and_per_training_attempt(
    crowd: CrowdStudy, worked: tuple[CrowdWorker, Assignment, Assignment], rita: AbstractUser, ronald: AbstractUser
) -> None:
    client = client_for(rita)
    workers = client.get(reverse("crowd_export", args=[crowd.study_id, "workers", "jsonl"]))
    (row,) = [json.loads(line) for line in _text(workers).splitlines()]
    assert row["worker_id"] == WORKER and row["platform_session_id"] == "s-1" and row["status"] == "active"
    assert (row["training_attempts"], row["training_passed"], row["items_done"]) == (2, True, 1)
    assert (row["checks_graded"], row["checks_passed"], row["check_pass_rate"]) == (1, 0, 0.0)
    training = client.get(reverse("crowd_export", args=[crowd.study_id, "training", "csv"]))
    attempts = list(csv.DictReader(io.StringIO(_text(training))))
    assert [(a["worker_id"], a["phase"], a["attempt"], a["correct"], a["passed"]) for a in attempts] == [
        ("'" + WORKER, "training", "1", "1", "False"),
        ("'" + WORKER, "training", "2", "2", "True"),
    ]
    surveys = client.get(reverse("crowd_export", args=[crowd.study_id, "surveys", "csv"]))
    assert "'-cmd,prolific,active,pre_survey,english,Yes" in _text(surveys)
    api = api_client_for(rita).get(reverse("api_study_crowd_export", args=[crowd.study_id, "workers", "parquet"]))
    table = pq.read_table(io.BytesIO(b"".join(api.streaming_content)))
    assert table["check_pass_rate"].to_pylist() == [0.0] and str(table.schema.field("items_done").type) == "int64"
    assert client.get(reverse("crowd_export", args=[crowd.study_id, "payments", "csv"])).status_code == 404
    assert client_for(ronald).get(reverse("crowd_export", args=[crowd.study_id, "workers", "csv"])).status_code == 404
    forged = api_client_for(ronald).get(reverse("api_study_crowd_export", args=[crowd.study_id, "workers", "csv"]))
    assert forged.status_code == 404
