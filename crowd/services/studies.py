"""Crowd studies: a study made public with its crowd settings, its training items and its attention checks.

A crowd study is one StudySpec (studies.services.studies, pull-based: no annotator list) and one CrowdSpec;
the web form, the API and `create_study --crowd` only parse their input into these, and crowd_study_create
checks every rule of both and answers problems keyed by field.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from common.validation import printable, storable_text_problem
from corpus.models import Dataset, Document, Summary
from crowd.models import ANNOTATION, END, PHASES, CrowdCheck, CrowdStudy, TrainingItem
from protocols.attention import FUSION, GENERATED_KINDS, RESEARCHER, VERBATIM, Mention, attention_checks
from protocols.decisions import Thresholds
from protocols.tasks import EXPECTATIONS, STUDY_TASKS, get_task
from studies.models import Assignment, Participation, Study, StudyItem, StudyTask
from studies.selectors.access import studies_for_user
from studies.services.studies import StudyPlan, StudySpec, study_create

# The link parameters each platform sends: the worker's id, the platform's study id, its session id (keyed by
# the platform's value: a spec's platform is any string until checked).
PLATFORM_PARAMS: dict[str, tuple[str, str, str]] = {
    Participation.Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    Participation.Platform.MTURK: ("workerId", "hitId", "assignmentId"),
    Participation.Platform.GENERIC: ("worker", "", ""),
}
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")
PARAM_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,49}")
QUESTION_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")
QUESTION_KINDS = ("single", "multiple", "text", "likert")
LIKERT = ("Strongly disagree", "Disagree", "Neither agree nor disagree", "Agree", "Strongly agree")
MAX_TEXT_CHARS = 20_000
MAX_QUESTION_CHARS = 1000
MAX_CHOICE_CHARS = 200
MAX_CHOICES = 20
MAX_QUESTIONS = 50
MAX_TRAINING_ITEMS = 50
MAX_SECONDS_FLOOR = 3600
MAX_ITEMS_PER_WORKER = 10_000
MAX_TIMEOUT_MINUTES = 7 * 24 * 60
MAX_THRESHOLD = 1000
MAX_URL_CHARS = 500
# Attention checks made per document and kind; a study never gets more than this many checks.
MAX_CHECKS = 500


def new_code() -> str:
    """A completion code: eight upper-case hexadecimal characters, as Prolific's own look."""
    return secrets.token_hex(4).upper()


@dataclass(frozen=True)
class TrainingSpec:
    document: str  # the document's id in the study's dataset (Document.external_id)
    summary: str
    expected: str  # faithful or unfaithful
    explanation: str = ""


@dataclass(frozen=True)
class CrowdSpec:
    """A study's crowd settings; `crowd_spec_check` holds every rule."""

    platform: str = Participation.Platform.PROLIFIC
    public: bool = True
    worker_param: str = ""  # empty: the platform's (PLATFORM_PARAMS)
    study_param: str | None = None  # None: the platform's
    session_param: str | None = None
    phases: Sequence[str] = PHASES  # a phase without content (no consent text, no gold items) is passed over
    consent_text: str = ""
    instructions: str = ""
    pre_survey: Sequence[Mapping[str, Any]] = ()
    post_survey: Sequence[Mapping[str, Any]] = ()
    training: Sequence[TrainingSpec] = ()
    training_rule: str = CrowdStudy.PassRule.ALL_CORRECT
    training_value: int = 0
    training_attempts: int = 2
    check_rate: float = 0.2
    attention_warn_at: int | None = 1
    attention_block_at: int | None = 2
    min_seconds: Mapping[str, float] = field(default_factory=dict)
    min_explanation_chars: int = 0
    time_warn_at: int | None = 1
    time_block_at: int | None = 3
    completion_code: str = ""  # empty: a new random code
    screenout_code: str = ""
    failure_code: str = ""
    completion_url: str | None = None  # None: Prolific's completion address on Prolific, else none
    screenout_url: str | None = None
    failure_url: str | None = None
    max_items_per_worker: int = 20
    timeout_minutes: int = 60
    # The researcher's own attention checks (protocols.attention.researcher_checks), and whether to make checks
    # from the documents (verbatim copies and fusions; swaps need the documents' entities: `mentions`).
    researcher_checks: Sequence[Any] = ()
    generated_checks: bool = True
    mentions: Mapping[str, Sequence[Mention]] = field(default_factory=dict)  # document external id -> entities


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any, *, what: str, max_chars: int) -> str | None:
    """Why `value` is no storable text of at most max_chars, or None."""
    if not isinstance(value, str):
        return f"{what}: give text."
    return storable_text_problem(value, what=what, max_chars=max_chars)


