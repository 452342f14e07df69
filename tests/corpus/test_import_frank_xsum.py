from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.importers.frank_xsum import locate_span
from corpus.models import Document, Summary
from studies.models import Assignment, Judgement, Study
from tests.conftest import DATA

pytestmark = pytest.mark.django_db
SAMPLE = DATA / "frank_xsum_sample"


def run_import(path: Path, name: str = "xsum") -> None:
    call_command("import_dataset", str(path), "--format", "frank-xsum", "--name", name, stdout=io.StringIO())


def test_it_builds_the_thesis_data_from_frank_and_maynez() -> None:
    run_import(SAMPLE)
    assert sorted(Document.objects.values_list("external_id", flat=True)) == [
        "14919066",
        "38765314",
        "39497668",
    ]
    assert Summary.objects.count() == 15
    document = Document.objects.get(external_id="38765314")
    # FRANK glues paragraphs ("season.Scotland"); the importer joins FRANK's lines with spaces.
    assert "five goals this season. Scotland Under-21" in document.text
    assert len(document.sentences) >= 5
    assert set(document.summaries.values_list("system", flat=True)) == {
        "BERTS2S",
        "TConvS2S",
        "TranS2S",
        "PtGen",
        "Gold",
    }
    assert document.summaries.get(system="Gold").is_reference

    bert = document.summaries.get(system="BERTS2S")
    human = dict(bert.human_scores.values_list("name", "value"))
    metrics = dict(bert.metric_scores.values_list("name", "value"))
    assert {"Faithful", "Factual", "Factuality", "RelE"} <= set(human)
    assert not any(name.startswith("Flip_") for name in human)
    assert {"R1", "R2", "RL", "BERTScore", "Entailment", "FactCC", "QAGS", "BertScore P Art"} <= set(metrics)
    # The reference has Maynez spans but no Maynez or FRANK scores.
    assert not document.summaries.get(system="Gold").human_scores.exists()


def test_it_matches_maynez_scores_to_the_right_system() -> None:
    run_import(SAMPLE)
    rows = {
        row["system_bbcid"]: row
        for row in csv.DictReader((SAMPLE / "xsum_hallucination/eval_scores_xsum_summaries.csv").open())
    }
    for system, eval_name in [("BERTS2S", "bert_withckpt"), ("TranS2S", "bert_nockpt"), ("PtGen", "ptgen")]:
        summary = Summary.objects.get(document__external_id="38765314", system=system)
        assert summary.human_scores.get(name="Factual").value == pytest.approx(
            float(rows[f"{eval_name}_38765314"]["Factual"])
        )


def test_it_imports_every_workers_spans_and_factuality_labels() -> None:
    run_import(SAMPLE)
    study = Study.objects.get(kind=Study.Kind.IMPORTED)
    span_rows = list(
        csv.DictReader((SAMPLE / "xsum_hallucination/hallucination_annotations_xsum_summaries.csv").open())
    )
    workers_per_summary = {(r["bbcid"], r["system"], r["worker_id"]) for r in span_rows}
    assert Assignment.objects.filter(
        item__study_task__study=study, item__study_task__task="hallucination_spans"
    ).count() == len(workers_per_summary)
    for judgement in Judgement.objects.filter(assignment__item__study_task__task="hallucination_spans").select_related(
        "assignment__item__summary"
    ):
        text = judgement.assignment.item.summary.text
        assert text[judgement.start : judgement.end] == judgement.unit_text
        assert judgement.label in {"intrinsic", "extrinsic"}
    fact_rows = list(csv.DictReader((SAMPLE / "xsum_hallucination/factuality_annotations_xsum_summaries.csv").open()))
    assert Judgement.objects.filter(assignment__item__study_task__task="factuality").count() == sum(
        1 for r in fact_rows if r["is_factual"] in {"yes", "no"}
    )
    assert any(r["is_factual"] == "NULL" for r in fact_rows)  # the sample does contain missing labels


def test_it_locates_spans_whose_offsets_do_not_align() -> None:
    summary = "former snp leader alex salmond has been sworn in as the new leader of scotland."
    assert locate_span(summary, "former snp leader", 1, 18) == (0, 17)
    assert locate_span(summary, "\\nthe new leader of scotland", 0, 28) == (52, 78)
    assert locate_span(summary, "nowhere to be found", 1, 5) is None


def test_it_imports_the_same_folder_twice_without_duplicates() -> None:
    run_import(SAMPLE)
    before = (Summary.objects.count(), Judgement.objects.count(), Assignment.objects.count())
    run_import(SAMPLE)
    assert (Summary.objects.count(), Judgement.objects.count(), Assignment.objects.count()) == before


def test_it_names_file_row_and_field_of_a_bad_csv_value(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    shutil.copytree(SAMPLE, folder)
    path = folder / "xsum_hallucination/hallucination_annotations_xsum_summaries.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    row = next(csv.reader([lines[3]]))
    row[header.index("hallucinated_span_start")] = "first"
    buffer = [lines[0], lines[1], lines[2], ",".join(f'"{v}"' for v in row), *lines[4:]]
    path.write_text("\n".join(buffer) + "\n")
    with pytest.raises(CommandError) as raised:
        run_import(folder)
    assert f"{path}, line 4, field 'hallucinated_span_start': expected an integer, got 'first'" in str(raised.value)
    assert Document.objects.count() == 0


def test_it_reports_a_folder_without_frank_articles(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"frank/articles.*folder not found"):
        run_import(tmp_path)
