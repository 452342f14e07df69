"""The crowd services: public studies, worker arrival, phases, training, pull-based assignment and the checks
that act (issue 14, points 1-6 and 8)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import PermissionDenied, ValidationError

from analysis.selectors.analysis import submitted_assignments
from analysis.selectors.exports import study_judgement_rows
from common import roles
from corpus.models import Dataset, Document, Summary
from crowd.models import CrowdCheck, CrowdItemRecord, CrowdStudy, CrowdWorker
from crowd.services.assignment import check_due, crowd_item_next, crowd_paste_record, crowd_work_evaluate
from crowd.services.workers import (
    ArrivalError,
    crowd_annotation_done,
    crowd_consent,
    crowd_end_code,
    crowd_instructions_read,
    crowd_survey_answer,
    crowd_training_answer,
    crowd_worker_arrive,
)
from review.selectors.quality import study_quality
from studies.models import Assignment, Participation, Study
from studies.services.participation import participation_exclude
from studies.services.studies import assignment_submit
from tests.crowd.factories import crowd_study_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd(small_dataset: Dataset, rita: AbstractUser) -> CrowdStudy:
    return crowd_study_make(small_dataset, rita).crowd


def arrive(crowd: CrowdStudy, pid: str = "5f1e2d3c4b5a69788796a5b4") -> CrowdWorker:
    worker, _ = crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": "x1"})
    return worker


def to_annotation(worker: CrowdWorker) -> CrowdWorker:
    worker = crowd_consent(worker=worker, accepted=True)
    worker = crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "Yes", "news": ["Online"]})
    worker = crowd_instructions_read(worker=worker)
    for item in worker.crowd_study.training_items.order_by("position"):
        crowd_training_answer(worker=worker, item_id=item.pk, answer=item.expected)
    worker.refresh_from_db()
    assert worker.phase == "annotation"
    return worker


def submit(assignment: Assignment, label: str, seconds: float = 30.0) -> None:
    assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": label}, seconds=seconds)


def test_it_creates_a_public_study_that_needs_no_annotators(crowd: CrowdStudy) -> None:
    study = crowd.study
    assert study.pull_based and not study.annotators.exists()
    assert not Assignment.objects.filter(item__study_task__study=study).exists()
    assert crowd.platform == "prolific" and crowd.worker_param == "PROLIFIC_PID"
    assert crowd.completion_url == "https://app.prolific.com/submissions/complete?cc={code}"
    assert crowd.training_items.count() == 2 and len(crowd.key) >= 20
    checks = CrowdCheck.objects.filter(item__study_task__study=study)
    assert {check.expected for check in checks} == {"faithful", "unfaithful"}
    assert {check.kind for check in checks} <= {"verbatim", "fusion"}
    # The check summaries live on copies of the documents, in a dataset of their own: the study's stays as it was.
    assert not Summary.objects.filter(document__dataset=study.dataset, meta__crowd_check=study.pk).exists()
    copies = {check.item.summary.document for check in checks}
    assert {d.dataset.source_format for d in copies} == {"crowd checks"}
    assert all(d.text == Document.objects.get(pk=d.meta["copy_of"]).text for d in copies)


def test_it_refuses_bad_crowd_settings_by_field_and_writes_nothing(small_dataset: Dataset, rita: AbstractUser) -> None:
    with pytest.raises(ValidationError) as error:
        crowd_study_make(
            small_dataset,
            rita,
            phases=["consent", "end"],
            failure_code="DONE1234",
            completion_url="javascript:alert(1)",
            check_rate=0.9,
            pre_survey=[{"key": "Bad Key", "text": "", "kind": "slider"}],
        )
    fields = error.value.message_dict
    assert {"phases", "failure_code", "completion_url", "check_rate", "pre_survey"} <= set(fields)
    assert not Study.objects.filter(kind="study").exists() and not CrowdStudy.objects.exists()


def test_it_creates_a_worker_without_password_and_resumes_them(crowd: CrowdStudy) -> None:
    worker = arrive(crowd)
    user = worker.user
    assert not user.has_usable_password() and roles.user_has_role(user, roles.CROWD)
    assert not roles.user_is_annotator(user) and not roles.user_is_researcher(user)
    participation = Participation.objects.get(study=crowd.study, annotator=user)
    assert (participation.platform, participation.external_id) == ("prolific", "5f1e2d3c4b5a69788796a5b4")
    assert (worker.platform_study_id, worker.platform_session_id, worker.phase) == ("s1", "x1", "consent")
    again, new = crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": "5f1e2d3c4b5a69788796a5b4"})
    assert again.pk == worker.pk and not new


@pytest.mark.parametrize("pid", ["", "a b", "x" * 101, "a\x00b", "<script>", "ü"])
def test_it_refuses_a_missing_or_malformed_worker_id(crowd: CrowdStudy, pid: str) -> None:
    with pytest.raises(ArrivalError):
        crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": pid})
    assert not CrowdWorker.objects.exists()


def test_it_makes_a_worker_id_of_another_study_a_separate_identity(
    small_dataset: Dataset, rita: AbstractUser, crowd: CrowdStudy
) -> None:
    other = crowd_study_make(small_dataset, rita).crowd
    first, second = arrive(crowd), arrive(other)
    assert first.user_id != second.user_id
    assert not Participation.objects.filter(study=other.study, annotator=first.user).exists()


def test_it_takes_no_new_worker_when_the_study_is_closed(crowd: CrowdStudy) -> None:
    worker = arrive(crowd)
    crowd.public = False
    crowd.save()
    assert arrive(crowd).pk == worker.pk  # who started may finish
    with pytest.raises(ArrivalError, match="closed"):
        arrive(crowd, "another")


def test_it_keeps_the_order_of_the_phases_and_checks_the_answers(crowd: CrowdStudy) -> None:
    worker = arrive(crowd)
    with pytest.raises(PermissionDenied):
        crowd_instructions_read(worker=worker)
    with pytest.raises(ValidationError):
        crowd_consent(worker=worker, accepted="yes")
    worker = crowd_consent(worker=worker, accepted=True)
    with pytest.raises(ValidationError) as error:
        crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "Maybe", "news": ["TV"]})
    assert set(error.value.message_dict) == {"english", "news"}
    worker = crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "No", "news": ["Paper"]})
    assert worker.survey_answers == {"pre_survey": {"english": "No", "news": ["Paper"]}}
    assert worker.phase == "instructions"
    with pytest.raises(PermissionDenied):
        crowd_end_code(worker=worker)  # no code before the end


def test_it_lets_a_worker_retry_the_training_and_screens_out_after_the_last_attempt(crowd: CrowdStudy) -> None:
    worker = arrive(crowd)
    worker = crowd_consent(worker=worker, accepted=True)
    worker = crowd_survey_answer(worker=worker, survey="pre_survey", answers={"english": "Yes", "news": ["None"]})
    worker = crowd_instructions_read(worker=worker)
    first, second = crowd.training_items.order_by("position")
    assert crowd_training_answer(worker=worker, item_id=first.pk, answer="faithful").correct
    with pytest.raises(ValidationError):
        crowd_training_answer(worker=worker, item_id=first.pk, answer="faithful")  # answered already
    feedback = crowd_training_answer(worker=worker, item_id=second.pk, answer="faithful")
    assert feedback.finished and feedback.passed is False and not feedback.correct
    worker.refresh_from_db()
    assert (worker.phase, worker.training_attempt, worker.status) == ("training", 2, "active")
    crowd_training_answer(worker=worker, item_id=first.pk, answer="unfaithful")
    crowd_training_answer(worker=worker, item_id=second.pk, answer="unfaithful")
    worker.refresh_from_db()
    assert (worker.status, worker.phase) == ("screened_out", "end")
    assert crowd_end_code(worker=worker) == ("SCREEN99", "https://app.prolific.com/submissions/complete?cc=SCREEN99")
    assert [result["passed"] for result in worker.training_results] == [False, False]


def test_it_gives_the_item_furthest_from_k_and_never_a_summary_twice(crowd: CrowdStudy) -> None:
    first, second = to_annotation(arrive(crowd, "w1")), to_annotation(arrive(crowd, "w2"))
    a = crowd_item_next(worker=first)
    assert crowd_item_next(worker=first).pk == a.pk  # the open item again (a second tab, a reload)
    assert not hasattr(a.item, "crowd_check")  # the first item is no check
    b = crowd_item_next(worker=second)
    assert b.item_id != a.item_id  # held items count: the other worker gets an untouched one
    submit(a, "yes")
    check = crowd_item_next(worker=first)
    assert CrowdCheck.objects.filter(item=check.item).exists()  # every second item is a check
    submit(check, "yes")
    seen = {a.item.summary_id, check.item.summary_id}
    third = crowd_item_next(worker=first)
    assert third.item.summary_id not in seen and not CrowdCheck.objects.filter(item=third.item).exists()


def test_it_counts_only_accepted_work_towards_k_and_returns_abandoned_items(crowd: CrowdStudy) -> None:
    crowd.check_rate = 0
    crowd.max_items_per_worker = 100
    crowd.save()
    workers = [to_annotation(arrive(crowd, f"w{n}")) for n in range(3)]
    held = crowd_item_next(worker=workers[0])
    Assignment.objects.filter(pk=held.pk).update(touched_at=held.touched_at.replace(year=2000))
    taken = crowd_item_next(worker=workers[1])
    assert Assignment.objects.get(pk=held.pk).status == "reclaimed"  # timed out: back in the pool
    assert taken.item_id == held.item_id
    submit(taken, "yes")
    participation_exclude(study=crowd.study, annotator=workers[1].user, reason="test", by=None)
    # The excluded worker's judgement does not count: the item is still furthest from k.
    assert crowd_item_next(worker=workers[2]).item_id == taken.item_id


def test_it_stops_at_the_per_worker_maximum(crowd: CrowdStudy) -> None:
    crowd.check_rate = 0
    crowd.max_items_per_worker = 2
    crowd.save()
    worker = to_annotation(arrive(crowd))
    for _ in range(2):
        submit(crowd_item_next(worker=worker), "yes")
    assert crowd_item_next(worker=worker) is None


def test_it_spreads_checks_evenly() -> None:
    assert [check_due(0.5, n) for n in range(6)] == [False, True, False, True, False, True]
    assert [check_due(0.25, n) for n in range(8)].count(True) == 2
    assert not any(check_due(0, n) for n in range(10))


def test_it_warns_then_blocks_a_worker_who_fails_checks_and_freezes_the_outcome(crowd: CrowdStudy) -> None:
    worker = to_annotation(arrive(crowd))
    submit(crowd_item_next(worker=worker), "yes")
    check = crowd_item_next(worker=worker)
    failing = "no" if check.item.crowd_check.expected == "faithful" else "yes"
    submit(check, failing)
    evaluation = crowd_work_evaluate(worker=worker)
    assert evaluation.decision.action == "warn" and evaluation.new_warnings and not evaluation.ended
    submit(check, "yes" if failing == "no" else "no")  # a resubmission cannot change a graded check
    assert CrowdItemRecord.objects.get(assignment=check).check_passed is False
    assert crowd_work_evaluate(worker=worker).new_warnings == []  # the notice is shown once
    submit(crowd_item_next(worker=worker), "yes")
    second = crowd_item_next(worker=worker)
    submit(second, "no" if second.item.crowd_check.expected == "faithful" else "yes")
    open_item = crowd_item_next(worker=worker)  # the block is decided before the next item is handed out
    assert open_item is not None and crowd_work_evaluate(worker=worker).ended
    worker.refresh_from_db()
    assert (worker.status, worker.phase) == ("blocked", "end")
    participation = worker.participation
    participation.refresh_from_db()
    assert participation.excluded and "attention" in participation.excluded_reason
    assert Assignment.objects.get(pk=open_item.pk).status == "reclaimed"  # back to the pool, kept on record
    assert Assignment.objects.filter(annotator=worker.user, status="submitted").count() == 4  # kept
    assert crowd_end_code(worker=worker)[0] == "FAIL0000"
    with pytest.raises(PermissionDenied):
        submit(check, "yes")  # no longer an annotator of the study


def test_it_acts_on_the_time_floor_and_records_pastes(crowd: CrowdStudy) -> None:
    crowd.min_seconds = {"factuality": 10}
    crowd.check_rate = 0
    crowd.save()
    worker = to_annotation(arrive(crowd))
    assignment = crowd_item_next(worker=worker)
    assert crowd_paste_record(worker=worker, assignment_id=assignment.pk) == 1
    other = to_annotation(arrive(crowd, "other"))
    with pytest.raises(Assignment.DoesNotExist):
        crowd_paste_record(worker=other, assignment_id=assignment.pk)  # not theirs
    submit(assignment, "yes", seconds=2)
    decision = crowd_work_evaluate(worker=worker).decision
    assert decision.action == "warn"
    assert {flag.kind for flag in decision.flags} == {"fast", "paste"}


def test_it_completes_with_the_completion_code(crowd: CrowdStudy) -> None:
    crowd.check_rate = 0
    crowd.max_items_per_worker = 1
    crowd.save()
    worker = to_annotation(arrive(crowd))
    submit(crowd_item_next(worker=worker), "yes")
    assert crowd_item_next(worker=worker) is None
    worker = crowd_annotation_done(worker=worker)
    assert worker.phase == "post_survey"
    worker = crowd_survey_answer(worker=worker, survey="post_survey", answers={"clear": "Agree"})
    assert (worker.status, worker.phase) == ("completed", "end")
    assert crowd_end_code(worker=worker) == ("DONE1234", "https://app.prolific.com/submissions/complete?cc=DONE1234")


def test_it_skips_phases_without_content(small_dataset: Dataset, rita: AbstractUser) -> None:
    crowd = crowd_study_make(
        small_dataset, rita, consent_text="", phases=["annotation", "end"], pre_survey=[], training=[]
    ).crowd
    assert arrive(crowd).phase == "annotation"


def test_the_worker_quality_page_reads_the_crowd_checks_and_pastes(crowd: CrowdStudy) -> None:
    worker = to_annotation(arrive(crowd))
    first = crowd_item_next(worker=worker)
    crowd_paste_record(worker=worker, assignment_id=first.pk)
    submit(first, "yes")
    check = crowd_item_next(worker=worker)
    submit(check, "no" if check.item.crowd_check.expected == "faithful" else "yes")  # fails the check
    crowd_work_evaluate(worker=worker)
    quality = study_quality(study=crowd.study)
    row = next(row for row in quality.workers if row.user_id == worker.user_id)
    assert (row.checks_graded, row.checks_passed, row.pasted_items) == (1, 0, 1)
    assert quality.live.check_failure_rate == 1.0


def test_the_analyses_and_exports_leave_the_attention_checks_out(crowd: CrowdStudy) -> None:
    worker = to_annotation(arrive(crowd))
    submit(crowd_item_next(worker=worker), "yes")
    check = crowd_item_next(worker=worker)
    submit(check, "yes")
    assert CrowdCheck.objects.filter(item=check.item).exists()
    analysed = set(submitted_assignments(study=crowd.study).values_list("pk", flat=True))
    submitted = set(Assignment.objects.filter(annotator=worker.user, status="submitted").values_list("pk", flat=True))
    assert analysed == submitted - {check.pk} and len(analysed) == 1
    exported = {row["summary_id"] for row in study_judgement_rows(study=crowd.study)}
    assert check.item.summary_id not in exported and exported