def survey_questions(raw: Any, *, field_name: str) -> list[dict[str, Any]]:
    """The checked questions of a survey; ValidationError keyed `field_name` names each problem."""
    problems: list[str] = []
    if not isinstance(raw, list | tuple):
        raise ValidationError({field_name: "Give a list of questions."})
    if len(raw) > MAX_QUESTIONS:
        raise ValidationError({field_name: f"At most {MAX_QUESTIONS} questions; got {len(raw)}."})
    questions: list[dict[str, Any]] = []
    keys: set[str] = set()
    for number, question in enumerate(raw, start=1):
        where = f"question {number}"
        if not isinstance(question, Mapping):
            problems.append(f"{where}: give an object with key, text, kind, choices and required.")
            continue
        unknown = sorted(set(question) - {"key", "text", "kind", "choices", "required"})
        if unknown:
            problems.append(f"{where}: unknown fields {printable(', '.join(map(str, unknown)))}.")
        key, text, kind = question.get("key"), question.get("text"), question.get("kind")
        if not isinstance(key, str) or not QUESTION_KEY.fullmatch(key):
            problems.append(f"{where}: key is 1-40 lower-case letters, digits or _, starting with a letter.")
        elif key in keys:
            problems.append(f"{where}: key {key!r} is used twice.")
        else:
            keys.add(key)
        problem = _text(text, what=f"{where} text", max_chars=MAX_QUESTION_CHARS)
        if problem or not str(text).strip():
            problems.append(problem or f"{where}: give the question's text.")
        if kind not in QUESTION_KINDS:
            problems.append(f"{where}: kind is one of {', '.join(QUESTION_KINDS)}.")
        choices = question.get("choices")
        if kind == "likert" and choices is None:
            choices = list(LIKERT)
        if kind in ("single", "multiple", "likert"):
            if not isinstance(choices, list | tuple) or not 2 <= len(choices) <= MAX_CHOICES:
                problems.append(f"{where}: give 2 to {MAX_CHOICES} choices.")
                choices = []
            else:
                for choice in choices:
                    problem = _text(choice, what=f"{where} choice", max_chars=MAX_CHOICE_CHARS)
                    if problem or not str(choice).strip():
                        problems.append(problem or f"{where}: a choice is empty.")
                if len({str(choice) for choice in choices}) < len(choices):
                    problems.append(f"{where}: a choice is given twice.")
        elif choices:
            problems.append(f"{where}: a text question has no choices.")
        required = question.get("required", True)
        if not isinstance(required, bool):
            problems.append(f"{where}: required is true or false.")
        questions.append(
            {
                "key": key,
                "text": text,
                "kind": kind,
                "choices": list(choices or []) if kind != "text" else [],
                "required": required,
            }
        )
    if problems:
        raise ValidationError({field_name: problems})
    return questions


def _redirect_problem(url: str, what: str) -> str | None:
    problem = _text(url, what=what, max_chars=MAX_URL_CHARS)
    if problem:
        return problem
    if url and not re.fullmatch(r"https?://[^\s<>\"']+", url):
        return f"{what}: an http:// or https:// address without spaces (use {{code}} for the code)."
    return None


def _threshold_problem(warn: Any, block: Any, what: str) -> str | None:
    for value in (warn, block):
        if value is not None and (not _whole(value) or not 1 <= value <= MAX_THRESHOLD):
            return f"{what}: 1 to {MAX_THRESHOLD} flagged items, or empty for never; got {printable(str(value))}."
    try:
        Thresholds(warn_at=warn, block_at=block)
    except ValueError as exc:
        return f"{what}: {exc}."
    return None


