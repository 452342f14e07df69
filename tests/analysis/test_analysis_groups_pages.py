"""Issue 15 on the analysis pages: agreement per group and metrics as raters in the agreement section,
document-level correlation, balanced accuracy on binary labels; the figures of the commands, 400 with the
reason on bad requests, and another researcher's study still out of reach."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from corpus.models import Dataset
from studies.models import Study
from tests.analysis.test_analysis_commands import import_records, run_json
from tests.analysis.test_analysis_groups import A_LABELS, binary_records, document, labelled_summary
from tests.analysis.test_analysis_pages import judge
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny(tmp_path: Path) -> Dataset:
    scores = [0.9, 0.2, 0.1, None]
    records = [
        document(
            i,
            [labelled_summary("AB"[i % 2], f"S {i}.", labels, metric_scores={"M": score} if score is not None else {})],
        )
        for i, (labels, score) in enumerate(zip(A_LABELS, scores, strict=True))
    ]
    import_records(tmp_path, records)
    return Dataset.objects.get(name="tiny")


def test_it_shows_agreement_per_group_with_the_commands_figures(tiny: Dataset, rita: AbstractUser) -> None:
    url = reverse("dataset_analysis", args=[tiny.pk])
    response = client_for(rita).get(url, {"coefficient": "brennan_prediger", "by": "system"})
    assert response.status_code == 200
    (panel,) = response.context["agreements"]
    command = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", "brennan_prediger", "--by", "system"
    )
    assert panel.analysis == command
    html = response.content.decode()
    assert 'data-group="A"' in html and 'data-group="B"' in html and "Mean" in html
    assert f"{command['mean']:.3f}" in html


def test_it_shows_a_metric_as_a_rater_in_one_table(tiny: Dataset, rita: AbstractUser) -> None:
    url = reverse("dataset_analysis", args=[tiny.pk])
    response = client_for(rita).get(url, {"coefficient": "krippendorff", "metric_rater": "M", "thresholds": "0.5"})
    assert response.status_code == 200
    (rater,) = response.context["agreements"][0].analysis["metric_raters"]
    assert (rater["n_items"], rater["n_missing"]) == (3, 1)
    html = response.content.decode()
    assert 'data-metric="M"' in html and 'data-row="majority"' in html and "1 item without a score" in html


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"by": "meta.nothing"}, "the meta key &#x27;nothing&#x27;"),
        ({"metric_rater": "M", "thresholds": "0.7,0.3"}, "1 thresholds, got 2"),
        ({"metric_rater": "M", "thresholds": "nan"}, "thresholds must be a finite number"),
    ],
)
def test_it_answers_400_with_the_reason_on_bad_agreement_requests(
    tiny: Dataset, rita: AbstractUser, query: dict[str, str], message: str
) -> None:
    response = client_for(rita).get(reverse("dataset_analysis", args=[tiny.pk]), query)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_it_groups_a_studys_agreement_and_keeps_it_from_other_researchers(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser
) -> None:
    judge(bertscore_study, lambda user, index: "incorrect" if user == bob and index % 3 == 0 else "correct")
    url = reverse("study_analysis", args=[bertscore_study.pk])
    response = client_for(rita).get(url, {"coefficient": "percent", "by": "system"})
    assert response.status_code == 200
    out = io.StringIO()
    call_command(
        "agreement", "--study", str(bertscore_study.pk), "--coefficient", "percent", "--by", "system", "--json",
        stdout=out,
    )  # fmt: skip
    assert response.context["agreements"][0].analysis == json.loads(out.getvalue())
    assert client_for(ronald).get(url, {"by": "system"}).status_code == 404


def test_it_shows_document_level_correlations(tmp_path: Path, rita: AbstractUser) -> None:
    records = [
        document(
            d,
            [
                {"system": f"S{s}", "text": f"S {d} {s}.", "metric_scores": {"m": x}, "human_scores": {"h": s * d}}
                for s, x in enumerate([0.1, 0.5, 0.3])
            ],
        )
        for d in range(3)
    ]
    import_records(tmp_path, records)
    dataset = Dataset.objects.get(name="tiny")
    response = client_for(rita).get(reverse("dataset_analysis", args=[dataset.pk]), {"level": "document"})
    assert response.status_code == 200
    (row,) = response.context["correlations"]
    # Document 0 has constant human scores (all 0): left out, and said so.
    assert (row["level"], row["n"], row["excluded"]["constant_human"]) == ("document", 2, 1)
    assert "constant_human 1" in response.content.decode()


def test_it_shows_balanced_accuracy_and_names_a_missing_validation_split(tmp_path: Path, rita: AbstractUser) -> None:
    import_records(tmp_path, binary_records(20, lambda i: "val" if i % 4 < 2 else "test"))
    dataset = Dataset.objects.get(name="tiny")
    url = reverse("dataset_analysis", args=[dataset.pk])
    response = client_for(rita).get(url, {"label_key": "label", "binary_by": "system"})
    assert response.status_code == 200
    rows = response.context["binary"]
    assert [(row["group"], row["tuning"]) for row in rows] == [("overall", "split"), ("A", "split"), ("B", "split")]
    assert rows[0]["auc"]["protocol"] == "roc_auc" and rows[0]["auc"]["n"] == 20
    assert 'data-group="overall"' in response.content.decode()
    missing = client_for(rita).get(url, {"label_key": "label", "split_key": "fold"})
    assert missing.status_code == 200 and missing.context["binary"][0]["tuning"] == "cross_validation"
    import_records(tmp_path, binary_records(10, lambda i: "test"), name="only-test")
    only_test = reverse("dataset_analysis", args=[Dataset.objects.get(name="only-test").pk])
    refused = client_for(rita).get(only_test, {"binary_human": "h", "human_threshold": "0.5"})
    assert refused.status_code == 400
    assert "no summary is in the validation split &#x27;val&#x27; (splits present: test)" in refused.content.decode()
    no_threshold = client_for(rita).get(url, {"binary_human": "h"})
    assert no_threshold.status_code == 400 and "a human score and a threshold" in no_threshold.content.decode()
