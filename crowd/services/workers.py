"""Crowd workers: arriving by the public link, the phases they go through (consent, surveys, instructions,
training, annotation, end) and how their session ends (completed, screened out, blocked)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.services import role_group
from common import roles
from common.validation import InputError, printable, storable_text
from crowd.models import (
    ANNOTATION,
    CONSENT,
    END,
    INSTRUCTIONS,
    POST_SURVEY,
    PRE_SURVEY,
    TRAINING,
    CrowdStudy,
    CrowdWorker,
    TrainingItem,
)
from protocols.platform_status import WORKER_ID
from protocols.tasks import EXPECTATIONS
from studies.models import Assignment, StudyCondition
from studies.services.conditions import annotator_condition_orders
from studies.services.participation import participation_exclude, participation_get_or_create
from studies.services.studies import study_annotator_remove

MAX_ANSWER_CHARS = 2000
SURVEYS = (PRE_SURVEY, POST_SURVEY)


class ArrivalError(ValueError):
    """A link that cannot start a session: `message` says what is wrong in the worker's words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StudyClosed(ArrivalError):
    """The researcher closed the link (made the study private): nobody new starts."""


def platform_id(value: Any, *, name: str, required: bool) -> str:
    """The checked value of a link parameter (a worker, study or session id)."""
    if value is None or value == "":
        if required:
            raise ArrivalError(f"The link has no {name} parameter: open the study from your platform's page.")
        return ""
    if not isinstance(value, str) or not WORKER_ID.fullmatch(value):
        raise ArrivalError(
            f"The link's {name} parameter is not a valid id (1-100 letters, digits, - or _): "
            "open the study from your platform's page."
        )
    return value


def _username(crowd: CrowdStudy, external_id: str) -> str:
    """Workers are namespaced by study: the same platform id in two studies is two separate identities."""
    digest = hashlib.sha256(f"{crowd.platform}:{external_id}".encode()).hexdigest()[:32]
    return f"crowd-{crowd.study_id}-{digest}"


def _content(crowd: CrowdStudy, phase: str) -> bool:
    """Whether a phase has anything to show (an empty survey or training is passed over)."""
    if phase == CONSENT:
        return bool(crowd.consent_text.strip())
    if phase in SURVEYS:
        return bool(getattr(crowd, phase))
    if phase == TRAINING:
        return crowd.training_items.exists()
    return True


def _phase_after(crowd: CrowdStudy, phase: str | None) -> str:
    phases = list(crowd.phases)
    following = phases[phases.index(phase) + 1 :] if phase in phases else phases
    return next((candidate for candidate in following if _content(crowd, candidate)), END)


@transaction.atomic
def crowd_worker_arrive(*, crowd: CrowdStudy, params: Mapping[str, Any]) -> tuple[CrowdWorker, bool]:
    """The worker the link's parameters name: created with their account (no password), their Participation
    (platform and worker id) and their first phase, or found again (returning workers resume). Returns the
    worker and whether they are new. ArrivalError for a missing or malformed id or a closed study."""
    external_id = platform_id(params.get(crowd.worker_param), name=crowd.worker_param, required=True)
    study_id = platform_id(params.get(crowd.study_param), name=crowd.study_param, required=False)
    session_id = platform_id(params.get(crowd.session_param), name=crowd.session_param, required=False)
    # One arrival of a study at a time: two tabs of a new worker create one worker, not two.
    locked = CrowdStudy.objects.select_for_update().select_related("study").get(pk=crowd.pk)
    existing = (
        CrowdWorker.objects.select_related("participation", "crowd_study__study", "user")
        .filter(
            crowd_study=locked,
            participation__platform=locked.platform,
            participation__external_id=external_id,
        )
        .first()
    )
    if existing is not None:
        return existing, False
    if not locked.public:
        raise StudyClosed(
            "This study is closed: it takes no new participants. Return to your platform's page; you have not "
            "started this study, so there is nothing to submit."
        )
    user = get_user_model()(username=_username(locked, external_id), is_active=True)
    user.set_unusable_password()
    user.save()
    user.groups.add(role_group(roles.CROWD))
    locked.study.annotators.add(user)
    participation = participation_get_or_create(
        study=locked.study, annotator=user, platform=locked.platform, external_id=external_id
    )
    worker = CrowdWorker.objects.create(
        crowd_study=locked,
        user=user,
        participation=participation,
        platform_study_id=study_id,
        platform_session_id=session_id,
        phase=_phase_after(locked, None),
    )
    return worker, True


def _in_phase(worker: CrowdWorker, phase: str) -> None:
    if worker.status != CrowdWorker.Status.ACTIVE:
        raise PermissionDenied("Your session has ended.")
    if worker.phase != phase:
        raise PermissionDenied(f"This step is not open now (you are at: {worker.phase}).")


def _advance(worker: CrowdWorker) -> None:
    worker.phase = _phase_after(worker.crowd_study, worker.phase)
    if worker.phase == END and worker.status == CrowdWorker.Status.ACTIVE:
        worker.status = CrowdWorker.Status.COMPLETED
        worker.finished_at = timezone.now()
    worker.save(update_fields=["phase", "status", "finished_at", "last_seen_at"])