def crowd_spec_check(*, spec: CrowdSpec, tasks: Sequence[str]) -> CrowdSpec:
    """Check every rule of the crowd settings; raise ValidationError keyed by field with every problem
    found, or return the spec with its defaults filled in (parameter names, codes, redirect addresses)."""
    problems: dict[str, list[str]] = {}

    def problem(key: str, message: str | None) -> None:
        if message:
            problems.setdefault(key, []).append(message)

    platform = spec.platform
    if platform not in PLATFORM_PARAMS:
        problem("platform", f"Platform: one of {', '.join(PLATFORM_PARAMS)}; got {printable(str(platform))!r}.")
        platform = Participation.Platform.GENERIC
    defaults = PLATFORM_PARAMS[platform]
    names = {
        "worker_param": spec.worker_param or defaults[0],
        "study_param": defaults[1] if spec.study_param is None else spec.study_param,
        "session_param": defaults[2] if spec.session_param is None else spec.session_param,
    }
    for key, value in names.items():
        if not isinstance(value, str) or (value and not PARAM_NAME.fullmatch(value)):
            problem(key, f"A parameter name is 1-50 letters, digits or _, starting with a letter; got {value!r}.")
    if not names["worker_param"]:
        problem("worker_param", "Name the link parameter that carries the worker's id.")
    given = [value for value in names.values() if value]
    if len(set(given)) < len(given):
        problem("worker_param", "The worker, study and session parameters need different names.")

    phases = list(spec.phases)
    unknown = [printable(str(phase)) for phase in phases if phase not in PHASES]
    if unknown:
        problem("phases", f"Unknown phases: {', '.join(unknown)} (phases: {', '.join(PHASES)}).")
    elif len(set(phases)) < len(phases):
        problem("phases", "Give each phase once.")
    elif ANNOTATION not in phases or not phases or phases[-1] != END:
        problem("phases", "The phases include annotation and end with the end page.")
    for key, text in (("consent_text", spec.consent_text), ("instructions", spec.instructions)):
        problem(key, _text(text, what=key.replace("_", " "), max_chars=MAX_TEXT_CHARS))
    surveys = {}
    for key in ("pre_survey", "post_survey"):
        try:
            surveys[key] = survey_questions(list(getattr(spec, key)), field_name=key)
        except ValidationError as exc:
            for field_name, messages in exc.message_dict.items():
                problems.setdefault(field_name, []).extend(messages)
        except TypeError:
            problem(key, "Give a list of questions.")

    if len(spec.training) > MAX_TRAINING_ITEMS:
        problem("training", f"At most {MAX_TRAINING_ITEMS} training items; got {len(spec.training)}.")
    for number, item in enumerate(spec.training, start=1):
        problem("training", _text(item.document, what=f"training item {number} document", max_chars=200))
        problem("training", _text(item.summary, what=f"training item {number} summary", max_chars=5000))
        problem("training", _text(item.explanation, what=f"training item {number} explanation", max_chars=5000))
        if item.expected not in EXPECTATIONS:
            problem("training", f"training item {number}: expected is {' or '.join(EXPECTATIONS)}.")
        if isinstance(item.summary, str) and not item.summary.strip():
            problem("training", f"training item {number}: give the summary.")
    rules = CrowdStudy.PassRule.values
    if spec.training_rule not in rules:
        problem("training_rule", f"Pass rule: one of {', '.join(rules)}.")
    if not _whole(spec.training_value) or not 0 <= spec.training_value <= MAX_TRAINING_ITEMS:
        problem("training_value", f"N of the pass rule is 0 to {MAX_TRAINING_ITEMS}.")
    elif spec.training_rule == CrowdStudy.PassRule.MIN_CORRECT and spec.training_value > len(spec.training):
        problem("training_value", f"At least {spec.training_value} correct of {len(spec.training)} training items.")
    if not _whole(spec.training_attempts) or not 1 <= spec.training_attempts <= 10:
        problem("training_attempts", "Attempts: 1 to 10.")

    rate = spec.check_rate
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate) or not 0 <= rate <= 0.5:
        problem("check_rate", f"Check rate: a share from 0 to 0.5 of the items; got {printable(str(rate))}.")
    problem("attention_block_at", _threshold_problem(spec.attention_warn_at, spec.attention_block_at, "Attention"))
    problem("time_block_at", _threshold_problem(spec.time_warn_at, spec.time_block_at, "Time"))
    if not isinstance(spec.min_seconds, Mapping):
        problem("min_seconds", "Give task -> seconds.")
    else:
        for task, seconds in spec.min_seconds.items():
            if task not in tasks:
                problem("min_seconds", f"{printable(str(task))} is not among the study's tasks.")
            elif (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not math.isfinite(seconds)
                or not 0 <= seconds <= MAX_SECONDS_FLOOR
            ):
                problem("min_seconds", f"{task}: 0 to {MAX_SECONDS_FLOOR} seconds; got {printable(str(seconds))}.")
    if not _whole(spec.min_explanation_chars) or not 0 <= spec.min_explanation_chars <= 1000:
        problem("min_explanation_chars", "Minimum explanation length: 0 to 1000 characters.")
    if not _whole(spec.max_items_per_worker) or not 1 <= spec.max_items_per_worker <= MAX_ITEMS_PER_WORKER:
        problem("max_items_per_worker", f"Items per worker: 1 to {MAX_ITEMS_PER_WORKER}.")
    if not _whole(spec.timeout_minutes) or not 1 <= spec.timeout_minutes <= MAX_TIMEOUT_MINUTES:
        problem("timeout_minutes", f"Timeout: 1 to {MAX_TIMEOUT_MINUTES} minutes.")

    codes = {}
    for key in ("completion_code", "screenout_code", "failure_code"):
        code = getattr(spec, key) or new_code()
        if not isinstance(code, str) or not CODE.fullmatch(code):
            problem(key, "A code is 1-100 letters, digits, - or _.")
        codes[key] = code
    if len(set(codes.values())) < len(codes):
        problem("failure_code", "The completion, screen-out and failure codes must differ.")
    default_url = PROLIFIC_COMPLETE if platform == Participation.Platform.PROLIFIC else ""
    urls = {}
    for key in ("completion_url", "screenout_url", "failure_url"):
        url = getattr(spec, key)
        url = default_url if url is None else url
        problem(key, _redirect_problem(url, key.replace("_", " ")))
        urls[key] = url
    if not isinstance(spec.public, bool):
        problem("public", "Public is true or false.")
    if problems:
        raise ValidationError(problems)
    return replace(
        spec,
        platform=platform,
        phases=phases,
        worker_param=names["worker_param"],
        study_param=names["study_param"],
        session_param=names["session_param"],
        completion_code=codes["completion_code"],
        screenout_code=codes["screenout_code"],
        failure_code=codes["failure_code"],
        completion_url=urls["completion_url"],
        screenout_url=urls["screenout_url"],
        failure_url=urls["failure_url"],
        pre_survey=surveys["pre_survey"],
        post_survey=surveys["post_survey"],
    )


