"""The importers of the published data sets: maynez, frank, bump and qags, and their bad input."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from studies.models import Assignment, Judgement, Study
from tests.conftest import DATA, write_jsonl

pytestmark = pytest.mark.django_db
SAMPLE = DATA / "frank_xsum_sample"
PUBLISHED = DATA / "published"


def run_import(path: Path, format_name: str, name: str = "data") -> str:
    out = io.StringIO()
    call_command("import_dataset", str(path), "--format", format_name, "--name", name, stdout=out)
    return out.getvalue()


def test_it_imports_maynez_with_documents_known_by_id_only() -> None:
    run_import(SAMPLE / "xsum_hallucination", "maynez")
    assert Document.objects.count() == 3 and set(Document.objects.values_list("text", flat=True)) == {""}
    assert Summary.objects.count() == 15
    summary = Summary.objects.get(document__external_id="38765314", system="BERTS2S")
    assert set(summary.human_scores.values_list("name", flat=True)) == {"Faithful", "Factual"}
    assert set(summary.metric_scores.values_list("name", flat=True)) == {"R1", "R2", "RL", "BERTScore", "Entailment"}
    assert Summary.objects.get(document__external_id="38765314", system="Gold").is_reference
    study = Study.objects.get(kind=Study.Kind.IMPORTED)
    tasks = set(study.tasks.values_list("task", flat=True))
    assert tasks == {"hallucination_spans", "factuality"}
    for judgement in Judgement.objects.filter(start__isnull=False).select_related("assignment__item__summary"):
        assert judgement.assignment.item.summary.text[judgement.start : judgement.end] == judgement.unit_text
    # Every worker of every summary is an assignment, also those who marked no span.
    assert Assignment.objects.filter(item__study_task__task="hallucination_spans").count() == 3 * 15


def test_it_imports_frank_with_articles_summaries_split_and_system() -> None:
    run_import(SAMPLE / "frank", "frank")
    assert Summary.objects.count() == 13
    cnndm = Summary.objects.get(document__external_id="008aa71f64621995d749aff42be822b1b6ca7bc9", system="bart")
    assert cnndm.text.startswith("gary locke will be confirmed as kilmarnock")
    assert cnndm.meta == {"split": "valid", "dataset": "CNN/DM"}
    # FRANK's own sentences give the offsets: each one is a sentence of the text.
    assert len(cnndm.sentences) >= 2 and all(cnndm.text[s:e].strip() for s, e in cnndm.sentences)
    document = cnndm.document
    assert "Gary Locke will be confirmed" in document.text and len(document.sentences) > 5
    human = dict(cnndm.human_scores.values_list("name", "value"))
    assert {"Factuality", "RelE", "EntE", "CircE", "OutE", "GramE", "CorefE", "LinkE", "Other"} <= set(human)
    assert not any(name.startswith("Flip_") for name in human)
    metrics = set(cnndm.metric_scores.values_list("name", flat=True))
    assert {"Bleu", "Meteor", "Rouge 1", "BertScore P Art", "FactCC", "FEQA", "Dep Entail", "QAGS"} <= metrics


def test_it_imports_frank_scores_without_article_files(tmp_path: Path) -> None:
    folder = tmp_path / "frank"
    folder.mkdir()
    for name in ("human_annotations.json", "baseline_factuality_metrics_outputs.json"):
        shutil.copy(SAMPLE / "frank" / name, folder / name)
    run_import(folder, "frank")
    assert Summary.objects.count() == 13 and set(Summary.objects.values_list("text", flat=True)) == {""}
    assert HumanScore.objects.filter(name="Factuality").count() == 13


def test_it_imports_bump_pairs_with_their_error_types(tmp_path: Path) -> None:
    pairs = json.loads((PUBLISHED / "bump" / "task1_dataset.json").read_text())[:3]
    pairs[1]["corrected_error_type"] = "Extrinsic Entity Error"
    path = tmp_path / "bump.json"
    path.write_text(json.dumps(pairs))
    run_import(path, "bump")
    assert Summary.objects.count() == 6
    reference = Summary.objects.get(external_id=f"{pairs[1]['id']}-reference")
    edited = Summary.objects.get(external_id=f"{pairs[1]['id']}-edited")
    assert reference.is_reference and not edited.is_reference
    assert edited.text == pairs[1]["edited_summary"] and reference.document == edited.document
    assert edited.meta["error_type"] == "Extrinsic Entity Error"
    assert edited.meta["annotated_error_type"] == pairs[1]["error_type"] and edited.meta["faithful"] is False
    assert edited.metric_scores.get(name="QAFactEval").value == pairs[1]["scores"]["QAFactEval_edited"]
    assert MetricScore.objects.filter(summary=reference).count() == 12


def qags_line(article: str, sentences: list[tuple[str, list[str]]]) -> dict[str, object]:
    return {
        "article": article,
        "summary_sentences": [
            {"sentence": text, "responses": [{"worker_id": i, "response": r} for i, r in enumerate(responses)]}
            for text, responses in sentences
        ],
    }


def test_it_imports_qags_judgements_with_the_mean_of_sentence_majorities(tmp_path: Path) -> None:
    article = "The council approved the budget on Monday. It takes effect in May."
    path = write_jsonl(
        tmp_path / "mturk_cnndm.jsonl",
        [
            qags_line(
                article,
                [("The budget was approved.", ["yes", "yes", "no"]), ("It starts in June.", ["no", "no", "yes"])],
            ),
            qags_line(article, [("The council met.", ["yes", "yes", "yes"])]),
        ],
    )
    run_import(path, "qags")
    assert Document.objects.count() == 1
    first = Summary.objects.get(external_id="mturk_cnndm-line1")
    assert first.text == "The budget was approved. It starts in June." and first.system == "mturk_cnndm"
    assert first.sentences == [[0, 24], [25, 43]]
    assert first.human_scores.get(name="QAGS").value == 0.5
    assert Summary.objects.get(external_id="mturk_cnndm-line2").human_scores.get(name="QAGS").value == 1.0
    judgements = Judgement.objects.filter(
        assignment__item__summary=first, assignment__item__study_task__task="sentence_consistency"
    )
    assert judgements.count() == 6
    worker_two = judgements.filter(assignment__annotator__username__endswith=".2").order_by("unit_index")
    assert list(worker_two.values_list("unit_index", "label")) == [(0, "no"), (1, "yes")]
    agreement = io.StringIO()
    call_command(
        "agreement",
        "--dataset",
        "data",
        "--task",
        "sentence_consistency",
        "--coefficient",
        "percent",
        "--json",
        stdout=agreement,
    )
    assert json.loads(agreement.getvalue())["value"] == pytest.approx(100 * (2 / 3 + 2 / 3 + 1) / 3)


@pytest.mark.parametrize(
    ("format_name", "source", "message"),
    [
        ("bump", "xsum_hallucination/eval_scores_xsum_summaries.csv", "not a BUMP task file: invalid JSON"),
        ("bump", "frank/human_annotations.json", "field '[0].id': this field is required (is this a BUMP task file?)"),
        ("qags", "bump/task2_dataset.json", "line 1, field '(line)': expected a JSON object, got list"),
        ("qags", "xsum_hallucination/eval_scores_xsum_summaries.csv", "line 1, field '(line)': not valid JSON"),
        ("maynez", "frank", "hallucination_annotations_xsum_summaries.csv: file not found"),
        ("maynez", "bump/task2_dataset.json", "expected the folder holding the three Maynez CSV files"),
        ("frank", "xsum_hallucination", "human_annotations.json: file not found"),
    ],
)
def test_it_names_the_file_of_the_wrong_format_and_writes_nothing(format_name: str, source: str, message: str) -> None:
    with pytest.raises(CommandError) as raised:
        run_import(PUBLISHED / source, format_name)
    assert "Import failed, nothing was written" in str(raised.value) and message in str(raised.value)
    assert not Dataset.objects.exists() and not Summary.objects.exists()


def test_it_names_the_line_and_field_of_a_bad_qags_response(tmp_path: Path) -> None:
    good = qags_line("An article.", [("A sentence.", ["yes"])])
    bad = qags_line("An article.", [("A sentence.", ["yes", "maybe"])])
    path = write_jsonl(tmp_path / "q.jsonl", [good, bad])
    with pytest.raises(CommandError) as raised:
        run_import(path, "qags")
    assert (
        f"{path}, line 2, field 'summary_sentences[0].responses[1].response': expected 'yes' or 'no', got 'maybe'"
        in str(raised.value)
    )
    assert not Summary.objects.exists()


def test_it_names_the_pair_and_field_of_a_bad_bump_score(tmp_path: Path) -> None:
    pairs = json.loads((PUBLISHED / "bump" / "task2_dataset.json").read_text())[:2]
    pairs[1]["scores"]["DAE_edited"] = "high"
    path = tmp_path / "bump.json"
    path.write_text(json.dumps(pairs))
    with pytest.raises(CommandError) as raised:
        run_import(path, "bump")
    assert f"{path}, field '[1].scores.DAE_edited': expected a number, got str 'high'" in str(raised.value)
    assert not Summary.objects.exists()
