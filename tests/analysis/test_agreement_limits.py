"""Agreement tables say when units have fewer raters than k, and give no coefficient where none applies."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.analysis import EDIT_AGREEMENT_UNDEFINED
from corpus.models import Dataset
from studies.models import Assignment, Study
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def test_it_says_plainly_when_units_have_fewer_raters_than_k(
    bertscore_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    for assignment in Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=alice):
        assignment_submit(assignment=assignment, user=alice, labels={u.index: "correct" for u in units_of(assignment)})
    response = client_for(rita).get(reverse("study_analysis", args=[bertscore_study.pk]))
    overview = response.context["agreements"][0]
    assert overview.fewest_raters == 1 and overview.annotators_per_item == 2
    assert "Some units have only 1 of the 2 annotators per item the study asks for" in response.content.decode()

    api = client_for(rita).get(reverse("api_study_agreement", args=[bertscore_study.pk])).json()
    assert api[0]["fewest_raters"] == 1 and api[0]["undefined_reason"] == ""


def edits_study(dataset: Dataset, annotators: list[AbstractUser], researcher: AbstractUser) -> Study:
    return study_create(
        spec=StudySpec(
            name="Edits", dataset=dataset, tasks=["bump"], annotators=annotators, annotators_per_item=2,
            created_by=researcher,
        )
    ).study  # fmt: skip


def test_it_gives_no_coefficient_for_bump_edits_and_says_why(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = edits_study(small_dataset, [alice, bob], rita)
    response = client_for(rita).get(reverse("study_analysis", args=[study.pk]))
    overview = response.context["agreements"][0]
    assert overview.results == [] and overview.undefined_reason == EDIT_AGREEMENT_UNDEFINED
    html = response.content.decode()
    assert "Agreement is undefined for this task" in html and "data-coefficient" not in html

    api = client_for(rita).get(reverse("api_study_agreement", args=[study.pk])).json()
    assert api[0]["results"] == [] and api[0]["undefined_reason"] == EDIT_AGREEMENT_UNDEFINED


def test_it_reports_bump_edits_as_undefined_in_the_agreement_command_and_on_the_study_page(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = edits_study(small_dataset, [alice, bob], rita)
    for assignment in Assignment.objects.filter(item__study_task__study=study).select_related("item__summary"):
        edit = {"text": assignment.item.summary.text, "label": "not_possible", "note": "no such error fits"}
        assignment_submit(assignment=assignment, user=assignment.annotator, edit=edit)
    for by in ([], ["--by", "system"]):
        out = io.StringIO()
        call_command("agreement", "--study", str(study.pk), "--json", *by, stdout=out)
        data = json.loads(out.getvalue())
        assert (data["value"], data["n_items"], data["reason"]) == (None, 0, EDIT_AGREEMENT_UNDEFINED)
    out = io.StringIO()
    call_command("agreement", "--study", str(study.pk), "--coefficient", "krippendorff", stdout=out)
    assert "undefined" in out.getvalue() and EDIT_AGREEMENT_UNDEFINED in out.getvalue()
    page = client_for(rita).get(reverse("study_detail", args=[study.pk])).content.decode()
    assert "undefined: " + EDIT_AGREEMENT_UNDEFINED in page
