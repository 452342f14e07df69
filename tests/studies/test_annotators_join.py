"""Annotators added to a running study get work: items short of k are topped up, otherwise (when asked)
items beyond k; the researcher's message says which, and a fresh annotator's dashboard says only that
nothing is assigned yet."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth.models import AbstractUser
from django.contrib.messages import get_messages
from django.urls import reverse

from common import roles
from corpus.models import Dataset
from studies.models import Assignment, Study, StudyItem
from studies.services.studies import (
    StudySpec,
    assignment_submit,
    study_annotator_remove,
    study_annotators_add,
    study_create,
)
from tests.conftest import client_for, make_user

pytestmark = pytest.mark.django_db


def _study(dataset: Dataset, annotators: list[AbstractUser], k: int, rita: AbstractUser) -> Study:
    return study_create(
        spec=StudySpec(
            name="join",
            dataset=dataset,
            tasks=["factuality"],
            annotators=annotators,
            annotators_per_item=k,
            created_by=rita,
        )
    ).study


def _pairs(study: Study) -> list[tuple[int, int]]:
    return list(Assignment.objects.filter(item__study_task__study=study).values_list("item_id", "annotator_id"))


def _messages(response: object) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


def test_it_tops_items_short_of_k_up_with_the_new_annotator_and_never_gives_an_item_twice(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = _study(small_dataset, [alice, bob], 2, rita)
    items = StudyItem.objects.filter(study_task__study=study).count()
    # k grows to 3 while only two annotators can be had: the study page refuses, so raise it directly.
    Study.objects.filter(pk=study.pk).update(annotators_per_item=3)
    study.refresh_from_db()
    answer = client_for(rita).post(reverse("study_annotators", args=[study.pk]), {"annotators": [carol.pk]})
    assert _messages(answer) == [f"carol got {items} items that were short of k=3."]
    pairs = _pairs(study)
    assert len(pairs) == len(set(pairs)) == 3 * items
    assert Counter(annotator for _, annotator in pairs)[carol.pk] == items


def test_it_assigns_nothing_when_no_item_is_short_and_says_how_to_extend(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = _study(small_dataset, [alice, bob], 2, rita)
    before = sorted(_pairs(study))
    answer = client_for(rita).post(reverse("study_annotators", args=[study.pk]), {"annotators": [carol.pk]})
    assert _messages(answer) == ["No item is short of k=2; tick 'extend' to give carol items beyond k."]
    assert sorted(_pairs(study)) == before
    assert study.annotators.filter(pk=carol.pk).exists()
    assert "Extend: if no item is short of k" in client_for(rita).get(reverse("study_detail", args=[study.pk])).text


def test_it_gives_the_new_annotator_every_item_beyond_k_when_asked_to_extend(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = _study(small_dataset, [alice, bob], 2, rita)
    items = StudyItem.objects.filter(study_task__study=study).count()
    answer = client_for(rita).post(
        reverse("study_annotators", args=[study.pk]), {"annotators": [carol.pk], "extend": "on"}
    )
    assert _messages(answer) == [f"carol got {items} items beyond k=2: those items now have more than k annotators."]
    pairs = _pairs(study)
    assert len(pairs) == len(set(pairs)) == 3 * items
    carols = list(Assignment.objects.filter(annotator=carol).order_by("position").values_list("position", flat=True))
    assert carols == list(range(1, items + 1))  # her queue in the order it was handed out
    assert client_for(carol).get(reverse("annotate_next")).url.startswith("/annotate/")


def test_it_does_not_count_a_removed_annotators_work_towards_k(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    study = _study(small_dataset, [alice, bob], 2, rita)
    bobs = list(Assignment.objects.filter(annotator=bob).order_by("position"))
    assignment_submit(assignment=bobs[0], user=bob, labels={"0": "no"})
    dave = make_user("dave", roles.ANNOTATOR)
    # Removing bob alone fails (no one else may take his items); adding dave first shows what is short.
    added = study_annotators_add(study=study, annotators=[dave])
    assert (added.assigned, added.extended, added.still_short) == (0, 0, 0)
    study_annotator_remove(study=study, annotator=bob)
    # dave took every one of bob's items, the submitted one too: bob's judgement no longer counts towards k.
    assert set(Assignment.objects.filter(annotator=dave).values_list("item_id", flat=True)) == {a.item_id for a in bobs}
    assert Assignment.objects.get(pk=bobs[0].pk).status == Assignment.Status.SUBMITTED
    pairs = _pairs(study)
    assert len(pairs) == len(set(pairs))


def test_it_tops_up_where_possible_and_says_how_many_items_stay_short(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = _study(small_dataset, [alice], 1, rita)
    items = StudyItem.objects.filter(study_task__study=study).count()
    Study.objects.filter(pk=study.pk).update(annotators_per_item=3)
    study.refresh_from_db()
    added = study_annotators_add(study=study, annotators=[bob])
    assert (added.assigned, added.extended, added.still_short) == (items, 0, items)
    answer = client_for(rita).post(reverse("study_annotators", args=[study.pk]), {"annotators": [carol.pk]})
    assert _messages(answer) == [f"carol got {items} items that were short of k=3."]


def test_it_tells_a_fresh_annotator_only_that_nothing_is_assigned_yet(carol: AbstractUser) -> None:
    client = client_for(carol)
    answer = client.get(reverse("annotate_next"), follow=True)
    page = answer.content.decode()
    assert "Nothing is assigned to you yet" in page
    assert "Everything assigned to you is done" not in page


def test_it_extends_without_showing_the_new_annotator_a_summary_in_two_tasks(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="apart",
            dataset=small_dataset,
            tasks=["factuality", "sentence_consistency"],
            annotators=[alice, bob],
            annotators_per_item=1,
            created_by=rita,
            one_task_per_summary=True,
        )
    ).study
    summaries = StudyItem.objects.filter(study_task__study=study).values("summary_id").distinct().count()
    added = study_annotators_add(study=study, annotators=[carol], extend=True)
    carols = list(Assignment.objects.filter(annotator=carol).values_list("item__summary_id", flat=True))
    assert added.extended == len(carols) == len(set(carols)) == summaries
