"""Browsing summaries: every filter and sort of issue 6 point 1, its bad input, and flat query counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.browse import browse_facets, summaries_browse
from common.validation import InputError
from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from scoring.models import Explanation
from tests.conftest import client_for, write_jsonl

pytestmark = pytest.mark.django_db


def browse(dataset: Dataset, query: str) -> list[Summary]:
    return list(summaries_browse(dataset=dataset, params=QueryDict(query), user=None))


def keys(summaries: list[Summary]) -> list[str]:
    return [f"{s.document.external_id}/{s.system}" for s in summaries]


@pytest.fixture
def scored(tmp_path: Path) -> Dataset:
    """Four documents, three systems; R1 and Faithful chosen so that filters and the gap pick known rows."""
    rows = [
        ("d1", "A", 0.9, 0.1, {}),
        ("d1", "B", 0.5, 0.5, {"error_type": "Entity"}),
        ("d2", "A", 0.2, 0.8, {}),
        ("d2", "C", 0.7, None, {}),
        ("d3", "B", None, 0.3, {"error_type": "Predicate"}),
        ("d4", "C", 0.4, 0.4, {}),
    ]
    documents: dict[str, dict[str, Any]] = {}
    for document, system, r1, faithful, meta in rows:
        summary: dict[str, Any] = {"system": system, "text": f"{system} wrote about {document}.", "meta": meta}
        summary["metric_scores"] = {"R1": r1} if r1 is not None else {}
        summary["human_scores"] = {"Faithful": faithful} if faithful is not None else {}
        if (document, system) == ("d1", "A"):
            summary["human_scores"]["EntE"] = 0.5
        if (document, system) == ("d2", "A"):
            summary["human_scores"]["EntE"] = 0.0
        documents.setdefault(document, {"id": document, "text": f"Document {document}.", "summaries": []})
        documents[document]["summaries"].append(summary)
    path = write_jsonl(tmp_path / "scored.jsonl", list(documents.values()))
    return dataset_import(name="scored", batch=parse("jsonl", path)).dataset


def test_it_filters_by_system_and_score_ranges(scored: Dataset) -> None:
    assert keys(browse(scored, "system=A&system=C")) == ["d1/A", "d2/A", "d2/C", "d4/C"]
    assert keys(browse(scored, "metric=R1&metric_min=0.45&metric_max=0.8")) == ["d1/B", "d2/C"]
    assert keys(browse(scored, "human=Faithful&human_max=0.3")) == ["d1/A", "d3/B"]


def test_it_computes_the_gap_and_sorts_by_it_with_missing_scores_last(scored: Dataset) -> None:
    rows = browse(scored, "metric=R1&human=Faithful&sort=-gap")
    assert keys(rows) == ["d1/A", "d1/B", "d4/C", "d2/A", "d2/C", "d3/B"]
    assert [round(s.gap, 6) if s.gap is not None else None for s in rows] == [0.8, 0.0, 0.0, -0.6, None, None]
    assert keys(browse(scored, "metric=R1&human=Faithful&gap_min=0.5")) == ["d1/A"]
    assert keys(browse(scored, "metric=R1&human=Faithful&gap_max=-0.5")) == ["d2/A"]


def test_it_filters_by_error_type_from_bump_edits_and_frank_categories(scored: Dataset) -> None:
    assert keys(browse(scored, "error_type=Entity")) == ["d1/B"]
    # FRANK's category scores: a summary has the error when some annotator saw it (share above 0).
    assert keys(browse(scored, "error_type=EntE")) == ["d1/A"]
    facets = browse_facets(dataset=scored, user=None)
    assert facets.error_types == ["EntE", "Entity", "Predicate"]
    assert facets.systems == [("A", 2), ("B", 2), ("C", 2)]


def test_it_reads_computed_scores_and_their_variants(scored_dataset: Dataset) -> None:
    rows = browse(scored_dataset, "metric=bertscore.f1&sort=-metric")
    explanations = dict(Explanation.objects.filter(metric="bertscore").values_list("summary_id", "scores"))
    f1 = [scores["f1"] for scores in explanations.values() if "f1" in scores]
    unscored = len(explanations) - len(f1)
    assert [s.metric_value for s in rows] == sorted(f1, reverse=True) + [None] * unscored
    headline = {s.pk: s.metric_value for s in browse(scored_dataset, "metric=bertscore")}
    assert headline == dict(Explanation.objects.filter(metric="bertscore").values_list("summary_id", "score"))


def test_it_measures_disagreement_over_labels_and_marked_spans(small_dataset: Dataset) -> None:
    rows = {f"{s.document.external_id}/{s.system}": s.disagreement for s in browse(small_dataset, "")}
    # w1 and w2 agree that the summary is not factual, but only w1 marked a span: one of two units contested.
    assert rows["oldest/ModelA"] == pytest.approx(0.5)
    assert rows["bridge/ModelA"] is None
    assert keys(browse(small_dataset, "disagreement_min=0.4")) == ["oldest/ModelA"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("metric=R1&metric_min=abc", "metric_min"),
        ("metric=R1&metric_max=nan", "metric_max"),
        ("metric=nope", "metric"),
        ("human=nope", "human"),
        ("metric_min=0.2", "metric_min"),
        ("gap_min=0.1&metric=R1", "gap_min"),
        ("sort=length", "sort"),
        ("sort=-gap&metric=R1", "sort"),
        ("document=x1", "document"),
        ("reference=maybe", "reference"),
        ("metric=R1&metric_min=0.9&metric_max=0.1", "metric_min"),
    ],
)
def test_it_names_the_malformed_parameter(scored: Dataset, query: str, parameter: str) -> None:
    with pytest.raises(InputError) as raised:
        browse(scored, query)
    assert raised.value.field == parameter


def test_it_answers_a_malformed_filter_on_the_page_with_400_naming_it(scored: Dataset, rita: AbstractUser) -> None:
    url = reverse("dataset_summaries", args=[scored.pk])
    response = client_for(rita).get(url, {"metric": "R1", "metric_min": "abc"})
    assert response.status_code == 400
    assert "<code>metric_min</code>" in response.content.decode()


def test_it_shows_browse_pages_to_researchers_only(
    scored: Dataset, rita: AbstractUser, alice: AbstractUser, client: Any
) -> None:
    for name in ("dataset_summaries", "dataset_documents"):
        url = reverse(name, args=[scored.pk])
        assert client_for(rita).get(url).status_code == 200
        assert client_for(alice).get(url).status_code == 403
        assert client.get(url).status_code == 302
        assert client_for(rita).get(reverse(name, args=[scored.pk + 1000])).status_code == 404


def test_it_lists_the_page_with_scores_and_pages_through(scored: Dataset, rita: AbstractUser) -> None:
    url = reverse("dataset_summaries", args=[scored.pk])
    response = client_for(rita).get(url, {"metric": "R1", "human": "Faithful", "sort": "-gap", "page_size": 2})
    page = response.context["page"]
    assert (page.paginator.count, page.paginator.per_page, page.number) == (6, 2, 1)
    assert keys(list(page.object_list)) == ["d1/A", "d1/B"]
    html = response.content.decode()
    assert "0.800" in html and 'rel="next"' in html
    first = page.object_list[0]
    assert f'href="{reverse("summary_inspect", args=[first.pk])}"' in html
    capped = client_for(rita).get(url, {"page_size": 100000})
    assert capped.context["page"].paginator.per_page == 500
    documents = client_for(rita).get(reverse("dataset_documents", args=[scored.pk]), {"q": "d2"})
    assert [d.external_id for d in documents.context["page"].object_list] == ["d2"]
    assert documents.context["page"].object_list[0].n_summaries == 2


def queries(client: Any, url: str, params: dict[str, Any]) -> int:
    client.get(url, params)  # fills the facet cache, which a page of either size then reads
    with CaptureQueriesContext(connection) as context:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(context.captured_queries)


def test_it_keeps_the_query_count_of_a_page_flat_as_the_page_grows(scored: Dataset, rita: AbstractUser) -> None:
    client = client_for(rita)
    url = reverse("dataset_summaries", args=[scored.pk])
    params = {"metric": "R1", "human": "Faithful", "sort": "-gap", "disagreement_min": "0"}
    assert queries(client, url, {**params, "page_size": 1}) == queries(client, url, {**params, "page_size": 6}) == 12
    documents = reverse("dataset_documents", args=[scored.pk])
    assert queries(client, documents, {"page_size": 1}) == queries(client, documents, {"page_size": 4}) == 6


def test_it_refreshes_the_cached_filter_choices_when_scores_are_added(scored: Dataset) -> None:
    from corpus.models import HumanScore

    assert "Fluent" not in browse_facets(dataset=scored, user=None).humans
    HumanScore.objects.create(summary=Summary.objects.filter(document__dataset=scored).first(), name="Fluent", value=1)
    assert "Fluent" in browse_facets(dataset=scored, user=None).humans