def _training_documents(study: Study, training: Sequence[TrainingSpec]) -> dict[str, Document]:
    wanted = {item.document for item in training}
    documents = {d.external_id: d for d in Document.objects.filter(dataset=study.dataset, external_id__in=wanted)}
    missing = sorted(wanted - set(documents))
    if missing:
        shown = ", ".join(printable(name) for name in missing[:10])
        raise ValidationError({"training": f"Documents not in dataset {study.dataset.name!r}: {shown}."})
    return documents


def _check_tasks(study: Study) -> list[StudyTask]:
    """The study's tasks that grade checks on an item made of a summary alone (no metric's explanation)."""
    return [
        study_task
        for study_task in study.tasks.all()
        if get_task(study_task.task).checks and not get_task(study_task.task).explanation_metrics
    ]


@dataclass(frozen=True)
class _Check:
    document: Document
    kind: str
    summary: str
    expected: str
    span: tuple[int, int] | None
    source: dict[str, Any]


def _generated_checks(study: Study, spec: CrowdSpec) -> list[_Check]:
    """Checks from the study's documents: per document one of each kind it allows, kinds interleaved (a
    verbatim copy, a fusion, a verbatim copy, ...) so that a worker meets both expectations early."""
    documents = Document.objects.filter(summaries__study_items__study_task__study=study).distinct().order_by("pk")
    rounds: list[list[_Check]] = []
    kinds = GENERATED_KINDS if spec.mentions else (VERBATIM, FUSION)
    for seed, document in enumerate(documents):
        mentions = spec.mentions.get(document.external_id, ())
        made = attention_checks(
            text=document.text, sentences=document.sentences, mentions=mentions, seed=seed, kinds=kinds
        )
        rounds.append(
            [
                _Check(document, check.kind, check.summary_text, check.expected, check.span, check.as_dict())
                for check in made
            ]
        )
    ordered: list[_Check] = []
    for kind in kinds:  # the first check of each kind comes first, then the rest round by round
        for round_checks in rounds:
            ordered.extend(check for check in round_checks if check.kind == kind)
    faithful = [check for check in ordered if check.expected == "faithful"]
    unfaithful = [check for check in ordered if check.expected != "faithful"]
    interleaved = [check for pair in zip(faithful, unfaithful, strict=False) for check in pair]
    rest = faithful[len(unfaithful) :] + unfaithful[len(faithful) :]
    return (interleaved + rest)[:MAX_CHECKS]