def _locked(worker: CrowdWorker) -> CrowdWorker:
    """The worker's row, locked (two tabs answering at once are taken one after the other)."""
    return (
        CrowdWorker.objects.select_for_update(of=("self",))
        .select_related("crowd_study__study", "user")
        .get(pk=worker.pk)
    )


@transaction.atomic
def crowd_consent(*, worker: CrowdWorker, accepted: Any) -> CrowdWorker:
    """The worker accepts the consent text (they must, to go on)."""
    worker = _locked(worker)
    _in_phase(worker, CONSENT)
    if accepted is not True:
        raise ValidationError({"accept": "Tick the box to say that you consent, or close the page to leave."})
    worker.consented_at = timezone.now()
    worker.save(update_fields=["consented_at", "last_seen_at"])
    _advance(worker)
    return worker


def survey_answers_clean(questions: list[dict[str, Any]], answers: Mapping[str, Any]) -> dict[str, Any]:
    """The checked answers to a survey: single and Likert one of the choices, multiple a list of them,
    text storable text; a required question must be answered. ValidationError keyed by question."""
    problems: dict[str, list[str]] = {}
    cleaned: dict[str, Any] = {}
    for question in questions:
        key, kind, choices = question["key"], question["kind"], question["choices"]
        value = answers.get(key)
        if kind == "multiple":
            values = value if isinstance(value, list) else ([] if value in (None, "") else [value])
            if any(choice not in choices for choice in values):
                problems[key] = ["Choose among the answers given."]
            elif question["required"] and not values:
                problems[key] = ["Choose at least one answer."]
            else:
                cleaned[key] = [choice for choice in choices if choice in values]
            continue
        if value in (None, ""):
            if question["required"]:
                problems[key] = ["Answer this question."]
            continue
        if kind in ("single", "likert"):
            if value not in choices:
                problems[key] = ["Choose one of the answers given."]
            else:
                cleaned[key] = value
            continue
        try:
            cleaned[key] = storable_text(value, field=key, max_chars=MAX_ANSWER_CHARS).strip()
        except InputError as exc:
            problems[key] = [exc.message]
    unknown = sorted(set(answers) - {question["key"] for question in questions})
    if unknown:
        problems["answers"] = [f"Unknown questions: {printable(', '.join(map(str, unknown)))}."]
    if problems:
        raise ValidationError(problems)
    return cleaned


@transaction.atomic
def crowd_survey_answer(*, worker: CrowdWorker, survey: str, answers: Mapping[str, Any]) -> CrowdWorker:
    """Store the worker's answers to the pre- or post-survey and go on."""
    if survey not in SURVEYS:
        raise ValidationError({"survey": f"No survey {printable(str(survey))!r}."})
    worker = _locked(worker)
    _in_phase(worker, survey)
    cleaned = survey_answers_clean(getattr(worker.crowd_study, survey), answers)
    worker.survey_answers = {**worker.survey_answers, survey: cleaned}
    worker.save(update_fields=["survey_answers", "last_seen_at"])
    _advance(worker)
    return worker


@transaction.atomic
def crowd_worker_condition(*, worker: CrowdWorker) -> StudyCondition | None:
    """The condition the worker's instructions are shown in: their one condition (between annotators) or
    their first block's (within), chosen now if not yet (None: the study has no conditions). Chosen before
    the first item so that the examples and guidelines they read are those of the arm they will work in."""
    study = worker.crowd_study.study
    conditions = list(study.conditions.all())
    if not conditions:
        return None
    return annotator_condition_orders(study=study, annotators=[worker.user], conditions=conditions)[worker.user_id][0]


@transaction.atomic
def crowd_instructions_read(*, worker: CrowdWorker) -> CrowdWorker:
    worker = _locked(worker)
    _in_phase(worker, INSTRUCTIONS)
    _advance(worker)
    return worker


@transaction.atomic
def crowd_annotation_done(*, worker: CrowdWorker) -> CrowdWorker:
    """The annotation phase is over (no item left for the worker): on to the next phase."""
    worker = _locked(worker)
    _in_phase(worker, ANNOTATION)
    _advance(worker)
    return worker


@dataclass(frozen=True)
class TrainingFeedback:
    """What the worker sees after a training answer."""

    item: TrainingItem
    answer: str
    correct: bool
    finished: bool  # the attempt's last item
    passed: bool | None  # when finished: whether the attempt passed
    attempt: int
    attempts: int
    correct_count: int
    total: int


def training_passed(crowd: CrowdStudy, *, correct: int, total: int) -> bool:
    mistakes = total - correct
    if crowd.training_rule == CrowdStudy.PassRule.MIN_CORRECT:
        return correct >= crowd.training_value
    if crowd.training_rule == CrowdStudy.PassRule.MAX_MISTAKES:
        return mistakes <= crowd.training_value
    return mistakes == 0


