"""The annotator's dashboard groups the queue by study, then task, with progress per study and a filter by
study, task and text (issue 13, point 6)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from studies.models import Assignment, Study
from studies.selectors import assignments as assignment_selectors
from studies.selectors.assignments import annotator_queue
from studies.services.studies import StudySpec, assignment_skip, assignment_submit, study_create
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_studies(bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser) -> Study:
    """alice's second study, with two tasks; she finished one item of it and could not judge another."""
    other = study_create(
        spec=StudySpec(
            name="Pilot two",
            dataset=bertscore_study.dataset,
            tasks=["factuality", "sentence_consistency"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study
    done, skipped = Assignment.objects.filter(annotator=alice, item__study_task__study=other).order_by("position")[:2]
    labels = {u.index: "yes" for u in units_of(done)} if done.item.study_task.task == "factuality" else None
    assignment_submit(assignment=done, user=alice, labels=labels or {u.index: 5 for u in units_of(done)})
    assignment_skip(assignment_id=skipped.pk, user=alice, reason="broken_text", note="")
    return other


def pks(assignments: Any) -> list[int]:
    return sorted(assignments.values_list("pk", flat=True))


def rows(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr data-assignment="(\d+)"', html)]


def numbers(html: str) -> dict[int, int]:
    """Assignment id -> its number in the list."""
    found = re.findall(r'<tr data-assignment="(\d+)">\s*<td>(\d+)</td>', html)
    return {int(pk): int(number) for pk, number in found}


def test_it_groups_the_queue_by_study_and_task_with_progress_per_study(
    bertscore_study: Study, two_studies: Study, alice: AbstractUser
) -> None:
    queue = annotator_queue(user=alice)
    by_study = {group.study_id: group for group in queue.studies}
    assert list(by_study) == [bertscore_study.pk, two_studies.pk]  # in the order the studies were made
    pilot = by_study[two_studies.pk]
    mine = Assignment.objects.filter(annotator=alice, item__study_task__study=two_studies)
    assert (pilot.total, pilot.done, pilot.skipped) == (mine.count(), 2, 1)
    assert sorted(pilot.tasks) == ["factuality", "sentence_consistency"]
    assert sum(task.total for task in pilot.tasks.values()) == pilot.total
    first = by_study[bertscore_study.pk]
    assert (first.done, list(first.tasks)) == (0, ["bertscore"])
    html = client_for(alice).get(reverse("dashboard")).content.decode()
    assert f"{pilot.done} / {pilot.total} done (1 cannot judge)" in html
    assert f"0 / {first.total} done" in html
    assert sorted(rows(html)) == sorted(Assignment.objects.filter(annotator=alice).values_list("pk", flat=True))
    assert html.index("Small study") < html.index("Pilot two")
    assert "Cannot judge" in html


def test_it_filters_by_study_task_and_text(bertscore_study: Study, two_studies: Study, alice: AbstractUser) -> None:
    client = client_for(alice)
    mine = Assignment.objects.filter(annotator=alice)
    by_study = client.get(reverse("dashboard"), {"study": two_studies.pk}).content.decode()
    assert sorted(rows(by_study)) == sorted(
        mine.filter(item__study_task__study=two_studies).values_list("pk", flat=True)
    )
    by_task = client.get(reverse("dashboard"), {"task": "factuality"}).content.decode()
    assert sorted(rows(by_task)) == sorted(
        mine.filter(item__study_task__task="factuality").values_list("pk", flat=True)
    )
    assert 'id="queue-study-' + str(bertscore_study.pk) not in by_task
    by_text = client.get(reverse("dashboard"), {"q": "  OLDEST person "}).content.decode()
    oldest = mine.filter(item__summary__document__title="Oldest person")
    assert oldest.exists() and sorted(rows(by_text)) == pks(oldest)
    assert f"{oldest.count()} of {mine.count()} items match." in by_text
    # Each item keeps its number in the whole queue under a filter.
    everything = numbers(client.get(reverse("dashboard")).content.decode())
    assert sorted(everything.values()) == list(range(1, mine.count() + 1))
    assert numbers(by_text) == {pk: everything[pk] for pk in rows(by_text)}
    assert numbers(by_task) == {pk: everything[pk] for pk in rows(by_task)}
    nothing = client.get(reverse("dashboard"), {"q": "no such words"}).content.decode()
    assert rows(nothing) == [] and "No item matches the filter." in nothing
    # Progress stays that of the whole queue whatever the filter shows.
    assert "2 / " in by_task and "(1 cannot judge)" in by_task


@pytest.mark.parametrize("study", ["x", "-1", "1e3", "1" * 30])
def test_it_refuses_a_malformed_study_filter_naming_the_field(
    bertscore_study: Study, alice: AbstractUser, study: str
) -> None:
    answer = client_for(alice).get(reverse("dashboard"), {"study": study})
    assert answer.status_code == 400 and "study" in answer.content.decode()


def test_it_lists_the_first_items_of_a_long_queue_and_says_so(
    bertscore_study: Study, two_studies: Study, alice: AbstractUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assignment_selectors, "MAX_QUEUE_ROWS", 3)
    client = client_for(alice)
    html = client.get(reverse("dashboard")).content.decode()
    mine = Assignment.objects.filter(annotator=alice)
    assert len(rows(html)) == 3 and "The first 3 items are listed" in html
    assert f"0 / {mine.filter(item__study_task__study=bertscore_study).count()} done" in html  # progress: all
    assert list(numbers(html).values()) == [1, 2, 3]
    found = client.get(reverse("dashboard"), {"study": two_studies.pk}).content.decode()
    assert "More than 3 of" in found and set(rows(found)) <= set(pks(mine.filter(item__study_task__study=two_studies)))
