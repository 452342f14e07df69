"""The study page's agreement tallies (studies.models.AgreementTally, kept up to date by every submission)
give the figures of the full computation from every label, whatever happened to the study's work."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.analysis import StudyAgreement, study_agreement, study_agreement_cached, study_tallies
from corpus.models import Dataset
from crowd.models import CrowdCheck
from protocols.tasks import get_task
from studies.models import AgreementTally, Assignment, Study
from studies.selectors.participation import ACCEPTED, ALL, excluded_annotator_ids
from studies.selectors.studies import study_task_progress
from studies.services.participation import participation_exclude, participation_reinstate
from studies.services.studies import StudySpec, assignment_skip, assignment_submit, study_create
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db

VARIANTS = [(dont_know, judgements) for dont_know in (False, True) for judgements in (ACCEPTED, ALL)]


def page_inputs(study: Study) -> dict[str, Any]:
    study_tasks = list(study.tasks.all())
    return {
        "study_tasks": study_tasks,
        "progress": study_task_progress(study=study, study_tasks=study_tasks),
        "excluded": list(excluded_annotator_ids(study=study)),
    }


def shown(study: Study, dont_know: bool, judgements: str) -> tuple[StudyAgreement, bool]:
    """What the study page computes on a cache miss, and whether it read every label of a label task."""
    cache.clear()
    inputs = page_inputs(study)
    with CaptureQueriesContext(connection) as context:
        study_tallies(dont_know_as_incorrect=dont_know, judgements=judgements, **inputs)
    rebuilt = len(context.captured_queries) > 1  # more than the one read of the stored tallies
    agreement = study_agreement_cached(study=study, dont_know_as_incorrect=dont_know, judgements=judgements, **inputs)
    return agreement, rebuilt


def full(study: Study, dont_know: bool, judgements: str) -> StudyAgreement:
    return study_agreement(study_tasks=list(study.tasks.all()), dont_know_as_incorrect=dont_know, judgements=judgements)


@pytest.fixture
def three_task_study(
    scored_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> Study:
    """Label tasks with one unit per item (factuality), several (sentence_consistency, bertscore), "don't know"
    (bertscore), k = 3; and a span task, whose figures are computed from its labels as before."""
    study = study_create(
        spec=StudySpec(
            name="Tallied",
            dataset=scored_dataset,
            tasks=["factuality", "sentence_consistency", "bertscore", "hallucination_spans"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study
    # An attention check: its labels test the worker and are no data.
    CrowdCheck.objects.create(item=study.tasks.get(task="factuality").items.order_by("pk").first(), kind="researcher")
    return study


def random_work(rng: random.Random, assignment: Assignment) -> dict[str, Any]:
    """A complete submission: a random label per unit, and a note per unit where the task asks for one."""
    task = get_task(assignment.item.study_task.task)
    units = units_of(assignment)
    labels = {unit.index: rng.choice(task.choices).value for unit in units}
    return {"labels": labels, "notes": {unit.index: "why" for unit in units} if task.note_required else {}}


@pytest.mark.parametrize("seed", range(4))
def test_it_keeps_every_figure_equal_to_the_full_computation_through_random_work(
    three_task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser, seed: int
) -> None:
    """Property: random first submissions, resubmissions with other labels, skips, exclusions and
    reinstatements; after each, every variant of the page (don't know as incorrect or not, accepted or all
    work) equals the computation from every label, and after a submission no label is read again."""
    rng = random.Random(seed)
    study = three_task_study
    annotators = [alice, bob, carol]
    viewed: set[tuple[bool, str]] = set()  # the variants the page showed right after the previous change
    label_tasks = Assignment.objects.filter(item__study_task__study=study).exclude(
        item__study_task__task="hallucination_spans"
    )
    for step in range(40):
        action = rng.choice(["submit"] * 6 + ["skip", "exclude", "reinstate"])
        annotator = rng.choice(annotators)
        if action == "submit":
            open_or_done = label_tasks.filter(
                annotator=annotator, status__in=[Assignment.Status.ASSIGNED, Assignment.Status.SUBMITTED]
            ).select_related("item__study_task", "item__summary")
            assignment = rng.choice(list(open_or_done)) if open_or_done else None
            if assignment is None:
                continue
            try:
                assignment_submit(assignment=assignment, user=annotator, **random_work(rng, assignment))
            except (ValidationError, PermissionDenied):  # no longer theirs (excluded, taken back)
                continue
        elif action == "skip":
            assignment = label_tasks.filter(annotator=annotator, status=Assignment.Status.ASSIGNED).first()
            if assignment is None:
                continue
            assignment_skip(assignment_id=assignment.pk, user=annotator, reason="other", note="garbled")
        elif action == "exclude":
            participation_exclude(study=study, annotator=annotator, reason="spam", by=rita)
        else:
            participation_reinstate(study=study, annotator=annotator)
        # The page is not looked at after every change: submissions also arrive on a tally left behind by an
        # exclusion, and an exclusion undone must not revive it.
        if rng.random() < 0.4:
            viewed = set()
            continue
        for variant in VARIANTS:
            agreement, rebuilt = shown(study, *variant)
            assert agreement == full(study, *variant), (step, action, variant)
            if action == "submit" and variant in viewed:
                assert not rebuilt, (step, variant)
        viewed = set(VARIANTS)
    assert AgreementTally.objects.filter(study_task__study=study).count() == 3  # the label tasks
    assert any(kappa.n_items for kappa in full(study, False, ACCEPTED).tasks.values())


def test_it_does_not_revive_a_tally_when_an_exclusion_is_undone(
    three_task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    """Excluded, bob's labels are out of accepted work; a submission meanwhile changes the tally without them.
    Reinstated, the excluded annotators are those the tally was built with again: it must be built afresh."""
    study = three_task_study
    item = study.tasks.get(task="factuality").items.order_by("pk")[1]
    for annotator, label in ((alice, "yes"), (bob, "no"), (carol, "no")):
        assignment = Assignment.objects.get(item=item, annotator=annotator)
        assignment_submit(assignment=assignment, user=annotator, labels={0: label})
    assert shown(study, False, ACCEPTED)[0] == full(study, False, ACCEPTED)
    participation_exclude(study=study, annotator=bob, reason="spam", by=None)
    mine = Assignment.objects.get(item=item, annotator=alice)
    assignment_submit(assignment=mine, user=alice, labels={0: "no"})
    participation_reinstate(study=study, annotator=bob)
    agreement, rebuilt = shown(study, False, ACCEPTED)
    assert rebuilt and agreement == full(study, False, ACCEPTED)
    assert agreement.annotators["alice"].agreement_with_majority == 1.0


def test_it_shows_on_the_page_what_the_full_computation_gives_after_a_submission(
    three_task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    study = three_task_study
    client = client_for(rita)
    url = reverse("study_detail", args=[study.pk])
    item = study.tasks.get(task="bertscore").items.order_by("pk").first()
    for annotator, label in ((alice, "correct"), (bob, "correct"), (carol, "incorrect")):
        assignment = Assignment.objects.get(item=item, annotator=annotator)
        assignment_submit(assignment=assignment, user=annotator, labels={u.index: label for u in units_of(assignment)})
    client.get(url)  # stores the tallies
    second = study.tasks.get(task="bertscore").items.order_by("pk")[1]
    for annotator in (alice, bob, carol):
        assignment = Assignment.objects.get(item=second, annotator=annotator)
        assignment_submit(
            assignment=assignment, user=annotator, labels={u.index: "dont_know" for u in units_of(assignment)}
        )
    context = client.get(url).context
    expected = full(study, False, ACCEPTED)
    assert [task["agreement"] for task in context["tasks"]] == [expected.tasks[t.pk] for t in study.tasks.all()]
    carol_row = next(row for row in context["annotators"] if row["progress"].username == "carol")
    assert carol_row["agreement"] == expected.annotators["carol"]
    # carol disagreed with the other two on every word of the first item and agreed on every word of the second.
    first, second_units = len(units_of(assignment)), len(units_of(Assignment.objects.filter(item=item).first()))
    assert expected.annotators["carol"].agreement_with_majority == first / (first + second_units)


def test_it_never_stores_a_tally_that_misses_a_submission_made_while_it_was_built(
    three_task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    """A page reads the stored row, then every label; a submission that commits in between raises the row's
    version, and the page's tally (without that submission) is not stored: the next page builds afresh."""
    study = three_task_study
    study_task = study.tasks.get(task="factuality")
    inputs = page_inputs(study)
    seen = AgreementTally.objects.filter(study_task=study_task).first()
    assert seen is None
    # As if the page had read the labels here: a submission comes in, then the page stores what it read.
    assignment = Assignment.objects.filter(item__study_task=study_task, annotator=alice).last()
    assignment_submit(assignment=assignment, user=alice, labels={u.index: "yes" for u in units_of(assignment)})
    from stats.tally import LabelTally
    from studies.services.tallies import agreement_tally_store

    state = inputs["progress"][study_task.pk].submitted_state
    stored = agreement_tally_store(
        study_task=study_task, seen=seen, variant="0:accepted", tally=LabelTally(), state=state, excluded=[]
    )
    assert not stored and AgreementTally.objects.get(study_task=study_task).variants == {}
    # The same with a row already there: the version moved on.
    seen = AgreementTally.objects.get(study_task=study_task)
    assignment_submit(assignment=assignment, user=alice, labels={u.index: "no" for u in units_of(assignment)})
    stored = agreement_tally_store(
        study_task=study_task, seen=seen, variant="0:accepted", tally=LabelTally(), state=state, excluded=[]
    )
    assert not stored and AgreementTally.objects.get(study_task=study_task).variants == {}
    agreement, rebuilt = shown(study, False, ACCEPTED)
    assert rebuilt and agreement == full(study, False, ACCEPTED)
    assert AgreementTally.objects.get(study_task=study_task).variants.keys() == {"0:accepted"}


