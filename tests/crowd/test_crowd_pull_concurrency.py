"""Pulls under concurrency (issue 14, the 200-worker load test): the query over every item runs before a pull
takes its turn and its candidates are counted again in the turn, so that no item goes above k and no worker
sees a summary twice however the pulls interleave."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.db.models import Count, Q

from corpus.models import Dataset
from crowd.models import CrowdStudy
from crowd.services.assignment import _real_item, crowd_item_next
from studies.models import Assignment, StudyItem
from tests.crowd.factories import crowd_study_make
from tests.crowd.test_crowd_services import arrive, submit, to_annotation


def test_it_counts_stale_candidates_again_and_takes_the_item_furthest_from_k(
    db: None, small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd = crowd_study_make(small_dataset, rita, check_rate=0, max_items_per_worker=100).crowd
    first, second, third = (to_annotation(arrive(crowd, f"w{n}")) for n in range(3))
    mine = Assignment.objects.filter(annotator_id=third.user_id)
    full = crowd_item_next(worker=first)
    assert crowd_item_next(worker=second).item_id != full.item_id  # furthest from k: an untouched item
    Assignment.objects.create(item=full.item, annotator=second.user, position=9)  # now at k = 2
    untouched = StudyItem.objects.filter(study_task__study=crowd.study, assignments__isnull=True).order_by("pk")
    # Candidates chosen before the turn that filled up meanwhile: the item is chosen among all again.
    assert _real_item(crowd, mine, None, [full.item_id]).load == 0
    # Among candidates, the one furthest from k now, not the first chosen.
    half = Assignment.objects.get(annotator=second.user, position=1).item_id
    assert _real_item(crowd, mine, None, [half, untouched[0].pk]).pk == untouched[0].pk


@pytest.mark.django_db(transaction=True)
def test_it_never_puts_an_item_above_k_when_workers_pull_at_once(small_dataset: Dataset, rita: AbstractUser) -> None:
    crowd: CrowdStudy = crowd_study_make(small_dataset, rita, check_rate=0, max_items_per_worker=100).crowd
    workers = [to_annotation(arrive(crowd, f"worker{n}")) for n in range(8)]
    start = threading.Barrier(len(workers))
    failures: list[BaseException] = []

    def pull_all(worker: object) -> None:
        try:
            start.wait()
            while (assignment := crowd_item_next(worker=worker)) is not None:  # type: ignore[arg-type]
                submit(assignment, "yes")
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=pull_all, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    items = StudyItem.objects.filter(study_task__study=crowd.study).annotate(
        n=Count("assignments", filter=Q(assignments__status="submitted"))
    )
    assert {item.n for item in items} == {2}  # every item at k, none above
    per_summary = (
        Assignment.objects.filter(item__study_task__study=crowd.study)
        .values("annotator", "item__summary")
        .annotate(n=Count("id"))
    )
    assert max(row["n"] for row in per_summary) == 1
    assert not Assignment.objects.filter(item__study_task__study=crowd.study, status="assigned").exists()
