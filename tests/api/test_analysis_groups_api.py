"""Issue 15 through the API: agreement per group and metrics as raters on the agreement endpoints,
document-level correlation, balanced accuracy on binary labels; the same figures as the commands, and 400s
that name what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset
from tests.analysis.test_analysis_commands import import_records, run_json
from tests.analysis.test_analysis_groups import A_LABELS, binary_records, document, labelled_summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny(tmp_path: Path) -> Dataset:
    scores = [0.9, 0.2, 0.1, None]
    records = [
        document(
            i,
            [
                labelled_summary(
                    "AB"[i % 2],
                    f"S {i}.",
                    labels,
                    meta={"batch": "first" if i < 2 else "second"},
                    metric_scores={"M": score} if score is not None else {},
                )
            ],
        )
        for i, (labels, score) in enumerate(zip(A_LABELS, scores, strict=True))
    ]
    import_records(tmp_path, records)
    return Dataset.objects.get(name="tiny")


def agreement(client: APIClient, dataset: Dataset, **query: Any) -> Any:
    return client.get(reverse("api_dataset_agreement", args=[dataset.pk]), {"task": "factuality", **query})


def test_it_answers_agreement_per_group_as_the_command_does(cast: Callable[[str], APIClient], tiny: Dataset) -> None:
    response = agreement(cast("rita"), tiny, coefficient="gwet", by="meta.batch")
    assert response.status_code == 200
    (task,) = response.json()
    command = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", "gwet", "--by", "meta.batch"
    )
    assert task["analysis"] == command
    assert [group["group"] for group in task["analysis"]["groups"]] == ["first", "second"]
    plain = agreement(cast("rita"), tiny).json()[0]
    assert plain["analysis"] is None  # nothing asked, nothing computed


def test_it_answers_metrics_as_raters_and_an_interval(cast: Callable[[str], APIClient], tiny: Dataset) -> None:
    response = agreement(cast("rita"), tiny, metric_rater="M", thresholds="0.5", bootstrap=50)
    assert response.status_code == 200
    analysis = response.json()[0]["analysis"]
    (row,) = analysis["metric_raters"]
    assert (row["metric"], row["n_items"], row["n_missing"]) == ("M", 3, 1)
    assert analysis["interval"]["n_resamples"] == 50


@pytest.mark.parametrize(
    ("query", "key", "message"),
    [
        ({"by": "meta.nothing"}, "detail", "the meta key 'nothing'"),
        ({"metric_rater": "M", "thresholds": "0.7,0.3"}, "detail", "1 thresholds, got 2"),
        ({"metric_rater": "M", "thresholds": "nan"}, "thresholds", "finite"),
        ({"metric_rater": "M"}, "thresholds", "goes with thresholds"),
        ({"coefficient": "alpha_u"}, "detail", "alpha_u compares character spans"),
        ({"metric_rater": "M", "tuned_thresholds": "true"}, "detail", "no threshold could be tuned"),
    ],
)
def test_it_refuses_bad_agreement_requests_naming_them(
    cast: Callable[[str], APIClient], tiny: Dataset, query: dict[str, str], key: str, message: str
) -> None:
    response = agreement(cast("rita"), tiny, **query)
    assert response.status_code == 400
    assert message in str(response.json()[key])


def test_it_answers_document_level_correlations(cast: Callable[[str], APIClient], tmp_path: Path) -> None:
    records = [
        document(
            d,
            [
                {"system": f"S{s}", "text": f"S {d} {s}.", "metric_scores": {"m": x}, "human_scores": {"h": s + d}}
                for s, x in enumerate([0.1, 0.5, 0.3])
            ],
        )
        for d in range(3)
    ]
    import_records(tmp_path, records)
    dataset = Dataset.objects.get(name="tiny")
    response = cast("rita").get(
        reverse("api_correlations", args=[dataset.pk]), {"level": "document", "method": "spearman"}
    )
    assert response.status_code == 200
    (row,) = response.json()
    assert (row["level"], row["n"], row["r"], row["p"]) == ("document", 3, pytest.approx(0.5), None)
    assert row["excluded"] == {"fewer_than_3_summaries": 0, "constant_metric": 0, "constant_human": 0}


def test_it_answers_balanced_accuracy_and_names_a_missing_validation_split(
    cast: Callable[[str], APIClient], tmp_path: Path
) -> None:
    # Both systems (odd and even summaries) have both splits.
    import_records(tmp_path, binary_records(20, lambda i: "val" if i % 4 < 2 else "test"))
    dataset = Dataset.objects.get(name="tiny")
    url = reverse("api_meta_evaluation", args=[dataset.pk])
    query = {"protocol": "balanced_accuracy", "label_key": "label", "bootstrap": 100, "by": "system"}
    response = cast("rita").get(url, query)
    assert response.status_code == 200
    rows = response.json()
    command = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label", "--bootstrap",
        "100", "--by", "system",
    )  # fmt: skip
    assert [(r["group"], r["value"], r["threshold"]) for r in rows] == [
        (r["group"], r["value"], r["threshold"]) for r in command
    ]
    assert [r["group"] for r in rows] == ["overall", "A", "B"] and all(r["value"] is not None for r in rows)
    missing = cast("rita").get(url, {**query, "validation_split": "dev"})
    assert missing.status_code == 400 and "no summary is in the validation split 'dev'" in missing.json()["detail"]
    unlabelled = cast("rita").get(url, {"protocol": "balanced_accuracy"})
    assert unlabelled.status_code == 400 and "needs a binary label" in str(unlabelled.json()["label_key"])
    auc = cast("rita").get(url, {"protocol": "roc_auc", "human": "h", "human_threshold": "0.5"}).json()
    assert auc[0]["group"] == "overall" and auc[0]["n"] == 20
    nan = cast("rita").get(url, {"protocol": "roc_auc", "human": "h", "human_threshold": "nan"})
    assert nan.status_code == 400 and "human_threshold" in nan.json()


def test_it_takes_the_human_reference_of_metric_raters_from_a_crowd_model(
    cast: Callable[[str], APIClient], tiny: Dataset
) -> None:
    query = {"metric_rater": "M", "thresholds": "0.5"}
    response = agreement(cast("rita"), tiny, aggregation="mace", **query)
    assert response.status_code == 200
    (row,) = response.json()[0]["analysis"]["metric_raters"]
    assert (row["aggregation"], row["majority"]["rater"]) == ("mace", "mace")
    command = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "M", "--thresholds", "0.5",
        "--aggregation", "mace",
    )  # fmt: skip
    assert response.json()[0]["analysis"]["metric_raters"] == command["metric_raters"]
    refused = agreement(cast("rita"), tiny, aggregation="vote", **query)
    assert refused.status_code == 400 and "aggregation" in refused.json()


def test_it_refuses_a_crowd_model_over_more_judgements_than_a_request_may_take(
    cast: Callable[[str], APIClient], tiny: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.analysis.MAX_MODELLED_JUDGEMENTS", 8)  # tiny has 9 labels on scored summaries and more
    response = agreement(cast("rita"), tiny, aggregation="dawid_skene", metric_rater="M", thresholds="0.5")
    assert response.status_code == 400
    assert "takes too long for a request (at most 8)" in response.json()["detail"]
    assert agreement(cast("rita"), tiny, metric_rater="M", thresholds="0.5").status_code == 200  # the majority
