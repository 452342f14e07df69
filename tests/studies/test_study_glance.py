"""Researchers at a glance (issue 13 point 7): the studies list shows items done, annotators active in the
last hour and the median time per item; the study page a progress bar per task and, per annotator, time
per item and agreement with the majority of the others."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse
from django.utils import timezone

from corpus.models import Dataset
from studies.models import Assignment, Study, StudyItem
from studies.selectors.studies import studies_glance, study_progress, study_task_progress
from studies.services.studies import (
    StudySpec,
    assignment_draft_save,
    assignment_skip,
    assignment_submit,
    assignment_touch,
    study_create,
)
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def factuality_study(dataset: Dataset, annotators: list[AbstractUser], researcher: AbstractUser, k: int) -> Study:
    return study_create(
        spec=StudySpec(
            name=f"glance {k}",
            dataset=dataset,
            tasks=["factuality"],
            annotators=annotators,
            annotators_per_item=k,
            created_by=researcher,
        ),
    ).study


def assignments_of(study: Study, user: AbstractUser) -> list[Assignment]:
    return list(Assignment.objects.filter(item__study_task__study=study, annotator=user).order_by("position"))


def submit(assignment: Assignment, label: str, seconds: float) -> None:
    assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": label}, seconds=seconds)


def test_it_counts_an_item_done_only_when_all_k_annotators_submitted_it(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = factuality_study(small_dataset, [alice, bob], rita, k=2)
    items = StudyItem.objects.filter(study_task__study=study).count()
    alices, bobs = assignments_of(study, alice), assignments_of(study, bob)
    submit(alices[0], "yes", 10)  # one of two: not done
    same_item = next(a for a in bobs if a.item_id == alices[0].item_id)
    other_item = next(a for a in bobs if a.item_id != alices[0].item_id)
    submit(other_item, "yes", 20)  # another item, one of two: not done
    glance = studies_glance(studies=[study])[study.pk]
    assert (glance.items, glance.done, glance.percent) == (items, 0, 0)
    submit(same_item, "no", 30)
    glance = studies_glance(studies=[study])[study.pk]
    assert (glance.items, glance.done) == (items, 1)
    assert glance.percent == 100 // items
    # The study page's tasks use the same definition.
    assert study_task_progress(study=study)[study.tasks.get().pk].complete_items == 1


def test_it_counts_as_active_who_submitted_saved_a_draft_or_opened_an_item_in_the_last_hour(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = factuality_study(small_dataset, [alice, bob, carol], rita, k=2)
    # Being given work is not working: nobody is active right after the study is created.
    assert studies_glance(studies=[study])[study.pk].active == 0
    assignment_touch(assignment=assignments_of(study, alice)[0])
    assert studies_glance(studies=[study])[study.pk].active == 1
    assignment_draft_save(assignment_id=assignments_of(study, bob)[0].pk, user=bob, draft={"labels": {}})
    submit(assignments_of(study, carol)[0], "yes", 5)
    assert studies_glance(studies=[study])[study.pk].active == 3
    # An hour and a minute later nobody is active any more.
    later = timezone.now() + timedelta(hours=1, minutes=1)
    assert studies_glance(studies=[study], now=later)[study.pk].active == 0


def test_it_gives_the_median_active_time_per_submitted_item(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = factuality_study(small_dataset, [alice, bob], rita, k=2)
    other = factuality_study(small_dataset, [alice], rita, k=1)
    assert studies_glance(studies=[study, other])[study.pk].median_seconds is None  # nothing timed yet
    alices, bobs = assignments_of(study, alice), assignments_of(study, bob)
    for assignment, seconds in zip(alices[:3], (30, 10, 50), strict=True):
        submit(assignment, "yes", seconds)
    submit(bobs[0], "no", 100)
    submit(bobs[1], "no", 0)  # no active time recorded (an API client that sent none): not a time
    submit(assignments_of(other, alice)[0], "yes", 7)
    glance = studies_glance(studies=[study, other])
    assert glance[study.pk].median_seconds == pytest.approx(40.0)  # 10, 30, 50, 100: (30 + 50) / 2
    assert glance[other.pk].median_seconds == pytest.approx(7.0)
    medians = {row.username: row.median_seconds for row in study_progress(study=study)}
    assert medians == {"alice": pytest.approx(30.0), "bob": pytest.approx(100.0)}


def test_it_shows_each_study_at_a_glance_in_the_list(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = factuality_study(small_dataset, [alice, bob], rita, k=2)
    items = StudyItem.objects.filter(study_task__study=study).count()
    alices, bobs = assignments_of(study, alice), assignments_of(study, bob)
    submit(alices[0], "yes", 12)
    submit(next(a for a in bobs if a.item_id == alices[0].item_id), "yes", 20)
    page = client_for(rita).get(reverse("studies")).content.decode()
    row = re.search(rf'<tr data-study="{study.pk}">(.*?)</tr>', page, re.S).group(1)
    assert 'aria-valuenow="1"' in row and f'aria-valuemax="{items}"' in row
    assert f'aria-label="Items done: {study.name}"' in row
    assert re.search(r'<td class="active">2</td>', row)
    assert '<td class="median-time">16 s</td>' in row
    assert "An item is done when all k of its annotators have submitted it" in page


def test_it_shows_progress_bars_and_each_annotators_time_and_agreement_with_the_others(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = factuality_study(small_dataset, [alice, bob, carol], rita, k=3)
    items = list(StudyItem.objects.filter(study_task__study=study).order_by("pk"))
    mine = {user.username: {a.item_id: a for a in assignments_of(study, user)} for user in (alice, bob, carol)}
    # Item 0: alice yes, bob yes, carol no. Item 1: all yes. Item 2: only alice and bob.
    for name, label in (("alice", "yes"), ("bob", "yes"), ("carol", "no")):
        submit(mine[name][items[0].pk], label, 10)
    for name in ("alice", "bob", "carol"):
        submit(mine[name][items[1].pk], "yes", 20)
    for name in ("alice", "bob"):
        submit(mine[name][items[2].pk], "no", 40)
    assignment_skip(assignment_id=mine["carol"][items[2].pk].pk, user=carol, reason="not_english")  # cannot judge
    page = client_for(rita).get(reverse("study_detail", args=[study.pk])).content.decode()
    bar = re.search(r'<table class="table" id="task-bars">.*?</table>', page, re.S).group(0)
    assert 'role="progressbar" aria-label="Items done: Factuality' in bar
    assert 'aria-valuenow="2"' in bar and f'aria-valuemax="{len(items)}"' in bar

    def cells(name: str) -> list[str]:
        table = re.search(r'<table class="table" id="annotator-glance">.*?</table>', page, re.S).group(0)
        row = re.search(rf'<tr data-annotator="{name}">(.*?)</tr>', table, re.S).group(1)
        return [
            re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]

    # alice and bob each agree with the two others' majority on item 1 and are compared on nothing else
    # (item 0: the others tie; item 2: one other rater); carol disagrees on item 0 and agrees on item 1.
    assert cells("alice") == ["alice", str(len(items)), "3", "0", "20 s", "100% of 1 unit"]
    assert cells("carol") == ["carol", str(len(items)), "2", "1", "15 s", "50% of 2 units"]
    progress = re.search(r'<table class="table" id="annotator-progress">.*?</table>', page, re.S).group(0)
    assert re.search(r'<tr data-annotator="carol">.*?<td class="skipped">1</td>', progress, re.S)
    nobody = factuality_study(small_dataset, [alice, bob], rita, k=2)
    submit(assignments_of(nobody, alice)[0], "yes", 0)
    page = client_for(rita).get(reverse("study_detail", args=[nobody.pk])).content.decode()
    assert "n/a: 1 unit with fewer than 2 other raters" in page
    assert "n/a: no submitted item with recorded time" in page
    assert "n/a: no judgements yet" in page  # bob has submitted nothing
