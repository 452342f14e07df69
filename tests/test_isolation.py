"""Researchers see only their own studies' data (issue 11 point 3).

rita and ronald each run a study on the same dataset, judged differently. Every export, browse, inspector
and analysis endpoint, on the web and over the API, answers a researcher exactly as it would if the other
researcher's study did not exist, while the admin's answer does change without it (so the endpoint does
read studies) and the dataset's imported judgements stay visible to both.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import transaction
from django.urls import reverse

from accounts.services import external_username
from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from studies.models import Assignment, Study, StudyItem
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of, write_jsonl

pytestmark = pytest.mark.django_db

TASKS = ["bertscore", "factuality", "hallucination_spans"]


@dataclass(frozen=True)
class Judging:
    """How one researcher's annotators judge: they agree everywhere except on the summaries of `contested`,
    where the second annotator says the opposite of the first; both mark a span there."""

    contested: str  # document external id
    label: str  # the first annotator's BERTScore label everywhere


def judge(study: Study, judging: Judging) -> None:
    second = max(study.annotators.all(), key=lambda user: user.username)
    assignments = Assignment.objects.filter(item__study_task__study=study).select_related(
        "item__study_task", "item__summary__document"
    )
    for assignment in assignments:
        contested = assignment.item.summary.document.external_id == judging.contested
        dissent = contested and assignment.annotator == second
        task = assignment.item.study_task.task
        body: dict[str, Any] = {}
        if task == "bertscore":
            other = "incorrect" if judging.label == "correct" else "correct"
            body["labels"] = {str(u.index): other if dissent else judging.label for u in units_of(assignment)}
        elif task == "factuality":
            body["labels"] = {"0": "no" if dissent else "yes"}
        elif contested and assignment.item.summary.text:
            body["spans"] = [{"start": 0, "end": assignment.item.summary.text.index(" "), "label": "extrinsic"}]
        assignment_submit(assignment=assignment, user=assignment.annotator, comment=f"{study.name} work", **body)


@dataclass(frozen=True)
class Studies:
    dataset: Dataset
    own: dict[str, Study]  # researcher -> the study they run


@pytest.fixture
def studies(
    scored_dataset: Dataset,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
    ronald: AbstractUser,
) -> Studies:
    """rita's study (alice, bob) contests the bridge summaries, ronald's (bob, carol) the match summaries;
    the dataset's imported crowd labels (w1, w2) judge oldest/ModelA."""
    own = {}
    for researcher, annotators, judging in (
        (rita, [alice, bob], Judging("bridge", "correct")),
        (ronald, [bob, carol], Judging("match", "incorrect")),
    ):
        study = study_create(
            spec=StudySpec(
                name=f"Study of {researcher.username}",
                dataset=scored_dataset,
                tasks=TASKS,
                annotators=annotators,
                annotators_per_item=2,
                created_by=researcher,
            )
        ).study
        judge(study, judging)
        own[researcher.username] = study
    return Studies(scored_dataset, own)


CSRF = re.compile(r'(csrfmiddlewaretoken" value=|csrf-token" content=|"csrfToken": )"[^"]*"')


def body(response: Any) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return CSRF.sub(r"\1", content.decode())


def dataset_endpoints(dataset: Dataset) -> dict[str, tuple[str, str]]:
    """name -> (web or api, url) of everything that reads a dataset's studies."""
    pk = dataset.pk
    browse = reverse("dataset_summaries", args=[pk])
    api_browse = reverse("api_summaries", args=[pk])
    endpoints = {
        "web summaries.csv": ("web", reverse("dataset_summaries_export", args=[pk, "csv"])),
        "web summaries.jsonl": ("web", reverse("dataset_summaries_export", args=[pk, "jsonl"])),
        "web browse": ("web", browse + "?page_size=100"),
        "web browse by disagreement": ("web", browse + "?sort=-disagreement&page_size=100"),
        "web browse disagreement filter": ("web", browse + "?disagreement_min=0.2&page_size=100"),
        "web dataset analysis": ("web", reverse("dataset_analysis", args=[pk])),
        "web imported judgements": ("web", reverse("dataset_judgements_export", args=[pk, "csv"])),
        "api browse": ("api", api_browse + "?page_size=100"),
        "api browse by disagreement": ("api", api_browse + "?sort=-disagreement&page_size=100"),
        "api browse disagreement filter": ("api", api_browse + "?disagreement_min=0.2&page_size=100"),
        "api summaries.csv": ("api", reverse("api_dataset_summaries_export", args=[pk, "csv"])),
        "api summaries.jsonl": ("api", reverse("api_dataset_summaries_export", args=[pk, "jsonl"])),
        "api highlighter": ("api", reverse("api_highlighter", args=[pk])),
        "api imported agreement": ("api", reverse("api_dataset_agreement", args=[pk])),
        "api correlations": ("api", reverse("api_correlations", args=[pk]) + "?bootstrap=0"),
        "api imported judgements": ("api", reverse("api_dataset_judgements_export", args=[pk, "csv"])),
    }
    for summary in Summary.objects.filter(document__dataset=dataset, study_items__isnull=False).distinct():
        endpoints[f"web inspector {summary.pk}"] = ("web", reverse("summary_inspect", args=[summary.pk]))
        sibling = Summary.objects.filter(document_id=summary.document_id).exclude(pk=summary.pk).first()
        compare = f"{reverse('summary_compare')}?a={summary.pk}&b={sibling.pk}"
        endpoints[f"web comparison {summary.pk}"] = ("web", compare)
    return endpoints


