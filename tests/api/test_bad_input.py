"""Bad input answers 4xx with a reason: unknown ids, malformed parameters, oversized pages, no credentials."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset
from studies.models import Study

pytestmark = pytest.mark.django_db

MISSING = 10**9


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("api_dataset", [MISSING]),
        ("api_documents", [MISSING]),
        ("api_summaries", [MISSING]),
        ("api_document", [MISSING]),
        ("api_summary", [MISSING]),
        ("api_explanations", [MISSING]),
        ("api_correlations", [MISSING]),
        ("api_meta_evaluation", [MISSING]),
        ("api_highlighter", [MISSING]),
        ("api_dataset_agreement", [MISSING]),
        ("api_dataset_summaries_export", [MISSING, "csv"]),
        ("api_dataset_judgements_export", [MISSING, "csv"]),
        ("api_study", [MISSING]),
        ("api_study_items", [MISSING]),
        ("api_study_assignments", [MISSING]),
        ("api_study_judgements", [MISSING]),
        ("api_study_agreement", [MISSING]),
        ("api_study_summaries_export", [MISSING, "csv"]),
        ("api_study_judgements_export", [MISSING, "csv"]),
        ("api_study_bundle", [MISSING]),
        ("api_assignment", [MISSING]),
    ],
)
def test_it_answers_404_for_unknown_ids(
    name: str, args: list[object], small_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    client = cast("alice") if name == "api_assignment" else cast("admin")
    answer = client.get(reverse(name, args=args))
    assert answer.status_code == 404
    assert "detail" in answer.json()


def test_it_answers_404_when_scoring_an_unknown_dataset(cast: Callable[[str], APIClient]) -> None:
    answer = cast("rita").post(reverse("api_scoring", args=[MISSING]), {"metrics": ["entities"]}, format="json")
    assert answer.status_code == 404


@pytest.mark.parametrize(
    ("name", "query", "parameter"),
    [
        ("api_correlations", {"method": "pearson,cosine"}, "method"),
        ("api_correlations", {"level": "sentence"}, "level"),
        ("api_correlations", {"bootstrap": "many"}, "bootstrap"),
        ("api_correlations", {"bootstrap": "1000000"}, "bootstrap"),
        ("api_correlations", {"metrics": "R1,nope"}, "metrics"),
        ("api_correlations", {"partial_by": "document"}, "partial_by"),
        ("api_meta_evaluation", {"protocol": "best"}, "protocol"),
        ("api_meta_evaluation", {"by_error_type": "perhaps"}, "by_error_type"),
        ("api_meta_evaluation", {"human": "Faithful", "human_threshold": "inf"}, "human_threshold"),
        ("api_meta_evaluation", {"label_key": "label", "folds": "1"}, "folds"),
        ("api_dataset_agreement", {"coefficient": "cohen"}, "coefficient"),
        ("api_dataset_agreement", {"weights": "cubic"}, "weights"),
        ("api_dataset_agreement", {"metric_rater": "R1", "thresholds": "0.5,nan"}, "thresholds"),
        ("api_dataset_agreement", {"limit": "-1"}, "limit"),
        ("api_dataset_agreement", {"dont_know_as_incorrect": "maybe"}, "dont_know_as_incorrect"),
        ("api_summaries", {"metric": "R1", "metric_min": "high"}, "metric_min"),
        ("api_summaries", {"human_max": "0.5"}, "human_min"),
        ("api_summaries", {"sort": "length"}, "sort"),
        ("api_summaries", {"metric": "nope"}, "metric"),
        ("api_summaries", {"human": "Faithful", "metric": "R1", "gap_min": "inf"}, "gap_min"),
        ("api_summaries", {"document": "first"}, "document"),
        ("api_summaries", {"reference": "perhaps"}, "reference"),
    ],
)
def test_it_answers_400_naming_a_malformed_parameter(
    name: str, query: dict[str, str], parameter: str, small_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    answer = cast("rita").get(reverse(name, args=[small_dataset.pk]), query)
    assert answer.status_code == 400
    assert parameter in answer.json()


def test_it_cuts_a_page_size_over_the_maximum_to_the_maximum(
    small_dataset: Dataset, cast: Callable[[str], APIClient], settings: object
) -> None:
    from api.common import Pagination

    total = small_dataset.documents.count()
    assert total == 3
    url = reverse("api_documents", args=[small_dataset.pk])
    original = Pagination.max_page_size
    Pagination.max_page_size = 2
    try:
        capped = cast("rita").get(url, {"page_size": 10**6}).json()
    finally:
        Pagination.max_page_size = original
    assert capped["count"] == 3
    assert len(capped["results"]) == 2
    assert capped["next"] is not None
    assert len(cast("rita").get(url, {"page_size": 1}).json()["results"]) == 1
    assert len(cast("rita").get(url, {"page_size": "lots"}).json()["results"]) == 3


def test_it_answers_401_without_or_with_a_wrong_token(small_dataset: Dataset) -> None:
    anonymous = APIClient().get(reverse("api_datasets"))
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == "Token"
    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert forged.get(reverse("api_datasets")).status_code == 401


def test_it_answers_403_to_an_annotator_token_on_researcher_endpoints(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    answer = cast("alice").get(reverse("api_study", args=[bertscore_study.pk]))
    assert answer.status_code == 403
    assert answer.json() == {"detail": "Researchers only."}


def test_it_accepts_the_browser_session_too(small_dataset: Dataset, rita: object) -> None:
    from tests.conftest import client_for

    answer = client_for(rita).get(reverse("api_datasets"), HTTP_ACCEPT="application/json")
    assert answer.status_code == 200
    assert [row["name"] for row in answer.json()["results"]] == ["small"]
