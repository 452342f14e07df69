"""Every list endpoint runs an exact number of queries, the same for a page of one row and a page of many.
A changed number is a decision: update it here with the reason in the commit."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset, Summary
from studies.models import Judgement, Study
from studies.services.studies import StudySpec, study_create
from tests.api.test_endpoints import agree

pytestmark = pytest.mark.django_db

DATASETS_QUERIES = 4
STUDIES_QUERIES = 4
DOCUMENTS_QUERIES = 5


def queries(client: APIClient, url: str, page_size: int) -> tuple[int, int]:
    """(queries run, rows returned) for one page."""
    with CaptureQueriesContext(connection) as context:
        answer = client.get(url, {"page_size": page_size})
    assert answer.status_code == 200
    return len(context.captured_queries), len(answer.json()["results"])


def test_it_keeps_the_summaries_query_count_flat(scored_dataset: Dataset, cast: Callable[[str], APIClient]) -> None:
    client = cast("rita")
    url = reverse("api_summaries", args=[scored_dataset.pk])
    assert queries(client, url, 1) == (7, 1)
    many, rows = queries(client, url, 100)
    assert rows == Summary.objects.filter(document__dataset=scored_dataset).count() > 5
    assert many == 7
    filtered = {"metric": "bertscore", "human": "Faithful", "sort": "-disagreement"}
    assert queries(client, url + "?" + urlencode(filtered), 1)[0] == 7
    many, rows = queries(client, url + "?" + urlencode(filtered), 100)
    assert rows > 5
    assert many == 7


def test_it_keeps_the_judgements_query_count_flat(bertscore_study: Study, cast: Callable[[str], APIClient]) -> None:
    agree(bertscore_study)
    client = cast("rita")
    url = reverse("api_study_judgements", args=[bertscore_study.pk])
    assert queries(client, url, 1) == (5, 1)
    many, rows = queries(client, url, 100)
    assert rows == min(100, Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).count())
    assert rows > 20
    assert many == 5


@pytest.mark.parametrize("name", ["api_study_items", "api_study_assignments"])
def test_it_keeps_the_study_lists_query_count_flat(
    name: str, bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    client = cast("rita")
    url = reverse(name, args=[bertscore_study.pk])
    assert queries(client, url, 1) == (5, 1)
    many, rows = queries(client, url, 100)
    assert rows > 5
    assert many == 5


def test_it_keeps_the_annotators_queue_query_count_flat(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    client = cast("alice")
    assert queries(client, reverse("api_assignments"), 1) == (3, 1)
    many, rows = queries(client, reverse("api_assignments"), 100)
    assert rows > 3
    assert many == 3


def test_it_runs_an_exact_number_of_queries_for_the_datasets_studies_and_documents(
    bertscore_study: Study, scored_dataset: Dataset, alice: AbstractUser, cast: Callable[[str], APIClient]
) -> None:
    client = cast("rita")
    study_create(
        spec=StudySpec(
            name="second",
            dataset=bertscore_study.dataset,
            tasks=["factuality"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=bertscore_study.created_by,
        )
    )
    Dataset.objects.create(name="second")
    for url, exact in (
        (reverse("api_datasets"), DATASETS_QUERIES),
        (reverse("api_studies"), STUDIES_QUERIES),
        (reverse("api_documents", args=[scored_dataset.pk]), DOCUMENTS_QUERIES),
    ):
        assert queries(client, url, 1) == (exact, 1), url
        many, rows = queries(client, url, 100)
        assert rows > 1, url
        assert many == exact, url