def study_endpoints(study: Study) -> dict[str, tuple[str, str]]:
    """name -> (web or api, url) of everything that reads one study."""
    pk = study.pk
    endpoints = {
        "web study": ("web", reverse("study_detail", args=[pk])),
        "web study analysis": ("web", reverse("study_analysis", args=[pk])),
        "web study judgements.csv": ("web", reverse("study_export", args=[pk, "csv"])),
        "web study summaries.csv": ("web", reverse("study_summaries_export", args=[pk, "csv"])),
        "api study": ("api", reverse("api_study", args=[pk])),
        "api study items": ("api", reverse("api_study_items", args=[pk]) + "?page_size=100"),
        "api study assignments": ("api", reverse("api_study_assignments", args=[pk]) + "?page_size=100"),
        "api study judgements": ("api", reverse("api_study_judgements", args=[pk]) + "?page_size=100"),
        "api study agreement": ("api", reverse("api_study_agreement", args=[pk])),
        "api study summaries.jsonl": ("api", reverse("api_study_summaries_export", args=[pk, "jsonl"])),
        "api study judgements.csv": ("api", reverse("api_study_judgements_export", args=[pk, "csv"])),
    }
    for item in StudyItem.objects.filter(study_task__study=study):
        endpoints[f"web item {item.pk}"] = ("web", reverse("analysis_item", args=[item.pk]))
    return endpoints


Fetch = Callable[[dict[str, tuple[str, str]]], dict[str, tuple[int, str]]]


def fetcher(user: AbstractUser) -> Fetch:
    web, api = client_for(user), api_client_for(user)

    def fetch(endpoints: dict[str, tuple[str, str]]) -> dict[str, tuple[int, str]]:
        answers = {}
        for name, (kind, url) in endpoints.items():
            response = (web if kind == "web" else api).get(url)
            answers[name] = (response.status_code, body(response) if response.status_code == 200 else "")
        return answers

    return fetch


@pytest.mark.parametrize(("viewer", "other"), [("rita", "ronald"), ("ronald", "rita")])
def test_it_answers_a_researcher_as_if_the_other_researchers_study_did_not_exist(
    studies: Studies, viewer: str, other: str, request: pytest.FixtureRequest, admin_user: AbstractUser
) -> None:
    as_viewer, as_admin = fetcher(request.getfixturevalue(viewer)), fetcher(admin_user)
    shared = dataset_endpoints(studies.dataset)
    own = study_endpoints(studies.own[viewer])
    foreign = study_endpoints(studies.own[other])
    seen, admin_seen = as_viewer({**shared, **own}), as_admin(shared)
    assert all(status == 200 for status, _ in seen.values()), {n: s for n, (s, _) in seen.items() if s != 200}
    # The other researcher's study itself, and each of its items, is not there at all.
    assert {status for status, _ in as_viewer(foreign).values()} == {404}

    with transaction.atomic():
        studies.own[other].delete()
        alone, admin_alone = as_viewer({**shared, **own}), as_admin(shared)
        transaction.set_rollback(True)

    changed = [name for name in seen if seen[name] != alone[name]]
    assert changed == [], f"{viewer} sees {other}'s study in: {changed}"
    # Where the admin's answer moves with the other study, that study's data is what the viewer was spared.
    readers = [name for name in shared if admin_seen[name] != admin_alone[name]]
    for name in ("web summaries.csv", "api summaries.jsonl", "web browse by disagreement", "api browse"):
        assert name in readers, name
    assert "api highlighter" in readers and "web dataset analysis" in readers
    assert any(name.startswith("web inspector") for name in readers)


