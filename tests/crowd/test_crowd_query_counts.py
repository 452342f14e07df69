"""The crowd pages run an exact number of queries, the same with few and with many workers (see
tests/test_query_counts.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client

from corpus.models import Dataset
from crowd.services.workers import crowd_worker_arrive
from tests.conftest import client_for
from tests.crowd.factories import crowd_study_make
from tests.test_query_counts import queries

pytestmark = pytest.mark.django_db


def test_it_keeps_the_crowd_pages_query_counts_flat(small_dataset: Dataset, rita: AbstractUser) -> None:
    crowd = crowd_study_make(small_dataset, rita, consent_text="", phases=["annotation", "end"], training=[]).crowd
    researcher = client_for(rita)
    page = f"/studies/{crowd.study_id}/crowd/"
    worker = Client()
    worker.get(f"/crowd/{crowd.key}/?PROLIFIC_PID=first")
    first = queries(lambda: researcher.get(page))
    annotate = worker.get(f"/crowd/{crowd.key}/next/")["Location"]
    frame = queries(lambda: worker.get(annotate))
    for number in range(6):
        crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": f"w{number}"})
    # The crowd page: session, user, groups, the study (visible to rita), its crowd row, workers by status.
    assert queries(lambda: researcher.get(page)) == first == 6
    # The annotation frame of a worker: the annotation view's own queries and one for the session's worker.
    assert queries(lambda: worker.get(annotate)) == frame == 10
