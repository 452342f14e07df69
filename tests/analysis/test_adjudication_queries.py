"""The adjudication queue, its item page and its endpoint run a fixed number of queries, however many items,
units, annotators, skips and final labels the study has."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from review.services.adjudication import study_final_labels_compute
from studies.models import Assignment, Study
from studies.services.studies import assignment_skip, assignment_submit
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of
from tests.test_query_counts import add_study, queries

pytestmark = pytest.mark.django_db

# The session, the user, the study, its tasks; the labels counted per unit and label, the final labels per item
# and status, the skips per item; the shown items' summaries; the user's roles for the navigation.
QUEUE_QUERIES = 9
# The token, the study, its tasks, the three counts, the shown items.
API_QUEUE_QUERIES = 7
# The page's own reads (the study, the item, the queue as above for next/previous, the annotators, the labels,
# the final labels) and the inspector's view of the summary (its explanations, scores and visible judgements).
ITEM_QUERIES = 20


def judge(study: Study, bob: AbstractUser, items: int) -> None:
    """Every open assignment submitted: bob says incorrect on his first `items` items, everyone else correct."""
    bobs = list(Assignment.objects.filter(item__study_task__study=study, annotator=bob).order_by("item_id")[:items])
    for assignment in Assignment.objects.filter(item__study_task__study=study, status=Assignment.Status.ASSIGNED):
        label = "incorrect" if assignment in bobs else "correct"
        assignment_submit(
            assignment=assignment, user=assignment.annotator, labels={u.index: label for u in units_of(assignment)}
        )


def test_it_keeps_the_queue_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    client, api = client_for(rita), api_client_for(rita)
    url = reverse("adjudication_queue", args=[bertscore_study.pk])
    api_url = reverse("api_adjudication_queue", args=[bertscore_study.pk])
    judge(bertscore_study, bob, 1)
    assert len(client.get(url).context["queue"].rows) == 1
    assert queries(lambda: client.get(url)) == QUEUE_QUERIES
    assert queries(lambda: api.get(api_url)) == API_QUEUE_QUERIES
    # More items and annotators, all disagreeing, with skips and final labels.
    study = add_study(bertscore_study.dataset, [alice, bob, carol], rita)
    first = Assignment.objects.filter(item__study_task__study=study, annotator=carol).first()
    assignment_skip(assignment_id=first.pk, user=carol, reason="broken_text")
    judge(study, bob, 99)
    study_final_labels_compute(study=study)
    url = reverse("adjudication_queue", args=[study.pk])
    api_url = reverse("api_adjudication_queue", args=[study.pk])
    assert len(client.get(url).context["queue"].rows) > 3
    assert queries(lambda: client.get(url)) == QUEUE_QUERIES
    assert queries(lambda: client.get(url, {"flagged": "1", "task": "bertscore", "open": "1"})) == QUEUE_QUERIES
    assert queries(lambda: api.get(api_url)) == API_QUEUE_QUERIES


def test_it_keeps_the_item_page_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    judge(bertscore_study, bob, 99)
    client = client_for(rita)
    sizes = {
        item_id: len(units_of(Assignment.objects.filter(item_id=item_id).first()))
        for item_id in Assignment.objects.filter(item__study_task__study=bertscore_study).values_list(
            "item_id", flat=True
        )
    }
    small, large = min(sizes, key=sizes.get), max(sizes, key=sizes.get)
    assert sizes[small] < sizes[large]
    counts = [
        queries(lambda pk=pk: client.get(reverse("adjudication_item", args=[bertscore_study.pk, pk])))
        for pk in (small, large)
    ]
    study_final_labels_compute(study=bertscore_study)
    counts.append(queries(lambda: client.get(reverse("adjudication_item", args=[bertscore_study.pk, large]))))
    assert counts == [ITEM_QUERIES] * 3