@transaction.atomic
def crowd_training_answer(*, worker: CrowdWorker, item_id: Any, answer: Any) -> TrainingFeedback:
    """The worker's answer to the training item shown to them (the first one they have not answered in this
    attempt). After the attempt's last item the pass rule decides: passed, go on; failed with attempts left,
    start again; failed with none left, the session ends with the screen-out code."""
    worker = _locked(worker)
    _in_phase(worker, TRAINING)
    crowd = worker.crowd_study
    items = list(crowd.training_items.order_by("position", "pk"))
    answered = {int(key): value for key, value in worker.training_answers.items()}
    current = next((item for item in items if item.pk not in answered), None)
    if current is None or item_id != current.pk:
        raise ValidationError({"item": "This is not the training item shown to you; reload the page."})
    if answer not in EXPECTATIONS:
        raise ValidationError({"answer": "Choose whether the summary is faithful or not."})
    answered[current.pk] = answer
    worker.training_answers = {str(key): value for key, value in answered.items()}
    finished = len(answered) == len(items)
    correct_count = sum(1 for item in items if answered.get(item.pk) == item.expected)
    passed = training_passed(crowd, correct=correct_count, total=len(items)) if finished else None
    attempt = worker.training_attempt
    fields = ["training_answers", "last_seen_at"]
    if finished:
        worker.training_results = [
            *worker.training_results,
            {"attempt": attempt, "correct": correct_count, "total": len(items), "passed": passed},
        ]
        fields.append("training_results")
    worker.save(update_fields=fields)
    if finished and passed:
        _advance(worker)
    elif finished and attempt < crowd.training_attempts:
        worker.training_attempt += 1
        worker.training_answers = {}
        worker.save(update_fields=["training_attempt", "training_answers", "last_seen_at"])
    elif finished:
        crowd_worker_end(
            worker=worker,
            status=CrowdWorker.Status.SCREENED_OUT,
            reason=f"failed the training {attempt} time(s)",
        )
    return TrainingFeedback(
        item=current,
        answer=answer,
        correct=answer == current.expected,
        finished=finished,
        passed=passed,
        attempt=attempt,
        attempts=crowd.training_attempts,
        correct_count=correct_count,
        total=len(items),
    )


def assignments_reclaim(assignments: QuerySet[Assignment]) -> int:
    """Open items go back to the pool, kept as reclaimed (who held them and for how long stays on record)."""
    return assignments.filter(status=Assignment.Status.ASSIGNED).update(
        status=Assignment.Status.RECLAIMED, updated_at=timezone.now()
    )


ENDINGS = (CrowdWorker.Status.SCREENED_OUT, CrowdWorker.Status.BLOCKED, CrowdWorker.Status.LEFT)


@transaction.atomic
def crowd_worker_end(*, worker: CrowdWorker, status: str, reason: str) -> CrowdWorker:
    """End the worker's session: screened out (training), blocked (checks) or left (the platform says they
    returned the study, timed out or were rejected). The worker leaves the study's annotators: their open
    items go back to the pool, their submitted work stays. A blocked worker is also excluded from the study's
    analyses and exports (reversibly, studies.services.participation)."""
    if status not in ENDINGS:
        raise ValueError(f"status: one of {', '.join(ENDINGS)}, got {status!r}")
    worker = _locked(worker)
    if worker.status != CrowdWorker.Status.ACTIVE:
        return worker
    study = worker.crowd_study.study
    assignments_reclaim(Assignment.objects.filter(annotator_id=worker.user_id, item__study_task__study=study))
    if status == CrowdWorker.Status.BLOCKED:
        participation_exclude(study=study, annotator=worker.user, reason=f"crowd checks: {reason}", by=None)
    if study.annotators.filter(pk=worker.user_id).exists():
        study_annotator_remove(study=study, annotator=worker.user)
    worker.status, worker.phase, worker.end_reason = status, END, reason
    worker.finished_at = timezone.now()
    worker.save(update_fields=["status", "phase", "end_reason", "finished_at", "last_seen_at"])
    return worker


def crowd_end_code(*, worker: CrowdWorker) -> tuple[str, str]:
    """The code the worker's end page shows and the address it sends them to ('' for none); only once the
    session has ended (a completion page asked for before finishing shows no code)."""
    crowd = worker.crowd_study
    if worker.status == CrowdWorker.Status.LEFT:
        return "", ""  # the platform has closed the study for them: no code to enter anywhere
    kinds: dict[str, str] = {  # keyed by the status's value (the field holds a str)
        CrowdWorker.Status.COMPLETED: "completion",
        CrowdWorker.Status.SCREENED_OUT: "screenout",
        CrowdWorker.Status.BLOCKED: "failure",
    }
    kind = kinds.get(worker.status)
    if kind is None:
        raise PermissionDenied("You have not finished the study yet.")
    code = getattr(crowd, f"{kind}_code")
    url = getattr(crowd, f"{kind}_url").replace("{code}", code)
    return code, url
