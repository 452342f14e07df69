"""List endpoints run a fixed number of queries, however many rows a page holds."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset, Summary
from studies.models import Judgement, Study
from tests.api.test_endpoints import agree

pytestmark = pytest.mark.django_db


def queries(client: APIClient, url: str, page_size: int) -> tuple[int, int]:
    """(queries run, rows returned) for one page."""
    with CaptureQueriesContext(connection) as context:
        answer = client.get(url, {"page_size": page_size})
    assert answer.status_code == 200
    return len(context.captured_queries), len(answer.json()["results"])


def test_it_keeps_the_summaries_query_count_flat(scored_dataset: Dataset, cast: Callable[[str], APIClient]) -> None:
    client = cast("rita")
    url = reverse("api_summaries", args=[scored_dataset.pk])
    few, one = queries(client, url, 1)
    many, rows = queries(client, url, 100)
    assert one == 1
    assert rows == Summary.objects.filter(document__dataset=scored_dataset).count() > 5
    assert many == few
    filtered = {"metric": "bertscore", "human": "Faithful", "sort": "-disagreement"}
    few, _ = queries(client, url + "?" + urlencode(filtered), 1)
    many, rows = queries(client, url + "?" + urlencode(filtered), 100)
    assert rows > 5
    assert many == few


def test_it_keeps_the_judgements_query_count_flat(bertscore_study: Study, cast: Callable[[str], APIClient]) -> None:
    agree(bertscore_study)
    client = cast("rita")
    url = reverse("api_study_judgements", args=[bertscore_study.pk])
    few, one = queries(client, url, 1)
    many, rows = queries(client, url, 100)
    assert one == 1
    assert rows == min(100, Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).count())
    assert rows > 20
    assert many == few


@pytest.mark.parametrize("name", ["api_study_items", "api_study_assignments"])
def test_it_keeps_the_study_lists_query_count_flat(
    name: str, bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    client = cast("rita")
    url = reverse(name, args=[bertscore_study.pk])
    few, _ = queries(client, url, 1)
    many, rows = queries(client, url, 100)
    assert rows > 5
    assert many == few


def test_it_keeps_the_annotators_queue_query_count_flat(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    client = cast("alice")
    few, _ = queries(client, reverse("api_assignments"), 1)
    many, rows = queries(client, reverse("api_assignments"), 100)
    assert rows > 3
    assert many == few