def csv_header(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text)))


def test_it_keeps_each_researchers_enhanced_columns_and_disagreement_to_themselves(
    studies: Studies, rita: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> None:
    rita_study, ronald_study = studies.own["rita"], studies.own["ronald"]
    url = reverse("dataset_summaries_export", args=[studies.dataset.pk, "csv"])
    columns = {name: csv_header(body(client_for(user).get(url))) for name, user in (("rita", rita), ("ronald", ronald))}
    columns["admin"] = csv_header(body(client_for(admin_user).get(url)))
    for name, study in (("rita", rita_study), ("ronald", ronald_study)):
        assert f"enhanced:study{study.pk}:bertscore:majority" in columns[name]
        assert f"enhanced:study{study.pk}:bertscore:majority" in columns["admin"]
    assert not any(column.startswith(f"enhanced:study{ronald_study.pk}:") for column in columns["rita"])
    assert not any(column.startswith(f"enhanced:study{rita_study.pk}:") for column in columns["ronald"])

    def by_disagreement(user: AbstractUser) -> list[tuple[str, float | None]]:
        url = reverse("api_summaries", args=[studies.dataset.pk]) + "?sort=-disagreement&page_size=100"
        rows = api_client_for(user).get(url).json()["results"]
        return [(f"{row['document_external_id']}/{row['system']}", row["disagreement"]) for row in rows]

    # Each researcher's most disagreed summaries are those their own annotators contested; the imported
    # crowd labels' disagreement on oldest/ModelA counts for both.
    for user, contested, spared in ((rita, "bridge", "match"), (ronald, "match", "bridge")):
        rows = by_disagreement(user)
        disagreed = [key for key, value in rows if value]
        assert {key.split("/")[0] for key in disagreed} == {contested, "oldest"}, (user, rows)
        assert not any(value for key, value in rows if key.startswith(spared)), (user, rows)
    crowd = {key: value for key, value in by_disagreement(admin_user)}
    assert crowd["bridge/ModelA"] and crowd["match/ModelA"]


def test_it_keeps_the_imported_judgements_visible_to_every_researcher(
    studies: Studies, rita: AbstractUser, ronald: AbstractUser
) -> None:
    dataset = studies.dataset
    oldest = Summary.objects.get(document__dataset=dataset, document__external_id="oldest", system="ModelA")
    crowd = {external_username(dataset, worker) for worker in ("w1", "w2")}
    for user, other in ((rita, ronald), (ronald, rita)):
        client = client_for(user)
        page = body(client.get(reverse("summary_inspect", args=[oldest.pk])))
        assert "Imported: " in page and all(name in page for name in crowd)
        assert studies.own[user.username].name in page and studies.own[other.username].name not in page
        export = body(client.get(reverse("dataset_judgements_export", args=[dataset.pk, "csv"])))
        assert {row["annotator"] for row in csv.DictReader(io.StringIO(export))} == crowd
        agreement = api_client_for(user).get(reverse("api_dataset_agreement", args=[dataset.pk])).json()
        assert {entry["task"] for entry in agreement} == {"factuality", "hallucination_spans"}
        assert all(entry["annotators"] for entry in agreement)


def test_it_shows_no_disagreement_to_a_researcher_whose_dataset_only_others_have_judged(
    tmp_path: Path, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser
) -> None:
    """Without imported labels, a dataset that only ronald's study judged has no judgements for rita."""
    documents = [
        {"id": f"d{n}", "text": f"Document {n}.", "summaries": [{"system": "A", "text": f"A on {n}."}]} for n in (1, 2)
    ]
    dataset = dataset_import(
        name="unjudged", batch=parse("jsonl", write_jsonl(tmp_path / "d.jsonl", documents))
    ).dataset
    study = study_create(
        spec=StudySpec(
            name="ronald's",
            dataset=dataset,
            tasks=["factuality"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=ronald,
        )
    ).study
    for assignment in Assignment.objects.filter(item__study_task__study=study):
        label = "yes" if assignment.annotator == alice else "no"
        assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": label})
    page = reverse("dataset_summaries", args=[dataset.pk])
    api = reverse("api_summaries", args=[dataset.pk])
    assert "Disagreement" in body(client_for(ronald).get(page))
    assert "Disagreement" not in body(client_for(rita).get(page))
    assert {row["disagreement"] for row in api_client_for(ronald).get(api).json()["results"]} == {1.0}
    assert {row["disagreement"] for row in api_client_for(rita).get(api).json()["results"]} == {None}
    assert api_client_for(rita).get(api + "?disagreement_min=0").json()["count"] == 0
