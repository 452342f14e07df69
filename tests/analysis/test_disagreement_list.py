"""The study page's disagreement list: only units two or more annotators rated, each shown by its text."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse
from django.utils.html import escape

from studies.models import Assignment, Judgement, Study
from studies.services.studies import assignment_submit
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def test_it_hides_units_rated_by_one_annotator_and_shows_unit_text(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    bobs = list(Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=bob).order_by("pk"))
    for assignment in Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=alice):
        assignment_submit(assignment=assignment, user=alice, labels={u.index: "correct" for u in units_of(assignment)})
    for assignment in bobs[:1]:
        assignment_submit(assignment=assignment, user=bob, labels={u.index: "incorrect" for u in units_of(assignment)})
    response = client_for(rita).get(reverse("study_analysis", args=[bertscore_study.pk]))
    tables = response.context["agreements"][0].tables
    shared_item = bobs[0].item_id
    assert tables.items and {row.item_id for row in tables.items} == {shared_item}
    assert all(set(row.agreement.labels) == {"alice", "bob"} for row in tables.items)
    assert tables.n_single > 0
    texts = dict(Judgement.objects.filter(assignment=bobs[0]).values_list("unit_index", "unit_text"))
    html = response.content.decode()
    for row in tables.items:
        assert row.unit_text == texts[row.unit] and row.unit_text
        assert f"<td>{escape(row.unit_text)}</td>" in html
    assert f"{tables.n_single} units rated by one annotator so far are not listed." in html
