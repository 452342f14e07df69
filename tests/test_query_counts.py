"""Pages must not run a query per row: the count stays flat as items and annotators grow."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.models import Assignment, Dataset, Study
from annotations.services.studies import assignment_submit, study_create
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def queries(fetch: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as context:
        response = fetch()
    assert response.status_code == 200
    return len(context.captured_queries)


def add_study(dataset: Dataset, annotators: list[AbstractUser], researcher: AbstractUser) -> Study:
    return study_create(
        name="more",
        dataset=dataset,
        tasks=["bertscore"],
        annotators=annotators,
        annotators_per_item=len(annotators),
        created_by=researcher,
    ).study


def test_it_keeps_the_dashboard_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(alice)
    few = queries(lambda: client.get(reverse("dashboard")))
    add_study(bertscore_study.dataset, [alice, bob], rita)
    assert Assignment.objects.filter(annotator=alice).count() == 12
    assert queries(lambda: client.get(reverse("dashboard"))) == few


def test_it_keeps_the_annotation_view_query_count_flat(bertscore_study: Study, alice: AbstractUser) -> None:
    client = client_for(alice)
    assignments = Assignment.objects.filter(annotator=alice).order_by("position")
    sizes = {a.pk: len(units_of(a)) for a in assignments}
    small, large = min(sizes, key=sizes.get), max(sizes, key=sizes.get)
    assert sizes[small] < sizes[large]
    counts = {pk: queries(lambda pk=pk: client.get(reverse("annotate", args=[pk]))) for pk in (small, large)}
    assert counts[small] == counts[large]


def test_it_keeps_the_study_pages_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    detail = reverse("study_detail", args=[bertscore_study.pk])
    few_detail, few_list = (
        queries(lambda: client.get(detail)),
        queries(lambda: client.get(reverse("studies"))),
    )
    add_study(bertscore_study.dataset, [alice, bob, carol], rita)
    bertscore_study.annotators.add(carol)
    for assignment in Assignment.objects.filter(item__study_task__study=bertscore_study):
        assignment_submit(
            assignment=assignment,
            user=assignment.annotator,
            labels={u.index: "correct" for u in units_of(assignment)},
        )
    assert queries(lambda: client.get(detail)) == few_detail
    assert queries(lambda: client.get(reverse("studies"))) == few_list
