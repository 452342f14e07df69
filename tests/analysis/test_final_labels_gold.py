"""Final labels as the gold (issue 16, point 1): the human-enhanced scores, the metric-as-rater reference, the
judgement and per-summary exports."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from analysis.selectors.analysis import study_enhanced_scores, study_enhanced_table
from analysis.selectors.exports import EXPORT_FIELDS
from corpus.models import Summary
from review.services.adjudication import final_label_adjudicate, study_final_labels_compute
from studies.models import Assignment, FinalLabel, Study, StudyItem, StudyTask
from studies.services.studies import assignment_skip, assignment_submit
from tests.analysis.test_enhanced import ENTAILMENT, NUMBERS, enhanced_study, judge_everything  # noqa: F401
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def csv_rows(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def entailment_item(study: Study, position: int) -> StudyItem:
    return StudyItem.objects.get(study_task__study=study, study_task__task="entailment", position=position)


def test_it_scores_the_enhanced_metrics_from_the_final_labels(enhanced_study: Study, rita: AbstractUser) -> None:  # noqa: F811
    judge_everything(enhanced_study)
    assert ("entailment", "final") not in study_enhanced_scores(study=enhanced_study)
    study_final_labels_compute(study=enhanced_study)
    # Position 2: none of the three agree (some, most, few): unresolved until rita decides.
    tied = entailment_item(enhanced_study, 2)
    row = FinalLabel.objects.get(item=tied, unit_index=0)
    assert (row.status, row.label) == (FinalLabel.Status.UNRESOLVED, "")
    ids = list(
        Summary.objects.filter(document__dataset=enhanced_study.dataset)
        .order_by("document__external_id")
        .values_list("pk", flat=True)
    )
    scores = study_enhanced_scores(study=enhanced_study)[("entailment", "final")]
    assert scores.get(ids[2]) is None
    assert scores[ids[0]] == NUMBERS["none"]  # alice and carol: none
    final_label_adjudicate(user=rita, item_id=tied.pk, unit_index=0, version=row.version, label="all")
    scores = study_enhanced_scores(study=enhanced_study)[("entailment", "final")]
    assert scores[ids[2]] == NUMBERS["all"]  # the adjudicator's label, none of the annotators'
    table = study_enhanced_table(study=enhanced_study, human="Faithful", bootstrap=0)
    assert "entailment_enhanced_final" in [r.method for r in table]
    exported = csv_rows(client_for(rita).get(reverse("study_summaries_export", args=[enhanced_study.pk, "csv"])))
    by_document = {r["document"]: r for r in exported}
    assert float(by_document["d2"]["enhanced:entailment:final"]) == NUMBERS["all"]
    assert set(ENTAILMENT) == {"alice", "bob", "carol"}
    page = client_for(rita).get(reverse("study_analysis", args=[enhanced_study.pk]))
    assert 'data-method="entailment_enhanced_final"' in page.content.decode()


def test_it_compares_a_metric_with_the_final_labels(enhanced_study: Study, rita: AbstractUser) -> None:  # noqa: F811
    judge_everything(enhanced_study)
    url = reverse("study_analysis", args=[enhanced_study.pk])
    query = {"coefficient": "krippendorff", "metric_rater": "entailment", "thresholds": "0.2,0.4,0.6,0.8"}
    client = client_for(rita)

    def entailment_panel(params: dict[str, str]) -> Any:
        # The page answers 400 as a whole: the QGQA task has several units per summary (its panel says so).
        panels = {p.overview.study_task.task: p for p in client.get(url, params).context["agreements"]}
        assert "several units per summary" in panels["qgqa"].analysis_error
        return panels["entailment"]

    missing = entailment_panel({**query, "reference": "final"})
    assert "no final labels yet" in missing.analysis_error
    study_final_labels_compute(study=enhanced_study)
    (by_majority,) = entailment_panel(query).analysis["metric_raters"]
    (rater,) = entailment_panel({**query, "reference": "final"}).analysis["metric_raters"]
    assert rater["aggregation"] == "final" and rater["majority"]["rater"] == "final"
    # The majority leaves out position 2 (a three-way tie), and so do the final labels until it is decided.
    assert rater["majority"]["n_items"] == by_majority["majority"]["n_items"] == 4
    tied = entailment_item(enhanced_study, 2)
    final_label_adjudicate(user=rita, item_id=tied.pk, unit_index=0, version=1, label="some")
    (rater,) = entailment_panel({**query, "reference": "final"}).analysis["metric_raters"]
    assert rater["majority"]["n_items"] == 5


def test_it_exports_each_judgements_final_label(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    assignments = list(Assignment.objects.filter(item__study_task__study=bertscore_study).order_by("item_id", "pk"))
    first = assignments[0].item
    for assignment in assignments:
        if assignment.item_id == first.pk and assignment.annotator == bob:
            labels = {u.index: "incorrect" for u in units_of(assignment)}
        else:
            labels = {u.index: "correct" for u in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)
    study_final_labels_compute(study=bertscore_study)
    unit = units_of(assignments[0])[0]
    final_label_adjudicate(user=rita, item_id=first.pk, unit_index=unit.index, version=1, label="dont_know")
    rows = csv_rows(client_for(rita).get(reverse("study_export", args=[bertscore_study.pk, "csv"])))
    assert {"final_label", "final_status", "final_method", "final_by"} <= set(rows[0]) == set(EXPORT_FIELDS)
    decided = [r for r in rows if r["summary_id"] == str(first.summary_id) and r["unit_index"] == str(unit.index)]
    assert len(decided) == 2 and {r["label"] for r in decided} == {"correct", "incorrect"}
    assert {(r["final_label"], r["final_status"], r["final_by"]) for r in decided} == {
        ("dont_know", "adjudicated", "rita")
    }
    others = [r for r in rows if r["summary_id"] != str(first.summary_id)]
    assert others and {(r["final_label"], r["final_status"]) for r in others} == {("correct", "unanimous")}
    tied = [r for r in rows if r["summary_id"] == str(first.summary_id) and r["unit_index"] != str(unit.index)]
    assert tied and {(r["final_label"], r["final_status"]) for r in tied} == {("", "unresolved")}
    assert StudyTask.objects.filter(study=bertscore_study).count() == 1


def test_it_leaves_the_final_columns_of_a_cannot_judge_row_empty(
    scored_dataset: Any, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    from studies.services.studies import StudySpec, study_create

    study = study_create(
        spec=StudySpec(name="f", dataset=scored_dataset, tasks=["factuality"], annotators=[alice, bob],
                       annotators_per_item=1, created_by=rita)
    ).study  # fmt: skip
    mine = Assignment.objects.filter(item__study_task__study=study, annotator=alice).order_by("pk")
    assignment_submit(assignment=mine[0], user=alice, labels={0: "yes"})
    assignment_skip(assignment_id=mine[1].pk, user=alice, reason="not_english")
    study_final_labels_compute(study=study)
    rows = csv_rows(client_for(rita).get(reverse("study_export", args=[study.pk, "csv"])))
    judged = [r for r in rows if r["label"]]
    skipped = [r for r in rows if r["cannot_judge"]]
    assert [(r["final_label"], r["final_status"]) for r in judged] == [("yes", "unanimous")]
    assert skipped and all(r["final_label"] == r["final_status"] == "" for r in skipped)
