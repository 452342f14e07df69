"""Researcher analysis pages, their downloads, permissions and query counts."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Dataset, Summary
from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.conftest import DATA, client_for, units_of, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def maynez_sample() -> Dataset:
    call_command(
        "import_dataset", str(DATA / "frank_xsum_sample" / "xsum_hallucination"), "--format", "maynez",
        "--name", "sample", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    return Dataset.objects.get(name="sample")


def judge(study: Study, label_for: Callable[[AbstractUser, int], str]) -> None:
    for assignment in Assignment.objects.filter(item__study_task__study=study).select_related("annotator"):
        labels = {u.index: label_for(assignment.annotator, u.index) for u in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)


def test_it_shows_correlations_plots_and_imported_agreement_of_a_dataset(
    maynez_sample: Dataset, rita: AbstractUser
) -> None:
    url = reverse("dataset_analysis", args=[maynez_sample.pk])
    response = client_for(rita).get(url, {"human": "Faithful", "method": "spearman", "metric": "Entailment"})
    assert response.status_code == 200
    rows = {row["metric"]: row for row in response.context["correlations"]}
    out = io.StringIO()
    call_command(
        "correlate", "--dataset", "sample", "--human", "Faithful", "--method", "spearman", "--bootstrap", "200",
        "--json", stdout=out,
    )  # fmt: skip
    for expected in json.loads(out.getvalue()):
        assert rows[expected["metric"]]["r"] == pytest.approx(expected["r"])
        assert rows[expected["metric"]]["ci_low"] == pytest.approx(expected["ci_low"])
    html = response.content.decode()
    scored = Summary.objects.filter(document__dataset=maynez_sample, human_scores__name="Faithful").count()
    assert html.count('<circle class="point"') == scored == 12
    assert html.count('<rect class="bar"') == 20
    tasks = [overview.study_task.task for overview in response.context["agreements"]]
    assert sorted(tasks) == ["factuality", "hallucination_spans"]
    assert "Krippendorff's \u03b1 (nominal)" in html and not re.search(r"\bnan\b", html, re.IGNORECASE)
    # The disagreement list links to each item's labels.
    first = response.context["agreements"][0].tables.items[0]
    item_page = client_for(rita).get(reverse("analysis_item", args=[first.item_id]))
    assert item_page.status_code == 200 and "wid_0" in item_page.content.decode()


def test_it_explains_undefined_agreement_on_the_page(tmp_path: Path, rita: AbstractUser) -> None:
    labels = [{"annotator": w, "task": "factuality", "label": "no"} for w in ("w1", "w2")]
    records = [
        {"id": f"d{i}", "text": "Text.", "summaries": [{"system": "M", "text": "Sum.", "labels": labels}]}
        for i in range(2)
    ]
    call_command(
        "import_dataset", str(write_jsonl(tmp_path / "one.jsonl", records)), "--format", "jsonl", "--name", "one",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    response = client_for(rita).get(reverse("dataset_analysis", args=[Dataset.objects.get(name="one").pk]))
    html = response.content.decode()
    assert response.status_code == 200 and not re.search(r"\bnan\b", html, re.IGNORECASE)
    assert "undefined: every judgement has the same label" in html
    assert "undefined: every value is &#x27;no&#x27;" in html
    assert "This dataset needs at least one human score and one metric score" in html


def test_it_shows_the_study_analysis_with_a_disagreement_list(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    judge(bertscore_study, lambda user, index: "incorrect" if user == bob and index % 3 == 0 else "correct")
    response = client_for(rita).get(reverse("study_analysis", args=[bertscore_study.pk]))
    assert response.status_code == 200
    overview = response.context["agreements"][0]
    fleiss = next(result for result in overview.results if result["coefficient"] == "fleiss")
    out = io.StringIO()
    call_command("agreement", "--study", str(bertscore_study.pk), "--json", stdout=out)
    assert fleiss["value"] == pytest.approx(json.loads(out.getvalue())["value"])
    annotators = {row.annotator: row for row in overview.tables.annotators}
    # Two raters who disagree have no majority: only the units they agree on are compared.
    agreed = fleiss["observed_agreement"] * fleiss["n_items"]
    assert annotators["alice"].n_compared == annotators["bob"].n_compared == pytest.approx(agreed)
    assert annotators["alice"].n_compared < annotators["alice"].n_judgements
    worst = overview.tables.items[0]
    assert worst.agreement.labels == {"alice": "correct", "bob": "incorrect"} and worst.agreement.majority is None
    html = response.content.decode()
    assert reverse("analysis_item", args=[worst.item_id]) in html
    item = client_for(rita).get(reverse("analysis_item", args=[worst.item_id])).content.decode()
    assert "incorrect" in item and "alice" in item and "bob" in item


def test_it_keeps_analyses_from_annotators_and_other_researchers(
    bertscore_study: Study, alice: AbstractUser, ronald: AbstractUser, rita: AbstractUser
) -> None:
    item = bertscore_study.tasks.get().items.first()
    assert client_for(alice).get(reverse("study_analysis", args=[bertscore_study.pk])).status_code == 403
    assert client_for(alice).get(reverse("datasets")).status_code == 403
    assert client_for(ronald).get(reverse("study_analysis", args=[bertscore_study.pk])).status_code == 404
    assert client_for(ronald).get(reverse("analysis_item", args=[item.pk])).status_code == 404
    assert (
        client_for(ronald).get(reverse("study_summaries_export", args=[bertscore_study.pk, "csv"])).status_code == 404
    )
    assert client_for(rita).get(reverse("analysis_item", args=[item.pk])).status_code == 200


def test_it_downloads_every_score_per_summary(scored_dataset: Dataset, rita: AbstractUser) -> None:
    response = client_for(rita).get(reverse("dataset_summaries_export", args=[scored_dataset.pk, "csv"]))
    assert response.status_code == 200 and response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == Summary.objects.filter(document__dataset=scored_dataset).count() == 7
    assert {"human:Faithful", "metric:R1", "metric:bertscore", "metric:bertscore.recall"} <= set(rows[0])
    oldest = next(row for row in rows if row["document"] == "oldest" and row["system"] == "ModelA")
    summary = Summary.objects.get(pk=int(oldest["summary_id"]))
    explanation = summary.explanations.get(metric="bertscore")
    assert float(oldest["metric:bertscore"]) == pytest.approx(explanation.score)
    assert float(oldest["metric:bertscore.recall"]) == pytest.approx(explanation.scores["recall"])
    assert (oldest["human:Faithful"], oldest["metric:R1"]) == ("0.4", "0.3")
    assert next(row for row in rows if row["system"] == "Empty")["metric:bertscore"] == ""
    jsonl = client_for(rita).get(reverse("dataset_summaries_export", args=[scored_dataset.pk, "jsonl"]))
    lines = [json.loads(line) for line in b"".join(jsonl.streaming_content).decode().splitlines()]
    assert len(lines) == 7 and lines[0].keys() == rows[0].keys()
    assert client_for(rita).get(f"/datasets/{scored_dataset.pk}/summaries.xlsx").status_code == 400


def test_it_downloads_a_datasets_imported_judgements(
    maynez_sample: Dataset, rita: AbstractUser, tmp_path: Path
) -> None:
    response = client_for(rita).get(reverse("dataset_judgements_export", args=[maynez_sample.pk, "jsonl"]))
    rows = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    study = Study.objects.get(dataset=maynez_sample, kind=Study.Kind.IMPORTED)
    assert len(rows) == study.tasks.get(task="factuality").items.filter(
        assignments__judgements__isnull=False
    ).count() + sum(1 for row in rows if row["task"] == "hallucination_spans")
    assert {row["task"] for row in rows} == {"factuality", "hallucination_spans"}
    path = tmp_path / "judgements.csv"
    call_command("export_judgements", "--dataset", "sample", "--format", "csv", "--output", str(path))
    assert len(list(csv.DictReader(path.open()))) == len(rows)


def queries(fetch: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as context:
        response = fetch()
    assert response.status_code == 200  # type: ignore[attr-defined]
    return len(context.captured_queries)


def test_it_keeps_the_analysis_query_counts_flat(
    bertscore_study: Study, tmp_path: Path, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    study_url = reverse("study_analysis", args=[bertscore_study.pk])
    dataset_url = reverse("dataset_analysis", args=[bertscore_study.dataset.pk])
    assignments = list(Assignment.objects.filter(item__study_task__study=bertscore_study).order_by("pk"))
    half = len(assignments) // 2
    for assignment in assignments[:half]:
        assignment_submit(
            assignment=assignment, user=assignment.annotator, labels={u.index: "correct" for u in units_of(assignment)}
        )
    # The study's analysis (one query per task for its LLM judges' names; its final labels for the human-enhanced
    # table and its charts, one query each; how many annotators are excluded; the study's conditions, none here),
    # the dataset's analysis (with the studies' tasks offered as human scores), the datasets list.
    exact = (21, 45, 5)
    assert (
        queries(lambda: client.get(study_url)),
        queries(lambda: client.get(dataset_url)),
        queries(lambda: client.get(reverse("datasets"))),
    ) == exact
    for assignment in assignments[half:]:
        assignment_submit(
            assignment=assignment,
            user=assignment.annotator,
            labels={u.index: "incorrect" for u in units_of(assignment)},
        )
    records = [
        {
            "id": f"extra{i}",
            "text": "More text.",
            "summaries": [
                {"system": "X", "text": "More.", "human_scores": {"Faithful": 0.5}, "metric_scores": {"R1": 0.1 * i}}
            ],
        }
        for i in range(5)
    ]
    call_command(
        "import_dataset",
        str(write_jsonl(tmp_path / "more.jsonl", records)),
        "--format",
        "jsonl",
        "--name",
        "small",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    call_command(
        "import_dataset",
        str(write_jsonl(tmp_path / "other.jsonl", records)),
        "--format",
        "jsonl",
        "--name",
        "other",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert (
        queries(lambda: client.get(study_url)),
        queries(lambda: client.get(dataset_url)),
        queries(lambda: client.get(reverse("datasets"))),
    ) == exact


def test_it_draws_the_highlighter_threshold_curve(bertscore_study: Study, rita: AbstractUser) -> None:
    # The small dataset has BERTScore explanations and two workers' spans on one summary.
    response = client_for(rita).get(reverse("dataset_analysis", args=[bertscore_study.dataset.pk]))
    rows = response.context["highlighter"]
    out = io.StringIO()
    call_command("highlighter", "--dataset", bertscore_study.dataset.name, "--json", stdout=out)
    assert rows == json.loads(out.getvalue()) and len(rows) == 20
    html = response.content.decode()
    assert html.count('<polyline class="series') == 4
    for name in ("precision", "recall", "f1", "accuracy"):
        assert f"<title>{name}</title>" in html
