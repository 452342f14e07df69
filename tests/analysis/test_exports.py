from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from analysis.selectors.exports import (
    EXPORT_FIELDS,
    JUDGEMENT_COLUMN_TYPES,
    SUMMARY_COLUMN_TYPES,
    export_column_types,
)
from common.exports import parquet_chunks
from corpus.models import Summary
from crowd.selectors.crowd import CROWD_EXPORTS
from ingest.selectors.dataset_records import dataset_jsonl_records
from protocols.tasks import QGQA_STATEMENTS, unit_statement
from studies.models import Assignment, Judgement, Study
from studies.services.studies import assignment_submit
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db

API_EXPORTS = {"study_export": "api_study_judgements_export", "study_summaries_export": "api_study_summaries_export"}


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


# --- what a correlation study needs (issue 13, point 3) -----------------------------------------------


def download_rows(client: Any, name: str, study: Study, format_name: str) -> list[dict[str, Any]]:
    response = client.get(reverse(name, args=[study.pk, format_name]))
    assert response.status_code == 200, response.content[:300]
    body = b"".join(response.streaming_content)
    if format_name == "parquet":
        assert response["Content-Type"] == "application/vnd.apache.parquet"
        return pq.read_table(io.BytesIO(body)).to_pylist()
    if format_name == "jsonl":
        return [json.loads(line) for line in body.decode().splitlines()]
    return list(csv.DictReader(io.StringIO(body.decode())))


def test_it_puts_the_summary_text_and_the_document_id_in_the_per_summary_table(
    judged_study: Study, rita: AbstractUser
) -> None:
    rows = download_rows(client_for(rita), "study_summaries_export", judged_study, "jsonl")
    summaries = {s.pk: s for s in Summary.objects.filter(study_items__study_task__study=judged_study)}
    assert len(rows) == len(summaries) > 1
    for row in rows:
        summary = summaries[row["summary_id"]]
        assert row["summary_text"] == summary.text and row["document"] == summary.document.external_id
        assert row["summary_key"] == summary.external_id and row["system"] == summary.system
    assert len({row["summary_text"] for row in rows}) == len(rows)  # not the system's name again


def test_it_says_which_statement_each_qgqa_judgement_answers(
    task_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    assignment = Assignment.objects.filter(annotator=alice, item__study_task__task="qgqa").first()
    units = units_of(assignment)
    labels = {unit.index: "correct" for unit in units}
    assignment_submit(assignment=assignment, user=alice, labels=labels, comment="", seconds=5)
    rows = [row for row in download_rows(client_for(rita), "study_export", task_study, "csv") if row["task"] == "qgqa"]
    assert [int(row["unit_index"]) for row in rows] == [unit.index for unit in units] and len(rows) == 4
    answerable, similar = QGQA_STATEMENTS
    assert [row["statement"] for row in rows] == [answerable, similar, answerable, similar]
    assert [row["statement"] for row in rows] == [unit.prompt for unit in units]  # what the annotator read
    assert rows[0]["unit_text"] == units[0].text


def test_it_gives_every_unit_of_every_task_the_statement_the_annotator_read(task_study: Study) -> None:
    for assignment in Assignment.objects.filter(item__study_task__study=task_study).select_related("item__study_task"):
        task = assignment.item.study_task.task
        for unit in units_of(assignment):
            if task in ("qgqa", "feqa", "entailment", "sentence_consistency"):
                assert unit_statement(task, unit.index) == unit.prompt, (task, unit.index)


@pytest.mark.parametrize("export", ["study_export", "study_summaries_export"])
def test_it_downloads_parquet_with_the_rows_of_json_lines_on_the_web_and_the_api(
    judged_study: Study, rita: AbstractUser, export: str
) -> None:
    expected = download_rows(client_for(rita), export, judged_study, "jsonl")
    for client, name in ((client_for(rita), export), (api_client_for(rita), API_EXPORTS[export])):
        rows = download_rows(client, name, judged_study, "parquet")
        as_json = {column for column, kind in export_column_types(list(rows[0])).items() if kind == "json"}
        assert [{k: json.loads(v) if k in as_json else v for k, v in row.items()} for row in rows] == expected


def test_it_writes_parquet_from_the_commands_and_refuses_standard_output(judged_study: Study, tmp_path: Path) -> None:
    for command, path in (("export_judgements", tmp_path / "j.parquet"), ("export_summaries", tmp_path / "s.parquet")):
        call_command(command, "--study", str(judged_study.pk), "--format", "parquet", "--output", str(path))
        table = pq.read_table(path)
        assert table.num_rows > 0
        with pytest.raises(CommandError, match="give --output"):
            call_command(command, "--study", str(judged_study.pk), "--format", "parquet", stdout=io.StringIO())
    judgements = pq.read_table(tmp_path / "j.parquet")
    assert judgements.schema.field("summary_id").type == pa.int64()
    assert judgements.schema.field("seconds_spent_on_item").type == pa.float64()
    summaries = pq.read_table(tmp_path / "s.parquet")
    assert summaries.schema.field("is_reference").type == pa.bool_()
    assert all(summaries.schema.field(n).type == pa.float64() for n in summaries.column_names if ":" in n)


def test_it_streams_parquet_one_row_group_at_a_time() -> None:
    rows = ({"n": n, "text": f"row {n}", "data": {"n": n}, "score": n / 2 if n % 3 else None} for n in range(25))
    types = {"n": "integer", "text": "text", "data": "json", "score": "number"}
    chunks = parquet_chunks(rows, list(types), types, rows_per_group=10)
    first = next(chunks)  # the first group is out before the rest of the rows are read
    assert first.startswith(b"PAR1")
    parquet = pq.ParquetFile(io.BytesIO(first + b"".join(chunks)))
    assert parquet.metadata.num_row_groups == 3 and parquet.metadata.num_rows == 25
    table = parquet.read().to_pylist()
    assert table[4] == {"n": 4, "text": "row 4", "data": '{"n": 4}', "score": 2.0} and table[3]["score"] is None


def test_it_has_a_data_dictionary_entry_with_the_type_of_every_export_column(
    judged_study: Study, rita: AbstractUser
) -> None:
    dictionary = Path(__file__).resolve().parents[2] / "docs" / "EXPORTS.md"
    documented: dict[str, str] = {}
    for line in dictionary.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([^`]+)` \| (\w+) \|", line)
        if match:
            documented[match.group(1)] = match.group(2)
    crowd_types = [types for _, types, _ in CROWD_EXPORTS.values()]
    for types in (JUDGEMENT_COLUMN_TYPES, SUMMARY_COLUMN_TYPES, *crowd_types):
        for column, kind in types.items():
            assert documented.get(column) == kind, column
    summary_columns = download_rows(client_for(rita), "study_summaries_export", judged_study, "jsonl")[0]
    for column in summary_columns:
        pattern = re.sub(r"^(human|metric|enhanced):.*", r"\1:", column)
        assert column in documented or any(key.startswith(pattern) for key in documented if ":" in key), column
    record = next(dataset_jsonl_records(dataset=judged_study.dataset))
    assert set(record) <= set(documented)
