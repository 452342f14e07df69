from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.exports import EXPORT_FIELDS
from studies.models import Assignment, Judgement, Study
from studies.services.studies import assignment_submit
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged_study(bertscore_study: Study, alice: AbstractUser) -> Study:
    for assignment in Assignment.objects.filter(annotator=alice, item__study_task__study=bertscore_study)[:2]:
        assignment_submit(
            assignment=assignment,
            user=alice,
            labels={u.index: "incorrect" for u in units_of(assignment)},
            comment='checked, a quote " and, comma',
            seconds=42,
        )
    return bertscore_study


def test_it_exports_every_judgement_as_csv(judged_study: Study, rita: AbstractUser) -> None:
    response = client_for(rita).get(reverse("study_export", args=[judged_study.pk, "csv"]))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    judgements = Judgement.objects.filter(assignment__item__study_task__study=judged_study)
    assert len(rows) == judgements.count() > 0
    assert set(rows[0]) == set(EXPORT_FIELDS)
    row = rows[0]
    judgement = judgements.get(assignment__item__summary_id=int(row["summary_id"]), unit_index=int(row["unit_index"]))
    assert row["annotator"] == "alice" and row["label"] == "incorrect" and row["task"] == "bertscore"
    assert row["unit_text"] == judgement.unit_text
    assert row["document"] == judgement.assignment.item.summary.document.external_id
    assert row["comment"] == 'checked, a quote " and, comma'
    assert float(row["seconds_spent_on_item"]) == 42
    assert row["created_at"] and row["updated_at"]
    assert json.loads(row["explanation_config"])["strategy"] == "sentences"


def test_it_exports_the_same_rows_as_jsonl_from_the_command_line(judged_study: Study, tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    call_command("export_judgements", "--study", str(judged_study.pk), "--format", "jsonl", "--output", str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == Judgement.objects.filter(assignment__item__study_task__study=judged_study).count()
    assert rows[0]["explanation_model"]["encoder"].startswith("packaged:minilm")
    out = io.StringIO()
    call_command("export_judgements", "--study", str(judged_study.pk), "--format", "csv", stdout=out)
    assert len(list(csv.DictReader(io.StringIO(out.getvalue())))) == len(rows)


def test_it_refuses_an_unknown_export_format(judged_study: Study, rita: AbstractUser) -> None:
    assert client_for(rita).get(f"/studies/{judged_study.pk}/judgements.xlsx").status_code == 400


def test_it_exports_the_note_and_the_edit_of_a_judgement(
    task_study: Study, alice: AbstractUser, tmp_path: Path
) -> None:
    from tests.studies.test_submissions import item_of, submit

    client = client_for(alice)
    qags = item_of(task_study, alice, "sentence_consistency")
    (unit,) = units_of(qags)
    assert (
        submit(client, qags, labels={str(unit.index): "no"}, notes={str(unit.index): "wrong date"}).status_code == 200
    )
    bump = item_of(task_study, alice, "bump")
    edited = bump.item.summary.text.replace("Cardiff", "Swansea")
    if edited == bump.item.summary.text:
        edited = bump.item.summary.text.rstrip(".") + " last year."
    assert submit(client, bump, edit={"text": edited, "label": bump.item.params["error_type"]}).status_code == 200

    path = tmp_path / "out.jsonl"
    call_command("export_judgements", "--study", str(task_study.pk), "--format", "jsonl", "--output", str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    noted = [row for row in rows if row["task"] == "sentence_consistency"]
    assert [row["note"] for row in noted] == ["wrong date"]
    [edit] = [row for row in rows if row["task"] == "bump"]
    assert edit["data"]  # the edit and its diff, as the BUMP task stored them
    assert edited in json.dumps(edit["data"])
