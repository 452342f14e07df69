from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from common import roles
from corpus.models import Dataset
from studies.models import Assignment, StudyItem
from studies.selectors.selection import ItemSelection
from studies.services.studies import StudySpec, assignments_distribute, study_create
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotators(db: None) -> list[AbstractUser]:
    return [make_user(f"annotator{i}", roles.ANNOTATOR) for i in range(5)]


def test_it_gives_each_item_to_exactly_k_distinct_annotators_with_balanced_load(
    scored_dataset: Dataset, annotators: list[AbstractUser], rita: AbstractUser
) -> None:
    plan = study_create(
        spec=StudySpec(
            name="s",
            dataset=scored_dataset,
            tasks=["bertscore"],
            annotators=annotators,
            annotators_per_item=3,
            created_by=rita,
        )
    )
    # 7 summaries, one empty (no score): 6 items.
    assert plan.items == 6 and plan.skipped == {"bertscore": 1}
    for item in StudyItem.objects.filter(study_task__study=plan.study):
        annotator_ids = list(item.assignments.values_list("annotator_id", flat=True))
        assert len(annotator_ids) == 3 == len(set(annotator_ids))
    load = Counter(Assignment.objects.filter(item__study_task__study=plan.study).values_list("annotator_id", flat=True))
    assert sum(load.values()) == 18
    assert max(load.values()) - min(load.values()) <= 1
    assert set(load) == {a.pk for a in annotators}
    assert list(plan.study.researchers.all()) == [rita]


def test_it_samples_a_seeded_random_subset(scored_dataset: Dataset, annotators: list[AbstractUser]) -> None:
    def sample(seed: int) -> list[int]:
        plan = study_create(
            spec=StudySpec(
                name=f"s{seed}",
                dataset=scored_dataset,
                tasks=["bertscore"],
                annotators=annotators,
                annotators_per_item=2,
                created_by=None,
                selection=ItemSelection(mode="random", size=3, seed=seed),
            )
        )
        return sorted(StudyItem.objects.filter(study_task__study=plan.study).values_list("summary_id", flat=True))

    first = sample(7)
    assert len(first) <= 3
    assert sample(7) == first


def test_it_tops_items_up_when_annotators_join_a_running_study(
    scored_dataset: Dataset, annotators: list[AbstractUser]
) -> None:
    plan = study_create(
        spec=StudySpec(
            name="s",
            dataset=scored_dataset,
            tasks=["bertscore"],
            annotators=annotators[:2],
            annotators_per_item=2,
            created_by=None,
        )
    )
    study = plan.study
    study.annotators_per_item = 3
    study.save()
    study.annotators.add(*annotators[2:])
    created = assignments_distribute(study=study)
    assert created == plan.items
    for item in StudyItem.objects.filter(study_task__study=study):
        assert item.assignments.count() == 3


def test_it_refuses_fewer_annotators_than_k(scored_dataset: Dataset, annotators: list[AbstractUser]) -> None:
    with pytest.raises(ValidationError, match="3 annotators per item need at least that many annotators"):
        study_create(
            spec=StudySpec(
                name="s",
                dataset=scored_dataset,
                tasks=["bertscore"],
                annotators=annotators[:2],
                annotators_per_item=3,
                created_by=None,
            )
        )


def test_it_asks_to_score_first(small_dataset: Dataset, annotators: list[AbstractUser]) -> None:
    with pytest.raises(
        ValidationError, match=re.escape('no bertscore explanation; run: python manage.py score --dataset "small"')
    ):
        study_create(
            spec=StudySpec(
                name="s",
                dataset=small_dataset,
                tasks=["bertscore"],
                annotators=annotators,
                annotators_per_item=2,
                created_by=None,
            )
        )


def test_it_creates_a_study_from_the_command_line(
    scored_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    out = io.StringIO()
    call_command(
        "create_study",
        "--dataset",
        "small",
        "--name",
        "cli",
        "--task",
        "bertscore",
        "--annotators",
        "alice,bob",
        "--k",
        "2",
        "--researcher",
        "rita",
        stdout=out,
    )
    assert "6 items, 12 assignments" in out.getvalue()
    with pytest.raises(CommandError, match="Unknown annotators: zed"):
        call_command(
            "create_study",
            "--dataset",
            "small",
            "--name",
            "cli",
            "--task",
            "bertscore",
            "--annotators",
            "alice,zed",
            "--k",
            "1",
        )