def test_it_builds_the_tallies_by_command_so_that_the_first_view_reads_no_label(
    three_task_study: Study, alice: AbstractUser, bob: AbstractUser
) -> None:
    import io

    from django.core.management import CommandError, call_command

    study = three_task_study
    for annotator in (alice, bob):
        for assignment in Assignment.objects.filter(item__study_task__study=study, annotator=annotator)[:6]:
            if get_task(assignment.item.study_task.task).spans:
                continue
            assignment_submit(
                assignment=assignment, user=annotator, **random_work(random.Random(assignment.pk), assignment)
            )
    participation_exclude(study=study, annotator=bob, reason="spam", by=None)
    out = io.StringIO()
    call_command("agreement_tallies", "--study", str(study.pk), stdout=out)
    assert f"study {study.pk} (Tallied): 3 label task(s) up to date" in out.getvalue()
    for tally in AgreementTally.objects.filter(study_task__study=study):
        assert tally.variants.keys() == {"0:accepted", "0:all", "1:accepted", "1:all"}
    for variant in VARIANTS:
        agreement, rebuilt = shown(study, *variant)
        assert not rebuilt and agreement == full(study, *variant)
    with pytest.raises(CommandError, match="no study with id 999999"):
        call_command("agreement_tallies", "--study", "999999", stdout=out)
