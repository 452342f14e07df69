"""No 500 on hostile text: NUL (U+0000) and lone surrogates (U+D800-U+DFFF) answer 400 naming the field or
parameter (imports: an error naming file, line and field) and write nothing."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from corpus.importers import ImportFormatError, parse
from corpus.models import Dataset
from studies.forms import GuidelinesForm, StudyCreateForm
from studies.models import Study
from tests.api.conftest import api_client_for
from tests.conftest import DATA, client_for, units_of, write_jsonl
from tests.snapshots import changed_tables, database_state
from tests.studies.test_submissions import item_of

pytestmark = pytest.mark.django_db

NUL, SURROGATE = "a\x00b", "x\ud800y"


def post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    # json.dumps writes a lone surrogate as the escape \ud800, as a forged client would.
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
def test_it_refuses_hostile_text_in_every_part_of_a_web_submission(
    task_study: Study, alice: AbstractUser, bad: str
) -> None:
    client = client_for(alice)
    sentences = item_of(task_study, alice, "sentence_consistency")
    labels = {str(unit.index): "yes" for unit in units_of(sentences)}
    notes = {index: "supported" for index in labels}
    bump = item_of(task_study, alice, "bump")
    edit = {"text": bump.item.summary.text + " Not.", "label": bump.item.params["error_type"], "note": "n"}
    spans = item_of(task_study, alice, "hallucination_spans")
    cases = [
        (sentences, {"labels": labels, "notes": notes, "comment": bad}, "comment"),
        (sentences, {"labels": labels, "notes": {**notes, "0": bad}}, "notes.0"),
        (sentences, {"labels": {**labels, "0": bad}, "notes": notes}, "labels.0"),
        (bump, {"edit": {**edit, "text": bad}}, "edit.text"),
        (bump, {"edit": {**edit, "note": bad}}, "edit.note"),
        (spans, {"spans": [{"start": 0, "end": 3, "label": bad}]}, "spans.0.label"),
    ]
    before = database_state()
    for assignment, body, field in cases:
        # The page's session and a script's token reach the same endpoint.
        for sender in (client, api_client_for(alice)):
            answer = post_json(sender, reverse("api_assignment_submit", args=[assignment.pk]), body)
            assert answer.status_code == 400, (field, answer.content)
            assert list(answer.json()) == [field], answer.json()
    assert changed_tables(before, database_state()) == ["authtoken_token"]  # alice's API token, made above


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
def test_it_refuses_hostile_text_in_a_draft_naming_its_path(task_study: Study, alice: AbstractUser, bad: str) -> None:
    bump = item_of(task_study, alice, "bump")
    client = client_for(alice)
    before = database_state()
    draft = {"savedAt": 1, "seconds": 3, "comment": "", "task": {"edit": {"text": bad, "label": "freestyle"}}}
    answer = post_json(client, reverse("api_assignment_draft", args=[bump.pk]), {"draft": draft})
    assert answer.status_code == 400
    assert list(answer.json()) == ["draft.task.edit.text"]
    key = post_json(client, reverse("api_assignment_draft", args=[bump.pk]), {"draft": {bad: 1}})
    [field] = key.json()
    assert key.status_code == 400 and field.startswith("draft.")
    infinite = client.post(
        reverse("api_assignment_draft", args=[bump.pk]),
        '{"draft": {"seconds": 1e999}}',
        content_type="application/json",
    )
    assert infinite.status_code == 400 and list(infinite.json()) == ["draft.seconds"]
    assert changed_tables(before, database_state()) == []


def test_it_refuses_in_the_services_what_the_views_would(task_study: Study, alice: AbstractUser) -> None:
    from django.core.exceptions import ValidationError

    from studies.services.studies import assignment_draft_save, assignment_submit

    sentences = item_of(task_study, alice, "sentence_consistency")
    labels = {unit.index: "yes" for unit in units_of(sentences)}
    before = database_state()
    for arguments, field in (
        ({"seconds": float("nan")}, "seconds"),
        ({"seconds": float("inf")}, "seconds"),
        ({"comment": NUL}, "comment"),
        ({"notes": {0: SURROGATE}}, "notes.0"),
    ):
        with pytest.raises(ValidationError) as raised:
            assignment_submit(assignment=sentences, user=alice, labels=labels, **arguments)
        assert field in raised.value.message_dict
    with pytest.raises(ValidationError) as raised:
        assignment_draft_save(assignment_id=sentences.pk, user=alice, draft={"comment": NUL})
    assert "draft.comment" in raised.value.message_dict
    assert changed_tables(before, database_state()) == []


@pytest.mark.parametrize("bad", ["%00", "a%00b"])
def test_it_answers_400_naming_a_query_parameter_with_nul(bertscore_study: Study, rita: AbstractUser, bad: str) -> None:
    dataset = bertscore_study.dataset
    page = client_for(rita).get(f"{reverse('dataset_summaries', args=[dataset.pk])}?q={bad}")
    assert page.status_code == 400 and b"q contains a NUL character" in page.content
    api = api_client_for(rita).get(f"{reverse('api_summaries', args=[dataset.pk])}?system=x&q={bad}")
    assert api.status_code == 400 and "q" in api.json()
    name = client_for(rita).get(f"{reverse('studies')}?x{bad}=1")
    assert name.status_code == 400 and b"parameter name" in name.content


def test_it_refuses_nul_in_a_form_field(bertscore_study: Study, rita: AbstractUser) -> None:
    task = bertscore_study.tasks.get()
    client = client_for(rita)
    before = database_state()
    url = reverse("study_task_guidelines", args=[bertscore_study.pk, task.pk])
    answer = client.post(url, {"text": NUL})
    assert answer.status_code == 400 and b"text contains a NUL character" in answer.content
    assert changed_tables(before, database_state()) == []


def test_it_refuses_in_forms_the_lone_surrogates_django_lets_through(small_dataset: Dataset) -> None:
    guidelines = GuidelinesForm({"text": SURROGATE})
    assert not guidelines.is_valid() and "lone surrogate" in guidelines.errors["text"][0]
    study = StudyCreateForm({"name": SURROGATE, "dataset": small_dataset.pk})
    assert not study.is_valid() and "lone surrogate" in study.errors["name"][0]


def test_it_answers_400_to_an_annotator_id_that_is_not_a_number(bertscore_study: Study, rita: AbstractUser) -> None:
    client = client_for(rita)
    before = database_state()
    url = reverse("study_annotators", args=[bertscore_study.pk])
    for remove in ("abc", "1.5", "", "-1", "9" * 100):
        answer = client.post(url, {"remove": remove})
        assert answer.status_code == 400 and b"remove" in answer.content, remove
    assert changed_tables(before, database_state()) == []


def test_it_refuses_hostile_text_in_an_api_body_naming_its_path(small_dataset: Dataset, rita: AbstractUser) -> None:
    client = api_client_for(rita)
    before = database_state()
    body = {"name": "x", "dataset": small_dataset.pk, "tasks": ["factuality"], "annotators": ["alice"]}
    for change, field in (
        ({"name": SURROGATE}, "name"),
        ({"guidelines": {"factuality": NUL}}, "guidelines.factuality"),
        ({"annotators": ["alice", SURROGATE]}, "annotators.1"),
    ):
        answer = post_json(client, reverse("api_studies"), {**body, **change})
        assert answer.status_code == 400 and field in answer.json(), (field, answer.content)
    deep = client.post(reverse("api_studies"), "[" * 100_000, content_type="application/json")
    assert deep.status_code == 400
    assert changed_tables(before, database_state()) == []


# --- imports ---------------------------------------------------------------------------------------------


def jsonl_line(**change: Any) -> dict[str, Any]:
    summary = {"system": "s", "text": "A summary.", "human_scores": {"Faithful": 1.0}, "meta": {"k": "v"}}
    summary.update(change.pop("summary", {}))
    return {"id": "d2", "text": "A document.", "meta": {"source": {"url": "u"}}, "summaries": [summary], **change}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (jsonl_line(text=NUL), "text"),
        (jsonl_line(title=SURROGATE), "title"),
        (jsonl_line(id=NUL), "id"),
        (jsonl_line(meta={"source": {"url": SURROGATE}}), "meta.source.url"),
        (jsonl_line(meta={"source": [1, NUL]}), "meta.source.1"),
        (jsonl_line(summary={"text": SURROGATE}), "summaries[0].text"),
        (jsonl_line(summary={"system": NUL}), "summaries[0].system"),
        (jsonl_line(summary={"meta": {"k": NUL}}), "summaries[0].meta.k"),
        (jsonl_line(summary={"human_scores": {NUL: 0.5}}), "summaries[0].human_scores.a\\u0000b"),
        (
            jsonl_line(summary={"labels": [{"annotator": SURROGATE, "task": "factuality", "label": "yes"}]}),
            "summaries[0].labels[0].annotator",
        ),
        (
            jsonl_line(summary={"labels": [{"annotator": "w", "task": "factuality", "label": "yes", "comment": NUL}]}),
            "summaries[0].labels[0].comment",
        ),
        ({"document_id": "d1", "system": "t", "text": "Loose.", "meta": {NUL: 1}}, "meta.a\\u0000b"),
    ],
)
def test_it_names_file_line_and_field_of_hostile_text_in_a_jsonl_import(
    tmp_path: Path, line: dict[str, Any], field: str
) -> None:
    good = {"id": "d1", "text": "First.", "summaries": [{"system": "s", "text": "One."}]}
    path = write_jsonl(tmp_path / "hostile.jsonl", [good, line])
    with pytest.raises(ImportFormatError) as raised:
        parse("jsonl", path)
    error = raised.value
    assert (Path(error.file).name, error.line, error.field) == ("hostile.jsonl", 2, field)
    assert "NUL" in str(error) or "surrogate" in str(error)
    assert "\x00" not in str(error) and "\ud800" not in str(error)


def test_it_fails_an_api_import_with_hostile_text_naming_line_and_field_and_writes_nothing(
    rita: AbstractUser, import_worker: Any
) -> None:
    client = api_client_for(rita)
    good = json.dumps({"id": "d1", "text": "First.", "summaries": [{"system": "s", "text": "One."}]})
    before = database_state()
    for bad, field in ((jsonl_line(text=NUL), "text"), (jsonl_line(meta={SURROGATE: 1}), "meta.x\\ud800y")):
        upload = SimpleUploadedFile("mine.jsonl", f"{good}\n{json.dumps(bad)}\n".encode())
        with import_worker():
            answer = client.post(reverse("api_datasets"), {"file": upload, "format": "jsonl", "name": "hostile"})
        assert answer.status_code == 202, answer.content
        job = client.get(answer.json()["url"]).json()
        assert job["status"] == "failed"
        [error] = job["errors"]
        assert (error["file"], error["line"], error["field"]) == ("mine.jsonl", 2, field)
    assert changed_tables(before, database_state()) == ["annotations_importjob"]
    assert not Dataset.objects.filter(name="hostile").exists()


def test_it_refuses_hostile_text_in_the_published_formats_naming_file_and_field(tmp_path: Path) -> None:
    bump = json.loads((DATA / "published" / "bump" / "task1_dataset.json").read_text())
    bump[1]["edited_summary"] = NUL
    bump_path = tmp_path / "task1_dataset.json"
    bump_path.write_text(json.dumps(bump))
    with pytest.raises(ImportFormatError) as raised:
        parse("bump", bump_path)
    assert raised.value.field == "[1].edited_summary.text"

    qags_path = tmp_path / "cnndm.jsonl"
    sentence = {"sentence": "A sentence.", "responses": [{"worker_id": 1, "response": "yes"}]}
    write_jsonl(
        qags_path,
        [
            {"article": "An article.", "summary_sentences": [sentence]},
            {"article": SURROGATE, "summary_sentences": [sentence]},
        ],
    )
    with pytest.raises(ImportFormatError) as raised:
        parse("qags", qags_path)
    assert (raised.value.line, raised.value.field) == (2, "text")

    maynez = tmp_path / "maynez"
    shutil.copytree(DATA / "frank_xsum_sample" / "xsum_hallucination", maynez)
    csv_path = maynez / "hallucination_annotations_xsum_summaries.csv"
    with csv_path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["worker_id"] = "wid\x00"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(ImportFormatError) as raised:
        parse("maynez", maynez)
    assert raised.value.field is not None and raised.value.field.endswith("annotator")
    assert "NUL" in str(raised.value)


def test_it_refuses_hostile_json_sent_as_plain_text_and_writes_nothing(task_study: Study, alice: AbstractUser) -> None:
    """The page saves through the API (one submission path): a body under another content type is refused by the
    API's parsers (415 naming the type), never read as something else, and nothing is written."""
    bump = item_of(task_study, alice, "bump")
    client = client_for(alice)
    before = database_state()
    for name in ("api_assignment_submit", "api_assignment_draft", "api_assignment_skip"):
        answer = client.post(reverse(name, args=[bump.pk]), '{"draft": {"seconds": 1e999}}', content_type="text/plain")
        assert answer.status_code == 415, (name, answer.status_code)
        assert "text/plain" in answer.json()["detail"], name
    assert changed_tables(before, database_state()) == []
