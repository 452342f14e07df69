"""An annotator's standing in a study: excluding keeps the work and can be undone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from studies.models import Assignment, Judgement, Participation
from studies.selectors.participation import excluded_annotator_ids
from studies.services.participation import (
    participation_exclude,
    participation_get_or_create,
    participation_reinstate,
)
from studies.services.studies import assignment_submit
from tests.conftest import units_of


def test_it_excludes_an_annotator_keeping_their_work_and_taking_back_open_items(
    bertscore_study: Any, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    first = Assignment.objects.filter(annotator=alice).order_by("position").first()
    assert first is not None
    assignment_submit(assignment=first, user=alice, labels={unit.index: "correct" for unit in units_of(first)})
    open_before = Assignment.objects.filter(annotator=alice, status=Assignment.Status.ASSIGNED).count()
    assert open_before > 0

    participation = participation_exclude(study=bertscore_study, annotator=alice, reason=" too fast ", by=rita)

    assert participation.excluded and participation.excluded_reason == "too fast"
    assert participation.excluded_by == rita and participation.excluded_at is not None
    assert list(excluded_annotator_ids(study=bertscore_study)) == [alice.pk]
    assert not Assignment.objects.filter(annotator=alice, status=Assignment.Status.ASSIGNED).exists()
    assert Judgement.objects.filter(assignment=first).exists()
    assert Assignment.objects.filter(annotator=bob, status=Assignment.Status.ASSIGNED).exists()

    participation_reinstate(study=bertscore_study, annotator=alice)
    assert list(excluded_annotator_ids(study=bertscore_study)) == []
    assert Participation.objects.get(study=bertscore_study, annotator=alice).excluded_reason == ""


@pytest.mark.parametrize("reason", ["", "   ", "a\x00b", "x" * 2001, 42])
def test_it_refuses_an_exclusion_without_a_storable_reason_and_changes_nothing(
    bertscore_study: Any, alice: AbstractUser, rita: AbstractUser, reason: Any
) -> None:
    open_before = Assignment.objects.filter(annotator=alice, status=Assignment.Status.ASSIGNED).count()
    with pytest.raises(ValidationError) as raised:
        participation_exclude(study=bertscore_study, annotator=alice, reason=reason, by=rita)
    assert "reason" in raised.value.message_dict
    assert not Participation.objects.filter(excluded=True).exists()
    assert Assignment.objects.filter(annotator=alice, status=Assignment.Status.ASSIGNED).count() == open_before


def test_it_keeps_one_standing_per_annotator_and_one_per_platform_worker_id(
    bertscore_study: Any, alice: AbstractUser, bob: AbstractUser
) -> None:
    first = participation_get_or_create(
        study=bertscore_study, annotator=alice, platform=Participation.Platform.PROLIFIC, external_id="P1"
    )
    assert participation_get_or_create(study=bertscore_study, annotator=alice).pk == first.pk
    with pytest.raises(ValidationError):
        participation_get_or_create(study=bertscore_study, annotator=bob, platform="myspace")
    with pytest.raises(IntegrityError), transaction.atomic():
        Participation.objects.create(
            study=bertscore_study, annotator=bob, platform=Participation.Platform.PROLIFIC, external_id="P1"
        )