def _researcher_checks(study: Study, spec: CrowdSpec) -> list[_Check]:
    wanted = {check.document for check in spec.researcher_checks}
    documents = {d.external_id: d for d in Document.objects.filter(dataset=study.dataset, external_id__in=wanted)}
    missing = sorted(wanted - set(documents))
    if missing:
        shown = ", ".join(printable(name) for name in missing[:10])
        raise ValidationError({"checks": f"Documents not in dataset {study.dataset.name!r}: {shown}."})
    return [
        _Check(
            documents[check.document],
            RESEARCHER,
            check.summary_text,
            check.expected,
            check.span,
            {"line": check.line, "summary": check.summary_text, "expected": check.expected},
        )
        for check in spec.researcher_checks
    ]


CHECKS_FORMAT = "crowd checks"


def checks_dataset_create(*, study: Study) -> Dataset:
    """The dataset that holds the study's attention-check summaries (on copies of its documents)."""
    return Dataset.objects.create(
        name=f"{study.dataset.name[:120]} · attention checks of study {study.pk}",
        source_format=CHECKS_FORMAT,
        description=f"The attention-check summaries of the public study {study.name!r}, on copies of its documents.",
    )


def _checks_dataset(study: Study, documents: Sequence[Document]) -> dict[int, Document]:
    """Copies of the checks' documents in a dataset of the study's checks of their own, so that the check
    summaries never join the study's dataset (its summaries, analyses and downloads stay as imported).
    Returns original document id -> copy."""
    dataset = checks_dataset_create(study=study)
    unique = {document.pk: document for document in documents}
    copies = Document.objects.bulk_create(
        [
            Document(
                dataset=dataset,
                external_id=document.external_id,
                title=document.title,
                text=document.text,
                sentences=document.sentences,
                meta={"copy_of": document.pk},
            )
            for document in unique.values()
        ]
    )
    return {original: copy for original, copy in zip(unique, copies, strict=True)}


