"""Who may call what: the same rules as the web pages, for every endpoint and every role."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.conftest import units_of

pytestmark = pytest.mark.django_db

# Every read a researcher may make, with the ids it needs; `study` marks those that belong to one study.
RESEARCHER_READS = [
    ("api_datasets", "none"),
    ("api_dataset", "dataset"),
    ("api_documents", "dataset"),
    ("api_document", "document"),
    ("api_summaries", "dataset"),
    ("api_summary", "summary"),
    ("api_explanations", "summary"),
    ("api_dataset_agreement", "dataset"),
    ("api_correlations", "dataset"),
    ("api_meta_evaluation", "dataset"),
    ("api_highlighter", "dataset"),
    ("api_dataset_summaries_export", "dataset-csv"),
    ("api_dataset_judgements_export", "dataset-csv"),
    ("api_studies", "none"),
    ("api_study", "study"),
    ("api_study_items", "study"),
    ("api_study_assignments", "study"),
    ("api_study_judgements", "study"),
    ("api_study_agreement", "study"),
    ("api_study_summaries_export", "study-csv"),
    ("api_study_judgements_export", "study-jsonl"),
    ("api_study_bundle", "study"),
]

# Expected status per role. ronald is a researcher who does not run rita's study: he sees the datasets
# but rita's study answers 404, as on the web pages. The meta-evaluation answers 400 on the small
# dataset (it has no faithful/unfaithful pairs) for everyone allowed to ask.
EXPECTED = {
    "anonymous": lambda name, study: 401,
    "alice": lambda name, study: 403,
    "rita": lambda name, study: 400 if name == "api_meta_evaluation" else 200,
    "ronald": lambda name, study: 404 if study else (400 if name == "api_meta_evaluation" else 200),
    "admin": lambda name, study: 400 if name == "api_meta_evaluation" else 200,
}


def url_for(name: str, needs: str, study: Study) -> str:
    summary = study.tasks.first().items.first().summary
    args = {
        "none": [],
        "dataset": [study.dataset_id],
        "document": [summary.document_id],
        "summary": [summary.pk],
        "dataset-csv": [study.dataset_id, "csv"],
        "study": [study.pk],
        "study-csv": [study.pk, "csv"],
        "study-jsonl": [study.pk, "jsonl"],
    }[needs]
    return reverse(name, args=args)


@pytest.mark.parametrize("role", list(EXPECTED))
def test_it_answers_each_role_on_each_researcher_endpoint_as_the_web_pages_do(
    role: str, bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    client = cast(role)
    answers = {}
    for name, needs in RESEARCHER_READS:
        answers[name] = client.get(url_for(name, needs, bertscore_study)).status_code
    expected = {name: EXPECTED[role](name, needs.startswith("study")) for name, needs in RESEARCHER_READS}
    assert answers == expected


def test_it_lists_only_the_studies_a_researcher_runs(bertscore_study: Study, cast: Callable[[str], APIClient]) -> None:
    def listed(role: str) -> set[int]:
        return {row["id"] for row in cast(role).get(reverse("api_studies")).json()["results"]}

    assert listed("rita") == {bertscore_study.pk}
    assert listed("ronald") == set()
    assert listed("admin") == set(Study.objects.values_list("pk", flat=True))
    assert Study.objects.count() == 2  # the imported crowd labels are a study too


def test_it_refuses_researcher_writes_to_annotators_and_anonymous_callers(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    writes = [
        (reverse("api_datasets"), {}),
        (reverse("api_scoring", args=[bertscore_study.dataset_id]), {"metrics": ["entities"]}),
        (reverse("api_studies"), {"name": "x"}),
    ]
    for url, body in writes:
        assert cast("alice").post(url, body, format="json").status_code == 403, url
        assert cast("anonymous").post(url, body).status_code == 401, url


def test_it_shows_an_annotator_only_their_own_assignments(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    alices = set(Assignment.objects.filter(annotator__username="alice").values_list("pk", flat=True))
    listed = cast("alice").get(reverse("api_assignments"), {"page_size": 100}).json()
    assert {row["id"] for row in listed["results"]} == alices
    assert {row["annotator"] for row in listed["results"]} == {"alice"}
    assert cast("rita").get(reverse("api_assignments")).json()["count"] == 0
    assert cast("anonymous").get(reverse("api_assignments")).status_code == 401
    bobs = Assignment.objects.filter(annotator__username="bob").first()
    assert cast("alice").get(reverse("api_assignment", args=[bobs.pk])).status_code == 404
    assert cast("rita").get(reverse("api_assignment", args=[bobs.pk])).status_code == 404
    assert cast("bob").get(reverse("api_assignment", args=[bobs.pk])).status_code == 200
    refused = cast("alice").post(reverse("api_assignment_submit", args=[bobs.pk]), {}, format="json")
    assert refused.status_code == 404
    assert not bobs.judgements.exists()


def test_it_shows_researchers_the_judgements_of_their_study_only(
    bertscore_study: Study, cast: Callable[[str], APIClient]
) -> None:
    assignment = Assignment.objects.filter(annotator__username="alice").first()
    labels = {str(unit.index): "correct" for unit in units_of(assignment)}
    assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)
    url = reverse("api_study_judgements", args=[bertscore_study.pk])
    rows = cast("rita").get(url).json()["results"]
    assert {row["annotator"] for row in rows} == {"alice"}
    assert len(rows) == len(labels)
    assert cast("ronald").get(url).status_code == 404
    assert cast("alice").get(url).status_code == 403
