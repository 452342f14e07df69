from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from studies.models import Assignment, Judgement, Study
from tests.conftest import DATA, write_jsonl

pytestmark = pytest.mark.django_db

DOCUMENT: dict[str, Any] = {
    "id": "d1",
    "title": "One",
    "text": "The council approved the budget. It takes effect in May.",
    "summaries": [
        {
            "system": "Gold",
            "is_reference": True,
            "text": "The budget was approved.",
            "human_scores": {"Faithful": 1},
        },
        {
            "system": "M",
            "text": "The budget was rejected.",
            "metric_scores": {"R1": 0.25},
            "labels": [{"annotator": "w1", "task": "factuality", "label": "no"}],
        },
    ],
}


def counts() -> tuple[int, ...]:
    return (
        Dataset.objects.count(),
        Document.objects.count(),
        Summary.objects.count(),
        HumanScore.objects.count(),
        MetricScore.objects.count(),
        Assignment.objects.count(),
        Judgement.objects.count(),
    )


def run_import(path: Path, name: str = "ds") -> None:
    call_command("import_dataset", str(path), "--format", "jsonl", "--name", name, stdout=io.StringIO())


def test_it_imports_documents_summaries_scores_and_sentences(small_dataset: Dataset) -> None:
    document = Document.objects.get(dataset=small_dataset, external_id="oldest")
    assert document.title == "Oldest person"
    assert [document.text[s:e] for s, e in document.sentences][:2] == [
        "Emma Morano, the world's oldest person, has died in Italy at the age of 117.",
        "She was born on 29 November 1899 in Piedmont.",
    ]
    gold = document.summaries.get(system="Gold")
    assert gold.is_reference and gold.sentences == [[0, len(gold.text)]]
    model = document.summaries.get(system="ModelA")
    assert model.human_scores.get(name="Faithful").value == 0.4
    assert model.metric_scores.get(name="R1").value == 0.3
    assert Summary.objects.filter(document__dataset=small_dataset).count() == 7


def test_it_imports_crowd_labels_as_judgements_of_external_annotators(small_dataset: Dataset) -> None:
    study = Study.objects.get(dataset=small_dataset, kind=Study.Kind.IMPORTED)
    spans = Judgement.objects.filter(
        assignment__item__study_task__study=study, assignment__item__study_task__task="hallucination_spans"
    )
    [span] = spans
    assert (span.start, span.end, span.label, span.unit_text) == (34, 47, "intrinsic", "March 5, 1898")
    assert span.assignment.annotator.username == "ext.small.w1"
    assert not span.assignment.annotator.is_active
    assert not span.assignment.annotator.has_usable_password()
    # w2 marked nothing: a submitted assignment with no span.
    empty = Assignment.objects.get(item__study_task__task="hallucination_spans", annotator__username="ext.small.w2")
    assert empty.status == Assignment.Status.SUBMITTED and not empty.judgements.exists()
    labels = sorted(
        Judgement.objects.filter(assignment__item__study_task__task="factuality").values_list("label", flat=True)
    )
    assert labels == ["no", "no"]


def test_it_imports_the_same_file_twice_without_duplicates(small_dataset: Dataset) -> None:
    before = counts()
    run_import(DATA / "small.jsonl", name="small")
    assert counts() == before


def test_it_updates_changed_texts_and_scores_on_reimport(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [DOCUMENT])
    run_import(path)
    changed = json.loads(json.dumps(DOCUMENT))
    changed["summaries"][1]["text"] = "The budget was approved in May. It was late."
    changed["summaries"][1]["metric_scores"]["R1"] = 0.5
    run_import(write_jsonl(tmp_path / "b.jsonl", [changed]))
    summary = Summary.objects.get(system="M")
    assert summary.text == "The budget was approved in May. It was late."
    assert len(summary.sentences) == 2
    assert summary.metric_scores.get(name="R1").value == 0.5
    assert Summary.objects.count() == 2