def _checks_store(study: Study, checks: Sequence[_Check]) -> int:
    """Each check becomes a summary (of a copy of its document, _checks_dataset) and an item of every task
    that grades checks."""
    tasks = _check_tasks(study)
    if not tasks or not checks:
        return 0
    copies = _checks_dataset(study, [check.document for check in checks])
    summaries = Summary.objects.bulk_create(
        [
            Summary(
                document=copies[check.document.pk],
                external_id=f"check-{number}",
                system="crowd attention check",
                text=check.summary,
                sentences=[[0, len(check.summary)]],
                meta={"crowd_check": study.pk, "kind": check.kind},
            )
            for number, check in enumerate(checks)
        ]
    )
    items, records = [], []
    for study_task in tasks:
        task = get_task(study_task.task)
        for position, (check, summary) in enumerate(zip(checks, summaries, strict=True)):
            if check.expected not in task.checks:
                continue
            item = StudyItem(study_task=study_task, summary=summary, position=1_000_000 + position)
            items.append(item)
            records.append(
                CrowdCheck(
                    item=item,
                    kind=check.kind,
                    expected=check.expected,
                    span_start=check.span[0] if check.span else None,
                    span_end=check.span[1] if check.span else None,
                    source=check.source,
                )
            )
    StudyItem.objects.bulk_create(items)
    CrowdCheck.objects.bulk_create(records)
    return len(records)


@dataclass(frozen=True)
class CrowdPlan:
    plan: StudyPlan
    crowd: CrowdStudy
    checks: int


@transaction.atomic
def crowd_study_create(*, spec: StudySpec, crowd: CrowdSpec) -> CrowdPlan:
    """A new public study: the study (pull-based, no annotators needed) with its crowd settings, training
    items and attention checks. Problems of both specs come keyed by field, nothing is written then."""
    spec = replace(spec, pull_based=True)
    problems: dict[str, list[str]] = {}
    try:
        checked = crowd_spec_check(spec=crowd, tasks=[task for task in spec.tasks if task in STUDY_TASKS])
    except ValidationError as exc:
        problems.update(exc.message_dict)
        checked = crowd
    try:
        plan = study_create(spec=spec)
    except ValidationError as exc:
        for key, messages in exc.message_dict.items():
            problems.setdefault(key, []).extend(messages)
        raise ValidationError(problems) from exc
    if problems:
        raise ValidationError(problems)
    settings, stored = _crowd_settings_store(plan.study, checked)
    return CrowdPlan(plan=plan, crowd=settings, checks=stored)


def _crowd_settings_store(study: Study, checked: CrowdSpec) -> tuple[CrowdStudy, int]:
    """The study's crowd settings (a new link key), its training items and its attention checks, from a
    checked spec (crowd_spec_check); returns the settings and how many check items were stored."""
    documents = _training_documents(study, checked.training)
    settings = CrowdStudy.objects.create(
        study=study,
        key=secrets.token_urlsafe(16),
        **{name: getattr(checked, name) for name in CROWD_FIELDS},
    )
    TrainingItem.objects.bulk_create(
        [
            TrainingItem(
                crowd_study=settings,
                document=documents[item.document],
                summary_text=item.summary,
                expected=item.expected,
                explanation=item.explanation,
                position=position,
            )
            for position, item in enumerate(checked.training)
        ]
    )
    checks = _researcher_checks(study, checked)
    if checked.generated_checks:
        checks += _generated_checks(study, checked)
    stored = _checks_store(study, checks) if checked.check_rate else 0
    return settings, stored


# The CrowdStudy columns a CrowdSpec sets (the rest: the study, its key, timestamps).
CROWD_FIELDS = (
    "public",
    "platform",
    "worker_param",
    "study_param",
    "session_param",
    "phases",
    "consent_text",
    "instructions",
    "pre_survey",
    "post_survey",
    "training_rule",
    "training_value",
    "training_attempts",
    "check_rate",
    "attention_warn_at",
    "attention_block_at",
    "min_seconds",
    "min_explanation_chars",
    "time_warn_at",
    "time_block_at",
    "completion_code",
    "screenout_code",
    "failure_code",
    "completion_url",
    "screenout_url",
    "failure_url",
    "max_items_per_worker",
    "timeout_minutes",
)


@transaction.atomic
def crowd_study_publish(*, crowd: CrowdStudy, public: bool) -> CrowdStudy:
    """Open the link to new workers, or close it (workers who started can still finish)."""
    crowd.public = bool(public)
    crowd.save(update_fields=["public", "updated_at"])
    return crowd


