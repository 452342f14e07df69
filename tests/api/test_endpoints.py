"""Each capability over the API does what its command or page does: import, score, study, judge, analyse, export."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Dataset, Summary
from scoring.models import Explanation
from studies.models import Assignment, Judgement, Study
from studies.services.studies import assignment_submit
from tests.conftest import DATA, client_for, units_of

pytestmark = pytest.mark.django_db


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/x-ndjson")


def test_it_filters_and_sorts_summaries_like_the_browse_page(
    small_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    url = reverse("api_summaries", args=[small_dataset.pk])
    everything = cast("rita").get(url).json()
    assert everything["count"] == Summary.objects.filter(document__dataset=small_dataset).count()
    assert {row["gap"] for row in everything["results"]} == {None}
    query = {"metric": "R1", "human": "Faithful", "sort": "-gap", "gap_min": "-1"}
    rows = cast("rita").get(url, query).json()["results"]
    scored = Summary.objects.filter(
        document__dataset=small_dataset, metric_scores__name="R1", human_scores__name="Faithful"
    )
    assert {row["id"] for row in rows} == set(scored.values_list("pk", flat=True))
    assert [row["gap"] for row in rows] == sorted((row["gap"] for row in rows), reverse=True)
    for row in rows:
        assert row["gap"] == pytest.approx(row["metric_scores"]["R1"] - row["human_scores"]["Faithful"])
        assert (row["metric_value"], row["human_value"]) == (
            row["metric_scores"]["R1"],
            row["human_scores"]["Faithful"],
        )
    references = cast("rita").get(url, {"reference": "true"}).json()["results"]
    assert references and all(row["is_reference"] for row in references)


def test_it_imports_a_file_like_the_command(cast: Callable[[str], APIClient], import_worker: Callable[[], Any]) -> None:
    with import_worker():
        answer = cast("rita").post(
            reverse("api_datasets"),
            {"file": upload("small.jsonl", (DATA / "small.jsonl").read_text()), "format": "jsonl", "name": "uploaded"},
        )
    assert answer.status_code == 202, answer.json()
    job = cast("rita").get(answer.json()["url"]).json()
    assert job["status"] == "done"
    dataset = cast("rita").get(reverse("api_dataset", args=[job["dataset"]])).json()
    assert dataset["name"] == "uploaded"
    assert dataset["n_documents"] == Dataset.objects.get(name="uploaded").documents.count() > 0
    assert f"summaries: {dataset['n_summaries']} new, 0 updated" in job["report"]
    assert "dataset 'uploaded'" in job["report"]


def test_it_names_file_line_and_field_of_a_bad_import_and_writes_nothing(
    cast: Callable[[str], APIClient], import_worker: Callable[[], Any]
) -> None:
    good = json.dumps({"id": "d1", "text": "A text.", "summaries": [{"system": "s", "text": "A."}]})
    bad = json.dumps({"id": "d2", "text": "A text.", "summaries": [{"system": "s", "text": 5}]})
    with import_worker():
        answer = cast("rita").post(
            reverse("api_datasets"),
            {"file": upload("mine.jsonl", f"{good}\n{bad}\n"), "format": "jsonl", "name": "bad"},
        )
    assert answer.status_code == 202
    job = cast("rita").get(answer.json()["url"]).json()
    assert job["status"] == "failed"
    [error] = job["errors"]
    assert (error["file"], error["line"]) == ("mine.jsonl", 2)
    assert "text" in error["field"]
    assert error["message"].startswith("mine.jsonl, line 2")
    assert not Dataset.objects.filter(name="bad").exists()


def test_it_refuses_an_unknown_import_format_naming_the_field(cast: Callable[[str], APIClient]) -> None:
    answer = cast("rita").post(reverse("api_datasets"), {"file": upload("a.txt", "x"), "format": "nope", "name": "n"})
    assert answer.status_code == 400
    assert "format" in answer.json()


def test_it_scores_a_small_dataset_in_the_request_and_skips_finished_work(
    small_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    url = reverse("api_scoring", args=[small_dataset.pk])
    first = cast("rita").post(url, {"metrics": ["entities"], "mode": "sync"}, format="json")
    assert first.status_code == 200, first.json()
    (report,) = first.json()
    total = Summary.objects.filter(document__dataset=small_dataset).count()
    assert (report["metric"], report["total"], report["computed"] + report["failed"]) == ("entities", total, total)
    assert Explanation.objects.filter(metric="entities", summary__document__dataset=small_dataset).count() == total
    (again,) = cast("rita").post(url, {"metrics": ["entities"]}, format="json").json()
    assert (again["already_done"], again["computed"]) == (total, 0)


def test_it_sends_large_datasets_to_the_workers(
    small_dataset: Dataset, cast: Callable[[str], APIClient], settings: object
) -> None:
    settings.API_SYNC_SCORING_MAX_SUMMARIES = 1  # type: ignore[attr-defined]
    answer = cast("rita").post(
        reverse("api_scoring", args=[small_dataset.pk]), {"metrics": ["entities"]}, format="json"
    )
    assert answer.status_code == 400
    assert "enqueue" in answer.json()["mode"]
    assert not Explanation.objects.exists()


def test_it_answers_503_when_the_broker_is_down(
    small_dataset: Dataset, cast: Callable[[str], APIClient], unreachable_broker: str
) -> None:
    answer = cast("rita").post(
        reverse("api_scoring", args=[small_dataset.pk]), {"metrics": ["entities"], "mode": "enqueue"}, format="json"
    )
    assert answer.status_code == 503
    assert "broker" in answer.json()["detail"]


def test_it_creates_a_study_with_the_options_of_the_web_form(
    scored_dataset: Dataset, cast: Callable[[str], APIClient], alice: object, bob: object
) -> None:
    body = {
        "name": "API study",
        "dataset": scored_dataset.pk,
        "tasks": ["bertscore", "factuality"],
        "annotators": ["alice", "bob"],
        "annotators_per_item": 2,
        "selection_mode": "random",
        "sample_size": 2,
        "seed": 3,
        "reclaim_after_hours": 12,
        "guidelines": {"bertscore": "Judge every word."},
    }
    answer = cast("rita").post(reverse("api_studies"), body, format="json")
    assert answer.status_code == 201, answer.json()
    created = answer.json()
    study = Study.objects.get(pk=created["study"]["id"])
    assert (created["items"], created["assignments"]) == (4, 8)
    assert study.selection["mode"] == "random" and study.selection["size"] == 2 and study.reclaim_after_hours == 12
    assert study.tasks.get(task="bertscore").guidelines == "Judge every word."
    assert list(study.researchers.values_list("username", flat=True)) == ["rita"]
    detail = cast("rita").get(reverse("api_study", args=[study.pk])).json()
    assert {task["task"] for task in detail["tasks"]} == {"bertscore", "factuality"}
    assert {row["username"] for row in detail["progress"]} == {"alice", "bob"}


def test_it_adds_annotators_to_a_running_study_and_says_what_they_got(
    small_dataset: Dataset, cast: Callable[[str], APIClient], alice: object, bob: object, carol: object
) -> None:
    created = cast("rita").post(
        reverse("api_studies"),
        {"name": "join", "dataset": small_dataset.pk, "tasks": ["factuality"], "annotators": ["alice"]}
        | {"annotators_per_item": 1},
        format="json",
    )
    assert created.status_code == 201, created.json()
    study_id, items = created.json()["study"]["id"], created.json()["items"]
    url = reverse("api_study_annotators", args=[study_id])
    answer = cast("rita").post(url, {"annotators": ["bob"]}, format="json").json()
    assert answer == {
        "assigned": 0,
        "extended": 0,
        "still_short": 0,
        "message": "No item is short of k=1; tick 'extend' to give bob items beyond k.",
    }
    answer = cast("rita").post(url, {"annotators": ["carol"], "extend": True}, format="json").json()
    assert (answer["assigned"], answer["extended"]) == (0, items)
    assert Assignment.objects.filter(annotator__username="carol", item__study_task__study_id=study_id).count() == items
    refused = cast("rita").post(url, {"annotators": ["bob", "nobody"]}, format="json")
    assert refused.status_code == 400 and "bob, nobody" in refused.json()["annotators"][0]
    assert cast("ronald").post(url, {"annotators": ["bob"]}, format="json").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"annotators": ["alice", "nobody"]}, "annotators"),
        ({"annotators_per_item": 3}, "annotators"),
        ({"selection_mode": "random"}, "sample_size"),
        ({"selection_mode": "controversial", "sample_size": 2}, "human_score"),
        ({"tasks": ["nope"]}, "tasks"),
        ({"dataset": 10**9}, "detail"),
    ],
)
def test_it_refuses_a_bad_study_naming_the_field(
    change: dict[str, object],
    field: str,
    scored_dataset: Dataset,
    cast: Callable[[str], APIClient],
    alice: object,
    bob: object,
) -> None:
    body = {"name": "x", "dataset": scored_dataset.pk, "tasks": ["bertscore"], "annotators": ["alice", "bob"]}
    body["annotators_per_item"] = 2
    answer = cast("rita").post(reverse("api_studies"), {**body, **change}, format="json")
    assert answer.status_code in (400, 404)
    assert field in answer.json()
    assert not Study.objects.filter(name="x").exists()


def test_it_takes_an_annotators_submission_with_the_web_views_checks(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    assignment = Assignment.objects.filter(annotator__username="alice").order_by("position").first()
    units = units_of(assignment)
    url = reverse("api_assignment_submit", args=[assignment.pk])
    shown = cast("alice").get(reverse("api_assignment", args=[assignment.pk])).json()
    assert [unit["index"] for unit in shown["item_state"]["units"]] == [unit.index for unit in units]
    malformed = cast("alice").post(url, {"labels": ["correct"]}, format="json")
    assert malformed.status_code == 400
    assert list(malformed.json()) == ["labels"]  # the input serializer names the field
    incomplete = cast("alice").post(url, {"labels": {}}, format="json")
    assert incomplete.status_code == 400 and incomplete.json()["errors"]
    labels = {str(unit.index): "correct" for unit in units}
    done = cast("alice").post(url, {"labels": labels, "comment": "ok", "seconds": 12}, format="json")
    assert done.status_code == 200, done.json()
    assert done.json()["status"] == "submitted"
    assert Judgement.objects.filter(assignment=assignment).count() == len(units)
    saved = cast("alice").get(reverse("api_assignment", args=[assignment.pk])).json()["saved"]
    assert saved["labels"] == labels


def agree(study: Study) -> None:
    for assignment in Assignment.objects.filter(item__study_task__study=study):
        labels = {unit.index: "correct" for unit in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)


def test_it_reports_the_same_agreement_as_the_analysis_page(
    bertscore_study: Study, cast: Callable[[str], APIClient], rita: object
) -> None:
    agree(bertscore_study)
    (task,) = cast("rita").get(reverse("api_study_agreement", args=[bertscore_study.pk])).json()
    page = client_for(rita).get(reverse("study_analysis", args=[bertscore_study.pk]))
    (overview,) = page.context["agreements"]
    assert task["task"] == "bertscore"
    assert [row["value"] for row in task["results"]] == [row["value"] for row in overview.results]
    assert task["results"][2]["coefficient"] == "percent" and task["results"][2]["value"] == 100.0
    assert {row["annotator"] for row in task["annotators"]} == {"alice", "bob"}


def test_it_correlates_metrics_with_a_human_score(scored_dataset: Dataset, cast: Callable[[str], APIClient]) -> None:
    url = reverse("api_correlations", args=[scored_dataset.pk])
    rows = cast("rita").get(url, {"human": "Faithful", "method": "pearson,spearman", "bootstrap": 0}).json()
    metrics = {row["metric"] for row in rows}
    assert "R1" in metrics
    assert sorted((row["metric"], row["method"]) for row in rows) == sorted(
        (metric, method) for metric in metrics for method in ("pearson", "spearman")
    )
    assert all(row["human"] == "Faithful" for row in rows)
    assert cast("rita").get(url, {"human": "Nope"}).json() == {"human": ["Unknown: Nope. Known: Faithful."]}


def test_it_reports_the_highlighter_and_the_imported_agreement(
    scored_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    rows = cast("rita").get(reverse("api_highlighter", args=[scored_dataset.pk])).json()
    assert rows and {"threshold", "precision", "recall", "f1"} <= set(rows[0])
    imported = cast("rita").get(reverse("api_dataset_agreement", args=[scored_dataset.pk])).json()
    assert {row["task"] for row in imported} == {"factuality", "hallucination_spans"}


def test_it_streams_the_same_exports_as_the_web_downloads(
    bertscore_study: Study, cast: Callable[[str], APIClient], rita: object
) -> None:
    agree(bertscore_study)
    pairs = [
        (
            reverse("api_study_judgements_export", args=[bertscore_study.pk, "csv"]),
            reverse("study_export", args=[bertscore_study.pk, "csv"]),
        ),
        (
            reverse("api_dataset_summaries_export", args=[bertscore_study.dataset_id, "jsonl"]),
            reverse("dataset_summaries_export", args=[bertscore_study.dataset_id, "jsonl"]),
        ),
    ]
    for api_url, web_url in pairs:
        api = cast("rita").get(api_url)
        web = client_for(rita).get(web_url)
        assert api.status_code == web.status_code == 200
        api_body, web_body = b"".join(api.streaming_content), b"".join(web.streaming_content)
        assert api_body == web_body and api_body
        assert api["Content-Disposition"] == web["Content-Disposition"]
    unknown = cast("rita").get(reverse("api_study_judgements_export", args=[bertscore_study.pk, "xml"]))
    assert unknown.status_code == 400


def test_it_searches_documents_by_id_or_title_like_the_documents_page(
    small_dataset: Dataset, cast: Callable[[str], APIClient]
) -> None:
    url = reverse("api_documents", args=[small_dataset.pk])
    rows = cast("rita").get(url, {"q": "bridge"}).json()["results"]
    assert [(row["external_id"], row["n_summaries"]) for row in rows] == [("bridge", 2)]
    assert cast("rita").get(url, {"q": "Football"}).json()["count"] == 1
    assert cast("rita").get(url).json()["count"] == small_dataset.documents.count()
