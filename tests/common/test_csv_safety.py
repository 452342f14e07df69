"""CSV exports are safe to open in a spreadsheet (issue 11 point 4): every text cell that a spreadsheet
would run as a formula is neutralised as OWASP describes, in every CSV the product writes (web, API and
commands); numbers stay numbers and JSON lines keep the raw values."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from common import roles
from common.exports import FORMULA_TRIGGERS, csv_cell, csv_chunks
from corpus.importers import parse
from corpus.models import Dataset
from ingest.services.imports import dataset_import
from studies.models import Assignment, Study
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for, make_user, write_jsonl

HOSTILE = ["=1+1", "+SUM(A1:A9)", "-2+3", "@SUM(A1)", "\t=1+2", "\r=1+2", '=HYPERLINK("http://x","y")', "-"]
NUMBERS = ["-0.5", "+3", "-1e5", "0.25", ".5", "-.5e-3", "42"]


@pytest.mark.parametrize("text", HOSTILE)
def test_it_prefixes_text_a_spreadsheet_would_run_with_a_quote(text: str) -> None:
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", [*NUMBERS, -0.5, 3, 0, -7, 1e-9, None, "plain", "1-2", "a=b", " =1", "'=1"])
def test_it_writes_numbers_and_harmless_text_unchanged(value: Any) -> None:
    assert csv_cell(value) == value


def test_it_writes_infinities_as_text_and_containers_as_json() -> None:
    assert csv_cell(float("-inf")) == "'-inf" and csv_cell(float("inf")) == "inf"
    assert csv_cell({"edited": "=1+1"}) == '{"edited": "=1+1"}'
    assert csv_cell(["-1"]) == '["-1"]'


def test_it_neutralises_the_header_and_every_cell_of_a_written_csv() -> None:
    rows = [{"=name": text, "n": -0.5} for text in HOSTILE]
    parsed = list(csv.reader(io.StringIO("".join(csv_chunks(rows, ["=name", "n"])))))
    assert parsed[0] == ["'=name", "n"]
    assert [row[0] for row in parsed[1:]] == ["'" + text for text in HOSTILE]
    assert {row[1] for row in parsed[1:]} == {"-0.5"}


# --- every export path ---------------------------------------------------------------------------------

# What a hostile importer, annotator or researcher controls, by the export column it reaches.
DOCUMENT = '=HYPERLINK("http://evil.example","open")'
SYSTEM = "+SUM(A1:A9)"
SUMMARY = "@summary"
DATASET = "-evil dataset"
SENTENCE = "=1+1 is what the summary says."
COMMENT = "=cmd|' /C calc'!A0"
NOTE = "@SUM(1)"
CROWD_COMMENT = "-2+3"
USERNAME = "@mallory"


@pytest.fixture
def hostile(tmp_path: Path, rita: AbstractUser) -> Study:
    """A dataset whose ids, texts and crowd labels begin like formulas, and rita's study of it, judged by
    an annotator whose username does too, with such comments and notes; a human score of -0.5 and a
    document id "-7" are genuine numbers."""
    records = [
        {
            "id": DOCUMENT,
            "text": "One plus one is two. The summary is wrong.",
            "summaries": [
                {
                    "id": SUMMARY,
                    "system": SYSTEM,
                    "text": SENTENCE,
                    "human_scores": {"Faithful": -0.5},
                    "labels": [{"annotator": "w1", "task": "factuality", "label": "no", "comment": CROWD_COMMENT}],
                }
            ],
        },
        {"id": "-7", "text": "A second document.", "summaries": [{"system": "B", "text": "A second summary."}]},
    ]
    dataset = dataset_import(name=DATASET, batch=parse("jsonl", write_jsonl(tmp_path / "hostile.jsonl", records)))
    mallory = make_user(USERNAME, roles.ANNOTATOR)
    study = study_create(
        spec=StudySpec(
            name="=STUDY()",
            dataset=dataset.dataset,
            tasks=["sentence_consistency", "hallucination_spans"],
            annotators=[mallory],
            annotators_per_item=1,
            created_by=rita,
        )
    ).study
    for assignment in Assignment.objects.filter(item__study_task__study=study).select_related("item__study_task"):
        text = assignment.item.summary.text
        if assignment.item.study_task.task == "hallucination_spans":
            work: dict[str, Any] = {"spans": [{"start": 0, "end": text.index(" "), "label": "extrinsic"}]}
        else:
            work = {"labels": {"0": "no"}, "notes": {"0": NOTE}}
        assignment_submit(assignment=assignment, user=mallory, comment=COMMENT, seconds=42, **work)
    return study


def download(client: Any, name: str, *args: Any) -> Callable[[], str]:
    """A download over the web (a signed-in Client) or the API (a token APIClient)."""

    def fetch() -> str:
        response = client.get(reverse(name, args=args))
        assert response.status_code == 200, (name, response.status_code)
        return b"".join(response.streaming_content).decode()

    return fetch


def command(name: str, *args: str) -> Callable[[], str]:
    def fetch() -> str:
        out = io.StringIO()
        call_command(name, *args, stdout=out)
        return out.getvalue()

    return fetch


def exports(study: Study, researcher: AbstractUser, format_name: str) -> dict[str, Callable[[], str]]:
    """Every export the product writes, in one format: name -> a function fetching its text."""
    dataset: Dataset = study.dataset
    s, d, f = study.pk, dataset.pk, format_name
    web, api = client_for(researcher), api_client_for(researcher)
    return {
        "web study judgements": download(web, "study_export", s, f),
        "web study summaries": download(web, "study_summaries_export", s, f),
        "web dataset summaries": download(web, "dataset_summaries_export", d, f),
        "web imported judgements": download(web, "dataset_judgements_export", d, f),
        "api study judgements": download(api, "api_study_judgements_export", s, f),
        "api study summaries": download(api, "api_study_summaries_export", s, f),
        "api dataset summaries": download(api, "api_dataset_summaries_export", d, f),
        "api imported judgements": download(api, "api_dataset_judgements_export", d, f),
        "command study judgements": command("export_judgements", "--study", str(s), "--format", f),
        "command imported judgements": command("export_judgements", "--dataset", dataset.name, "--format", f),
        "command study summaries": command("export_summaries", "--study", str(s), "--format", f),
        "command dataset summaries": command("export_summaries", "--dataset", dataset.name, "--format", f),
    }


def starts_like_a_formula(cell: str) -> bool:
    return cell.startswith(FORMULA_TRIGGERS) and csv_cell(cell) != cell


@pytest.mark.django_db
def test_it_neutralises_every_hostile_cell_of_every_csv_export(hostile: Study, rita: AbstractUser) -> None:
    expected = {
        "judgements": {
            "document": DOCUMENT,
            "system": SYSTEM,
            "dataset": DATASET,
            "annotator": USERNAME,
            "comment": COMMENT,
            "note": NOTE,
            "unit_text": SENTENCE,
        },
        "imported": {"document": DOCUMENT, "system": SYSTEM, "dataset": DATASET, "comment": CROWD_COMMENT},
        "summaries": {
            "document": DOCUMENT,
            "system": SYSTEM,
            "dataset": DATASET,
            "summary_key": SUMMARY,
            "summary_text": SENTENCE,
        },
    }
    for name, fetch in exports(hostile, rita, "csv").items():
        rows = list(csv.DictReader(io.StringIO(fetch())))
        assert rows, name
        unsafe = [(column, cell) for row in rows for column, cell in row.items() if starts_like_a_formula(cell)]
        assert unsafe == [], (name, unsafe)
        kind = "summaries" if "summaries" in name else "imported" if "imported" in name else "judgements"
        for column, value in expected[kind].items():
            assert "'" + value in {row[column] for row in rows}, (name, column)
        if kind == "summaries":
            # Genuine numbers stay numbers: a real float and a document id that is a number.
            assert {row["human:Faithful"] for row in rows} >= {"-0.5"}, name
            assert "-7" in {row["document"] for row in rows}, name
        if kind == "judgements":
            assert {row["seconds_spent_on_item"] for row in rows} == {"42.0"}, name


@pytest.mark.django_db
def test_it_keeps_the_raw_values_in_json_lines(hostile: Study, rita: AbstractUser) -> None:
    for name, fetch in exports(hostile, rita, "jsonl").items():
        rows = [json.loads(line) for line in fetch().splitlines()]
        assert rows, name
        assert DOCUMENT in {row["document"] for row in rows}, name
        assert not any(str(value).startswith("'") for row in rows for value in row.values()), name
        if "summaries" in name:
            assert -0.5 in {row["human:Faithful"] for row in rows}, name
        elif "imported" in name:
            assert CROWD_COMMENT in {row["comment"] for row in rows}, name
        else:
            assert {row["comment"] for row in rows} == {COMMENT} and USERNAME in {row["annotator"] for row in rows}


def test_it_writes_header_less_lines_through_csv_cell() -> None:
    from common.exports import csv_lines, csv_plain

    assert csv_lines([("5f1a", "0.20"), ("=1+1", "-0.5"), ("a,b", "+SUM(A1)")]) == (
        "5f1a,0.20\n'=1+1,-0.5\n\"a,b\",'+SUM(A1)\n"
    )
    assert csv_plain("5f1a0c") and csv_plain("+1") and not csv_plain("=1") and not csv_plain("a,b")


def test_every_csv_writer_of_the_product_is_in_common_exports() -> None:
    """Every CSV the product writes goes through common.exports (csv_chunks, csv_lines), whose cells pass
    csv_cell: no other module builds CSV itself (a csv writer, or `f"{id},{amount}\\n"` lines by hand)."""
    import re

    root = Path(__file__).resolve().parents[2]
    writer = re.compile(r"csv\.(writer|DictWriter)\(|f\"\{[^\"]*\},\{[^\"]*\}\\n\"")
    found = []
    for path in root.rglob("*.py"):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(("tests/", "node_modules/", "benchmarks/")) or "/migrations/" in relative:
            continue
        if relative != "common/exports.py" and writer.search(path.read_text(encoding="utf-8")):
            found.append(relative)
    assert found == []