@dataclass(frozen=True)
class PublicStudy:
    """What turning an existing study public did."""

    crowd: CrowdStudy
    created: bool  # the crowd settings were made now (False: the study had them; the link was (re)opened)
    released: int  # open items nobody had started, taken back from their annotators into the pool
    kept: int  # open items an annotator had started (a draft or active time), left with them to finish
    checks: int  # attention check items made now


def public_study_message(result: PublicStudy) -> str:
    """What the page and the API say after turning a study public."""
    if not result.created:
        return "The study is public: its link takes new workers (its crowd settings are unchanged)."
    parts = [f"The study is public: workers pull their items by the link ({result.checks} attention check items)."]
    if result.released:
        parts.append(f"{result.released} open item(s) nobody had started went back to the pool.")
    if result.kept:
        parts.append(f"{result.kept} started item(s) stay with their annotators to finish.")
    return " ".join(parts)


def _runs(user: User, study: Study) -> bool:
    return studies_for_user(user=user).filter(pk=study.pk).exists()


@transaction.atomic
def crowd_study_make_public(*, study: Study, crowd: CrowdSpec, by: User) -> PublicStudy:
    """Turn an existing annotation study public: its crowd settings (checked as for a new public study,
    CrowdSpec's defaults for what is not given), training items and attention checks are made as
    crowd_study_create makes them, and the study becomes pull-based (workers pull their next item).

    The work already handed out is settled without losing any: submitted work stays and counts towards k;
    an open item nobody has started (no draft, no active time) goes back to the pool, where workers pull it;
    an open item an annotator has started stays with them to finish (it counts as held, and like any held
    item goes back to the pool once untouched for the crowd timeout, its draft kept on the reclaimed row).

    A study that has crowd settings already keeps them (they are not changed here): the call only opens its
    link again, so a replay changes nothing. Only the study's researchers (and admins) may do this
    (PermissionDenied); imported judgements cannot be made public (ValidationError, keyed `study`)."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    if not _runs(by, locked):
        raise PermissionDenied("Only the study's researchers may make it public.")
    existing = CrowdStudy.objects.filter(study=locked).first()
    if existing is not None:
        if not existing.public:
            crowd_study_publish(crowd=existing, public=True)
        return PublicStudy(crowd=existing, created=False, released=0, kept=0, checks=0)
    if locked.kind != Study.Kind.STUDY:
        raise ValidationError({"study": "Imported judgements cannot be made public: they are no annotation study."})
    checked = crowd_spec_check(spec=crowd, tasks=list(locked.tasks.values_list("task", flat=True)))
    # Locked, so an annotator's submission now is taken before or after this, never lost in between.
    held = list(
        Assignment.objects.select_for_update()
        .filter(item__study_task__study=locked, status=Assignment.Status.ASSIGNED)
        .values_list("pk", "time_spent", "draft", "draft_saved_at")
    )
    not_started = [pk for pk, seconds, draft, saved in held if not seconds and not draft and saved is None]
    Assignment.objects.filter(pk__in=not_started).delete()
    released, kept = len(not_started), len(held) - len(not_started)
    locked.pull_based = True
    locked.save(update_fields=["pull_based"])
    settings, stored = _crowd_settings_store(locked, checked)
    return PublicStudy(crowd=settings, created=True, released=released, kept=kept, checks=stored)


@transaction.atomic
def crowd_study_make_private(*, study: Study, by: User) -> CrowdStudy:
    """Close a public study's link (crowd_study_publish): new workers get the "closed" page, workers who
    started can finish. The crowd settings stay, so making it public again reopens the same link. Replaying
    changes nothing. ValidationError keyed `study` when the study is not public."""
    if not _runs(by, study):
        raise PermissionDenied("Only the study's researchers may make it private.")
    crowd = CrowdStudy.objects.select_for_update().filter(study=study).first()
    if crowd is None:
        raise ValidationError({"study": "This study has no public link."})
    return crowd_study_publish(crowd=crowd, public=False) if crowd.public else crowd