def test_it_adds_a_summary_line_to_an_existing_document(tmp_path: Path) -> None:
    run_import(write_jsonl(tmp_path / "a.jsonl", [DOCUMENT]))
    run_import(write_jsonl(tmp_path / "b.jsonl", [{"document_id": "d1", "system": "New", "text": "A budget passed."}]))
    assert sorted(Summary.objects.values_list("system", flat=True)) == ["Gold", "M", "New"]


def test_it_accepts_an_empty_summary_text(small_dataset: Dataset) -> None:
    assert Summary.objects.get(system="Empty").text == ""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2, field '(line)': not valid JSON"),
        ('["a list"]', "line 2, field '(line)': expected a JSON object"),
        ('{"text": "no id"}', "line 2, field 'id': this field is required"),
        ('{"id": "x", "text": 5}', "line 2, field 'text': expected a string"),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S"}]}',
            "line 2, field 'summaries[0].text': this field is required",
        ),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S", "text": "a", "human_scores": {"F": "high"}}]}',
            "line 2, field 'summaries[0].human_scores.F': expected a number",
        ),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S", "text": "a", "metric_scores": {"R": NaN}}]}',
            "line 2, field 'summaries[0].metric_scores.R': expected a finite number",
        ),
        ('{"id": "x", "text": "t", "colour": "red"}', "line 2, field 'colour': unknown field"),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S", "text": "a", "labels": '
            '[{"annotator": "w", "task": "factuality", "label": "maybe"}]}]}',
            "line 2, field 'summaries[0].labels[0].label': 'maybe' is not a label of task 'factuality'",
        ),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S", "text": "abc", "labels": [{"annotator": "w", '
            '"task": "hallucination_spans", "spans": [{"start": 2, "end": 9, "label": "extrinsic"}]}]}]}',
            "line 2, field 'summaries[0].labels[0].spans[0].start': span [2, 9) is not inside the summary",
        ),
        (
            '{"id": "x", "text": "t", "summaries": [{"system": "S", "text": "a", "labels": '
            '[{"annotator": "w", "task": "sentiment", "label": "x"}]}]}',
            "line 2, field 'summaries[0].labels[0].task': unknown task 'sentiment'",
        ),
        ('{"id": "d1", "text": "again"}', "line 2, field 'id': document id 'd1' already appears on line 1"),
        (
            '{"document_id": "nowhere", "system": "S", "text": "a"}',
            "line 2, field 'document_id': no document 'nowhere' in this file or in dataset 'ds'",
        ),
    ],
)
def test_it_rejects_a_malformed_line_naming_file_line_and_field_and_writes_nothing(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(DOCUMENT) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        run_import(path)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)
    assert "nothing was written" in str(raised.value)
    assert counts() == (0, 0, 0, 0, 0, 0, 0)


def test_it_rolls_back_an_import_that_fails_after_writing_started(tmp_path: Path) -> None:
    """Two labels of one worker on one summary pass the line check but fail while writing judgements."""
    document = json.loads(json.dumps(DOCUMENT))
    document["summaries"][1]["labels"].append({"annotator": "w1", "task": "factuality", "label": "yes"})
    path = write_jsonl(tmp_path / "twice.jsonl", [document])
    with pytest.raises(CommandError, match=r"line 1, field 'summaries\[1\].labels\[1\].annotator'.*twice"):
        run_import(path)
    assert counts() == (0, 0, 0, 0, 0, 0, 0)


def test_it_reports_a_missing_file() -> None:
    with pytest.raises(CommandError, match="no such file or folder"):
        run_import(Path("/nonexistent/file.jsonl"))


def test_it_imports_the_example_of_the_format_documentation(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "IMPORT_FORMATS.md").read_text()
    example = docs.split("### Example", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    run_import(write_jsonl(tmp_path / "example.jsonl", [json.loads(line) for line in example.splitlines()]))
    summary = Summary.objects.get(system="ModelA")
    span = Judgement.objects.get(assignment__item__summary=summary, start__isnull=False)
    assert summary.text[span.start : span.end] == "March 5, 1898"
    assert Summary.objects.filter(system="ModelB").exists()
