"""Human-enhanced metrics over judgements submitted through the study service (thesis Table 5.6).

QGQA and entailment studies cannot be created from the study form yet (the annotation-task views come
with their own issue), so the fixture builds the study rows directly and lets alice, bob and carol
submit through `assignment_submit`, which checks every label against the task's units.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse
from scipy import stats

from analysis.selectors.analysis import study_enhanced_scores, study_enhanced_table
from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from scoring.models import Explanation
from studies.models import Assignment, Study, StudyItem, StudyTask
from studies.services.studies import assignment_submit
from tests.conftest import client_for, units_of, write_jsonl

pytestmark = pytest.mark.django_db

FAITHFUL = [0.1, 0.9, 0.5, 0.7, 0.3]
QAGS_SCORES = [0.6, 0.5, 0.7, 0.4, 0.65]
ENTAILMENT_SCORES = [0.4, 0.5, 0.45, 0.6, 0.2]


def question(text: str, kept: bool = True) -> dict[str, object]:
    answer = {"start": 0, "end": 3, "text": "The", "unanswerable": False}
    return {
        "question": text,
        "candidate": {"start": 0, "end": 3, "text": "The", "type": "NP"},
        "summary_answer": answer,
        "source_answer": answer,
        "f1": 1.0,
        "kept": kept,
        "filter_reason": "" if kept else "duplicate",
    }


@pytest.fixture
def enhanced_study(tmp_path, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser) -> Study:
    records = [
        {"id": f"d{i}", "text": "The council approved the budget.", "summaries": [
            {"system": f"S{i % 2}", "text": "The council approved it.", "human_scores": {"Faithful": faithful}}
        ]}
        for i, faithful in enumerate(FAITHFUL)
    ]  # fmt: skip
    dataset: Dataset = dataset_import(
        name="enh", batch=parse("jsonl", write_jsonl(tmp_path / "e.jsonl", records))
    ).dataset
    summaries = list(Summary.objects.filter(document__dataset=dataset).order_by("document__external_id"))
    study = Study.objects.create(name="Enhanced", dataset=dataset, annotators_per_item=3, created_by=rita)
    study.researchers.add(rita)
    study.annotators.add(alice, bob, carol)
    questions = [question("Who approved?"), question("Dropped?", kept=False), question("What?")]
    sentence = {"start": 0, "end": 24, "text": "The council approved it.", "top": []}
    payloads = {
        "qgqa": ("qags", {"questions": questions}),
        "entailment": ("entailment", {"k": 3, "sentences": [sentence]}),
    }
    for task, (metric, payload) in payloads.items():
        study_task = StudyTask.objects.create(study=study, task=task)
        for position, summary in enumerate(summaries):
            score = (QAGS_SCORES if task == "qgqa" else ENTAILMENT_SCORES)[position]
            explanation = Explanation.objects.create(
                summary=summary, metric=metric, config_hash="test", code_version="test", score=score, payload=payload
            )
            item = StudyItem.objects.create(
                study_task=study_task, summary=summary, explanation=explanation, position=position
            )
            for annotator in (alice, bob, carol):
                Assignment.objects.create(item=item, annotator=annotator, position=position)
    return study


# Per summary: each annotator's labels. QGQA units 0-3 (two kept questions; 1 and 3 are "similar meaning").
QGQA = {
    "alice": ["correct", "incorrect", "correct", "incorrect", "correct"],
    "bob": ["incorrect", "correct", "correct", "dont_know", "correct"],
    "carol": ["incorrect", "correct", "incorrect", "incorrect", "correct"],
}
ENTAILMENT = {
    "alice": ["none", "all", "some", "most", "few"],
    "bob": ["few", "all", "most", "most", "few"],
    "carol": ["none", "most", "few", "all", "some"],
}
NUMBERS = {
    "none": 0.0,
    "few": 0.25,
    "some": 0.5,
    "most": 0.75,
    "all": 1.0,
    "correct": 1.0,
    "incorrect": 0.0,
    "dont_know": 0.0,
}


def judge_everything(study: Study) -> None:
    for assignment in Assignment.objects.filter(item__study_task__study=study).select_related(
        "annotator", "item__study_task"
    ):
        position = assignment.item.position
        name = assignment.annotator.username
        if assignment.item.study_task.task == "qgqa":
            # Unit 2n ("answerable") always correct; unit 2n + 1 ("similar meaning") from the table.
            labels = {u.index: "correct" if u.index % 2 == 0 else QGQA[name][position] for u in units_of(assignment)}
            assert sorted(labels) == [0, 1, 2, 3]  # the filtered question has no units
        else:
            labels = {0: ENTAILMENT[name][position]}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)


def expected(task: str, position: int, aggregation: str) -> float:
    table = QGQA if task == "qgqa" else ENTAILMENT
    values = sorted(NUMBERS[table[name][position]] for name in table)
    if aggregation == "average":
        return sum(values) / 3
    counts = {v: values.count(v) for v in values}
    top = max(counts.values())
    return values[1] if top == 1 else next(v for v, c in counts.items() if c == top)


def test_it_scores_each_summary_by_majority_and_average_vote(enhanced_study: Study) -> None:
    judge_everything(enhanced_study)
    scores = study_enhanced_scores(study=enhanced_study)
    ids = list(
        Summary.objects.filter(document__dataset=enhanced_study.dataset)
        .order_by("document__external_id")
        .values_list("pk", flat=True)
    )
    for task in ("qgqa", "entailment"):
        for aggregation in ("majority", "average"):
            got = [scores[(task, aggregation)][i] for i in ids]
            # QGQA: the two questions share the same "similar meaning" labels, so their mean is one question's.
            assert got == pytest.approx([expected(task, p, aggregation) for p in range(5)]), (task, aggregation)
    # Without mapping "don't know" to incorrect, bob's label on summary 3 is left out: 1 of 2 correct.
    kept = study_enhanced_scores(study=enhanced_study, dont_know_as_incorrect=False)
    assert kept[("qgqa", "average")][ids[3]] == pytest.approx(0.0)
    assert scores[("qgqa", "average")][ids[1]] == pytest.approx(2 / 3)


def test_it_lays_out_table_5_6_against_the_human_gold(enhanced_study: Study) -> None:
    judge_everything(enhanced_study)
    rows = study_enhanced_table(study=enhanced_study, human="Faithful", bootstrap=100)
    assert [row.method for row in rows] == [
        "qgqa_original", "qgqa_enhanced_maj", "qgqa_enhanced_avg",
        "entailment_original", "entailment_enhanced_maj", "entailment_enhanced_avg",
    ]  # fmt: skip
    by_method = {row.method: row for row in rows}
    assert by_method["qgqa_original"].pearson.r == pytest.approx(stats.pearsonr(QAGS_SCORES, FAITHFUL).statistic)
    averages = [expected("entailment", p, "average") for p in range(5)]
    average_row = by_method["entailment_enhanced_avg"]
    assert average_row.spearman.r == pytest.approx(stats.spearmanr(averages, FAITHFUL).statistic)
    original = by_method["entailment_original"].pearson.r
    assert average_row.relative_improvement == pytest.approx((average_row.pearson.r - original) / abs(original))


def test_it_exports_and_shows_the_enhanced_scores_per_summary(enhanced_study: Study, rita: AbstractUser) -> None:
    judge_everything(enhanced_study)
    response = client_for(rita).get(reverse("study_summaries_export", args=[enhanced_study.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 5
    assert {"enhanced:qgqa:majority", "enhanced:entailment:average", "metric:qags", "human:Faithful"} <= set(rows[0])
    by_document = {row["document"]: row for row in rows}
    for position in range(5):
        row = by_document[f"d{position}"]
        assert float(row["enhanced:entailment:average"]) == pytest.approx(expected("entailment", position, "average"))
        assert float(row["enhanced:qgqa:majority"]) == pytest.approx(expected("qgqa", position, "majority"))
        assert float(row["metric:qags"]) == pytest.approx(QAGS_SCORES[position])
    dataset_rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    client_for(rita)
                    .get(reverse("dataset_summaries_export", args=[enhanced_study.dataset.pk, "csv"]))
                    .streaming_content
                ).decode()
            )
        )
    )
    assert f"enhanced:study{enhanced_study.pk}:entailment:majority" in dataset_rows[0]

    page = client_for(rita).get(reverse("study_analysis", args=[enhanced_study.pk]))
    html = page.content.decode()
    assert [row.method for row in page.context["enhanced"]][:3] == [
        "qgqa_original",
        "qgqa_enhanced_maj",
        "qgqa_enhanced_avg",
    ]
    assert html.count('data-method="') == 6 and html.count('<circle class="point"') == 10


def test_it_averages_bertscore_over_the_important_words_of_the_word_level_view(bertscore_study: Study) -> None:
    """Thesis 5.2: BERTScore enhanced = the mean over the summary's important words of the aggregated label.
    The important words are protocols.alignment's (the task's units), one label per word whatever its pieces."""
    from protocols.alignment import word_alignment

    expected: dict[int, float] = {}
    for assignment in Assignment.objects.filter(item__study_task__study=bertscore_study).select_related(
        "annotator", "item__summary__document", "item__explanation"
    ):
        item = assignment.item
        alignment = word_alignment(item.explanation.payload, document_text=item.summary.document.text)
        important = alignment.important
        assert [u.index for u in units_of(assignment)] == [word.index for word in important]
        # alice calls a word similar when all its pieces are (its score, the lowest piece, at least 0.8);
        # bob calls every word similar: the average vote is the mean of (alice + 1) / 2 over the words.
        similar = {word.index: word.score is not None and word.score >= 0.8 for word in important}
        everything = assignment.annotator.username == "bob"
        labels = {index: "correct" if everything or ok else "incorrect" for index, ok in similar.items()}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)
        expected[item.summary_id] = sum((1.0 + ok) / 2 for ok in similar.values()) / len(similar)
    scores = study_enhanced_scores(study=bertscore_study)[("bertscore", "average")]
    assert scores == pytest.approx(expected)
    assert len(set(expected.values())) > 1  # the words' scores tell the summaries apart


def test_it_scores_from_a_crowd_models_labels_when_one_is_chosen(enhanced_study: Study, rita: AbstractUser) -> None:
    from analysis.selectors.analysis import AnalysisError

    judge_everything(enhanced_study)
    ids = list(
        Summary.objects.filter(document__dataset=enhanced_study.dataset)
        .order_by("document__external_id")
        .values_list("pk", flat=True)
    )
    assert ("qgqa", "aggregated") not in study_enhanced_scores(study=enhanced_study)
    scores = study_enhanced_scores(study=enhanced_study, crowd_model="wawa")
    # Three binary labels always have a majority, which the weighted majority keeps.
    qgqa = [scores[("qgqa", "aggregated")][i] for i in ids]
    assert qgqa == pytest.approx([expected("qgqa", p, "majority") for p in range(5)])
    entailment = [scores[("entailment", "aggregated")][i] for i in ids]
    for position, value in enumerate(entailment):
        labels = [ENTAILMENT[name][position] for name in ENTAILMENT]
        if len(set(labels)) < 3:  # a majority label: the model keeps it
            assert value == pytest.approx(expected("entailment", position, "majority")), position
        else:  # three different labels: the label of one annotator (the vote's median is none of theirs here)
            assert value in {NUMBERS[label] for label in labels}, position
    rows = study_enhanced_table(study=enhanced_study, human="Faithful", bootstrap=0, crowd_model="wawa")
    assert {"qgqa_enhanced_crowd_model", "entailment_enhanced_crowd_model"} <= {row.method for row in rows}
    with pytest.raises(AnalysisError, match="more than a page fits a crowd model"):
        study_enhanced_scores(study=enhanced_study, crowd_model="wawa", max_modelled_judgements=5)
    url = reverse("study_analysis", args=[enhanced_study.pk])
    page = client_for(rita).get(url, {"crowd_model": "wawa"}).content.decode()
    assert "qgqa_enhanced_crowd_model" in page and '<option value="wawa" selected>' in page
    unknown = client_for(rita).get(url, {"crowd_model": "=cmd|x"})
    assert unknown.status_code == 200 and "qgqa_enhanced_crowd_model" not in unknown.content.decode()
