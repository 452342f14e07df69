"""Final labels as the gold of correlations and meta-evaluation (issue 16, point 1): a study's judgements as
the human side, by the majority of its annotators or by its final labels, chosen per analysis."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse
from scipy import stats as scipy_stats

from analysis.selectors.analysis import dataset_correlations, human_side
from analysis.selectors.analysis_groups import binary_evaluation
from corpus.models import MetricScore
from review.services.adjudication import final_label_adjudicate, study_final_labels_compute
from studies.models import Assignment, FinalLabel, Study, StudyItem
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def factual_study(small_dataset: Any, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: Any) -> Study:
    """Factuality over every summary, k = 3; the metric M rises with the items' order, and the annotators'
    majority says "yes" on the upper half. rita then adjudicates the two lowest items "yes" and the top one
    "no", against the majority, and leaves one unresolved."""
    study = study_create(
        spec=StudySpec(
            name="factual",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study
    items = list(StudyItem.objects.filter(study_task__study=study).order_by("summary_id"))
    assert len(items) >= 5
    for position, item in enumerate(items):
        MetricScore.objects.create(summary=item.summary, name="M", value=float(position))
        majority = "yes" if position >= len(items) // 2 else "no"
        for user, label in ((alice, majority), (bob, majority), (carol, "no" if majority == "yes" else "yes")):
            assignment = Assignment.objects.get(item=item, annotator=user)
            assignment_submit(assignment=assignment, user=user, labels={0: label})
    study_final_labels_compute(study=study)
    for item, decision in ((items[0], "yes"), (items[1], "yes"), (items[-1], "no")):
        row = FinalLabel.objects.get(item=item, unit_index=0)
        final_label_adjudicate(user=rita, item_id=item.pk, unit_index=0, version=row.version, label=decision)
    row = FinalLabel.objects.get(item=items[2], unit_index=0)
    final_label_adjudicate(user=rita, item_id=items[2].pk, unit_index=0, version=row.version, accept="unresolved")
    return study


def name_of(study: Study) -> str:
    return f"study:{study.pk}:factuality"


def test_it_correlates_with_the_final_labels_when_asked_and_counts_what_it_left_out(
    factual_study: Study, rita: AbstractUser
) -> None:
    dataset, name = factual_study.dataset, name_of(factual_study)
    by_gold = {
        gold: dataset_correlations(dataset=dataset, human=name, metrics=["M"], bootstrap=0, gold=gold, user=rita)[0]
        for gold in ("majority", "final")
    }
    majority, final = (
        human_side(dataset=dataset, name=name, gold="majority", user=rita),
        human_side(dataset=dataset, name=name, gold="final", user=rita),
    )
    assert majority.values != final.values and len(final.values) == len(majority.values) - 1
    assert (by_gold["majority"]["n_left_out"], by_gold["final"]["n_left_out"]) == (0, 1)
    assert by_gold["final"]["gold"] == "final" and by_gold["final"]["n_units"] == len(majority.values)
    # Each figure is Pearson's r of the metric against that gold, as scipy computes it.
    metric = dict(MetricScore.objects.filter(name="M").values_list("summary_id", "value"))
    for gold, side in (("majority", majority), ("final", final)):
        ids = sorted(side.values)
        expected = scipy_stats.pearsonr([metric[i] for i in ids], [side.values[i] for i in ids]).statistic
        assert by_gold[gold]["r"] == pytest.approx(expected)
    assert by_gold["majority"]["r"] != pytest.approx(by_gold["final"]["r"])


def test_it_takes_binary_labels_from_the_chosen_gold(factual_study: Study, rita: AbstractUser) -> None:
    dataset, name = factual_study.dataset, name_of(factual_study)
    auc = {
        gold: binary_evaluation(
            dataset=dataset, protocol="roc_auc", metrics=["M"], human=name, human_threshold=0.5, gold=gold, user=rita
        )[0]
        for gold in ("majority", "final")
    }
    assert auc["majority"]["value"] == pytest.approx(100.0)  # the majority says yes exactly on the upper half
    assert auc["final"]["value"] < auc["majority"]["value"] and auc["final"]["n_left_out"] == 1


def test_it_offers_the_gold_on_the_page_and_in_the_api_and_hides_other_researchers_studies(
    factual_study: Study, rita: AbstractUser, ronald: AbstractUser
) -> None:
    dataset, name = factual_study.dataset, name_of(factual_study)
    client = client_for(rita)
    api = reverse("api_correlations", args=[dataset.pk])
    majority = client.get(api, {"human": name, "metrics": "M", "bootstrap": 0}).json()[0]
    final = client.get(api, {"human": name, "metrics": "M", "bootstrap": 0, "gold": "final"}).json()[0]
    assert (majority["gold"], final["gold"], final["n_left_out"]) == ("majority", "final", 1)
    assert majority["r"] != pytest.approx(final["r"])
    assert client.get(api, {"human": name, "gold": "median"}).status_code == 400
    meta = client.get(
        reverse("api_meta_evaluation", args=[dataset.pk]),
        {"human": name, "human_threshold": 0.5, "gold": "final", "metrics": "M"},
    ).json()[0]
    assert meta["gold"] == "final" and meta["n_left_out"] == 1
    page = client.get(reverse("dataset_analysis", args=[dataset.pk]), {"human": name, "gold": "final", "metric": "M"})
    text = page.content.decode()
    assert page.status_code == 200 and "final labels (adjudicated gold)" in text
    assert "1 of " in text and "have no final label" in text
    # Another researcher's study is no human score for ronald: not offered, refused by name.
    other = client_for(ronald)
    assert name not in other.get(reverse("dataset_analysis", args=[dataset.pk])).content.decode()
    assert other.get(api, {"human": name, "metrics": "M"}).status_code == 400
    refused = other.get(
        reverse("api_meta_evaluation", args=[dataset.pk]), {"human": name, "human_threshold": 0.5, "metrics": "M"}
    )
    assert refused.status_code == 400 and "that you can read" in refused.content.decode()


def test_it_takes_the_gold_on_the_command_line(factual_study: Study) -> None:
    out = io.StringIO()
    name = name_of(factual_study)
    options = {"metric": ["M"], "method": ["pearson"], "bootstrap": 0, "gold": "final"}
    call_command("correlate", dataset="small", human=name, stdout=out, **options)
    assert "gold final, 1 of " in out.getvalue()
