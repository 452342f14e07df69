"""LLM judges: starting a run over a study task's items, and running it (on a worker, judges.jobs, or in the
`llm_judge` command).

Each item's prompt is built from the task's own definition and the study's guidelines
(protocols.llm_judge); a valid answer is submitted through studies.services.studies.assignment_submit, the
one path every human judgement takes, as the work of the model rater's account. An answer outside the
label set, a time-out, an HTTP error or a body that is not a chat completion is tried again (waiting
longer each time) and, when every try failed, recorded as the item's failure with every reason: never
as a label. The budget (requests, tokens, seconds) is checked before every request; when it runs out the
run stops cleanly, keeping what it judged. Valid answers are cached by prompt hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.services import model_rater_account_get_or_create
from common.broker import broker_check, celery_app, task_send
from common.roles import user_is_researcher
from common.sealing import SealError, secret_open, secret_seal
from common.validation import printable, text_problem
from judges.client import chat_post, endpoint_url
from judges.models import CachedResponse, JudgeItem, JudgeRun, ModelRater
from protocols.llm_judge import (
    MAX_MODEL_CHARS,
    AnswerError,
    ChatParams,
    EndpointError,
    answer_parse,
    chat_body,
    chat_params,
    chat_reply_parse,
    judgeable,
    prompt_build,
    prompt_hash,
)
from protocols.tasks import Submission, get_task
from studies.models import Assignment, Study, StudyItem, StudyTask
from studies.selectors.assignments import item_units
from studies.services.studies import assignment_submit

logger = logging.getLogger(__name__)

# The API key comes from FAITHANNO_LLM_API_KEY or FAITHANNO_LLM_API_KEY_<SUFFIX>: no other variable of the
# server's environment (SECRET_KEY, DATABASE_URL) can be sent to an endpoint a researcher typed in.
API_KEY_VARIABLE = re.compile(r"FAITHANNO_LLM_API_KEY(_[A-Z0-9]{1,40})?")
MAX_API_KEY_CHARS = 500
MAX_REQUESTS = 1_000_000
MAX_TOKENS = 2_000_000_000
MAX_SECONDS = 7 * 24 * 3600
MAX_TRIES = 10
MAX_RESPONSE_CHARS = 20_000
FINISHED = (JudgeRun.Status.DONE, JudgeRun.Status.STOPPED, JudgeRun.Status.FAILED)


@dataclass(frozen=True)
class JudgeSpec:
    """Everything a run is made of; the study page's form, the API and `llm_judge` parse their input into
    one, and `judge_spec_check` holds every rule."""

    study_task: StudyTask
    endpoint: str
    model: str
    created_by: User | None = None
    api_key: str = ""  # given in the form: kept until the run ends, never shown again
    api_key_variable: str = ""  # else this environment variable's value (default: FAITHANNO_LLM_API_KEY)
    parameters: Mapping[str, Any] = field(default_factory=dict)
    max_requests: int = 1000
    max_tokens: int = 2_000_000
    max_seconds: int = 3600
    tries: int | None = None  # None: FAITHANNO_LLM_TRIES


def _whole(value: Any, *, name: str, minimum: int, maximum: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        return f"{name} must be a whole number between {minimum} and {maximum}, got {printable(str(value))[:50]}."
    return None


def judge_spec_check(*, spec: JudgeSpec) -> tuple[str, ChatParams]:
    """Check every rule of a new run; ValidationError keyed by field (the form's and the API's names) with
    every problem, or the chat completions URL and the parameters."""
    problems: dict[str, list[str]] = {}

    def problem(key: str, message: str) -> None:
        problems.setdefault(key, []).append(message)

    study = spec.study_task.study
    if study.kind != Study.Kind.STUDY:
        problem("task", f"{printable(study.name)!r} holds imported judgements; a model judges study tasks only.")
    task = get_task(spec.study_task.task)
    if not judgeable(task):
        problem("task", f"{task.name}: a model judges tasks with a label per unit, not {task.unit_name}s.")
    if spec.created_by is not None and not (spec.created_by.is_active and user_is_researcher(spec.created_by)):
        problem("created_by", f"{printable(spec.created_by.get_username())} is no researcher or admin.")
    url = ""
    if not isinstance(spec.endpoint, str) or text_problem(spec.endpoint):
        problem("endpoint", "endpoint must be a URL.")
    else:
        try:
            url = endpoint_url(spec.endpoint)
        except ValueError as exc:
            problem("endpoint", str(exc))
    model = spec.model.strip() if isinstance(spec.model, str) else ""
    if not model or text_problem(model) or len(model) > MAX_MODEL_CHARS or any(c.isspace() for c in model):
        problem("model", f"model must be a model name without spaces, 1 to {MAX_MODEL_CHARS} characters.")
    if not isinstance(spec.api_key, str) or text_problem(spec.api_key) or len(spec.api_key) > MAX_API_KEY_CHARS:
        problem("api_key", f"api_key must be text of at most {MAX_API_KEY_CHARS} characters.")
    elif any(c.isspace() or not c.isprintable() for c in spec.api_key):
        problem("api_key", "api_key must not hold spaces or control characters.")
    if spec.api_key_variable and not (
        isinstance(spec.api_key_variable, str) and API_KEY_VARIABLE.fullmatch(spec.api_key_variable)
    ):
        problem("api_key_variable", "api_key_variable must be FAITHANNO_LLM_API_KEY or FAITHANNO_LLM_API_KEY_<NAME>.")
    if spec.api_key and spec.api_key_variable:
        problem("api_key", "Give the key or the variable that holds it, not both.")
    params = ChatParams()
    if not isinstance(spec.parameters, Mapping):
        problem("parameters", "parameters must be an object (temperature, max_tokens, seed).")
    else:
        try:
            params = chat_params(spec.parameters)
        except ValueError as exc:
            problem("parameters", str(exc))
    for name, value, maximum in (
        ("max_requests", spec.max_requests, MAX_REQUESTS),
        ("max_tokens", spec.max_tokens, MAX_TOKENS),
        ("max_seconds", spec.max_seconds, MAX_SECONDS),
    ):
        message = _whole(value, name=name, minimum=1, maximum=maximum)
        if message:
            problem(name, message)
    if spec.tries is not None and (message := _whole(spec.tries, name="tries", minimum=1, maximum=MAX_TRIES)):
        problem("tries", message)
    if problems:
        raise ValidationError(problems)
    return url, params


def _rater_key(endpoint: str, model: str, params: ChatParams) -> str:
    key = {"endpoint": endpoint, "model": model, "params": params.as_dict()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _rater_username(model: str, key: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9@.+_-]+", "-", model).strip("-")[:100] or "model"
    return f"llm.{slug}.{key[:8]}"


def model_rater_get_or_create(*, endpoint: str, model: str, params: ChatParams) -> ModelRater:
    """The rater of this model at this endpoint with these parameters (one account, role `model`)."""
    key = _rater_key(endpoint, model, params)
    rater = ModelRater.objects.filter(key=key).select_related("user").first()
    if rater is None:
        user = model_rater_account_get_or_create(username=_rater_username(model, key))
        rater, _ = ModelRater.objects.get_or_create(
            key=key, defaults={"user": user, "endpoint": endpoint, "model": model, "parameters": params.as_dict()}
        )
    return rater


@transaction.atomic
def judge_run_create(*, spec: JudgeSpec) -> JudgeRun:
    """A queued run after every check (judge_spec_check); judge_run_start also puts it on a worker."""
    url, params = judge_spec_check(spec=spec)
    rater = model_rater_get_or_create(endpoint=url, model=spec.model.strip(), params=params)
    variable = spec.api_key_variable or ("" if spec.api_key else settings.FAITHANNO_LLM_API_KEY_VARIABLE)
    return JudgeRun.objects.create(
        study_task=spec.study_task,
        rater=rater,
        created_by=spec.created_by,
        api_key=secret_seal(spec.api_key, secrets=_server_secrets(), purpose=API_KEY_PURPOSE),
        api_key_variable=variable,
        max_requests=spec.max_requests,
        max_tokens=spec.max_tokens,
        max_seconds=spec.max_seconds,
        tries=spec.tries or settings.FAITHANNO_LLM_TRIES,
        guidelines_version=spec.study_task.guidelines_version,
    )


def judge_run_start(*, spec: JudgeSpec) -> JudgeRun:
    """Create the run and queue it on a worker once committed. BrokerUnavailable (nothing stored) when no
    worker can be reached."""
    with transaction.atomic():
        run = judge_run_create(spec=spec)  # bad input fails here, whether or not a broker runs
        if not celery_app().conf.task_always_eager:  # eager (tests): the task runs here, no broker involved
            broker_check()  # BrokerUnavailable rolls the run back
        transaction.on_commit(lambda: judge_run_enqueue(run=run))
    return run


def judge_run_enqueue(*, run: JudgeRun) -> None:
    from judges.jobs import judge_run_job

    task_send(judge_run_job, run_id=run.pk)


# --- running -------------------------------------------------------------------------------------------


def _claim(run_id: int) -> bool:
    """Take the run: a queued one, or a running one whose worker stopped reporting. A conditional update,
    so of two deliveries of the same task only one runs it."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.FAITHANNO_LLM_STALE_SECONDS)
    claimable = Q(status=JudgeRun.Status.QUEUED) | Q(status=JudgeRun.Status.RUNNING, heartbeat_at__lt=stale)
    return JudgeRun.objects.filter(claimable, pk=run_id).update(status=JudgeRun.Status.RUNNING, heartbeat_at=now) == 1


# A key typed into the study form is stored sealed while its run waits and forgotten when the run ends.
API_KEY_PURPOSE = "faithanno judges: LLM endpoint API key"


def _server_secrets() -> list[str]:
    return [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]


def _api_key(run: JudgeRun) -> str:
    """The key to send. SealError when the stored key cannot be opened (SECRET_KEY changed without a fallback)."""
    if run.api_key:
        return secret_open(run.api_key, secrets=_server_secrets(), purpose=API_KEY_PURPOSE)
    if run.api_key_variable and API_KEY_VARIABLE.fullmatch(run.api_key_variable):
        return os.environ.get(run.api_key_variable, "").strip()
    return ""


def _budget_left(run: JudgeRun, started: float) -> tuple[float, str]:
    """Seconds left of the time budget, and why the budget is used up ("" while it is not)."""
    left = run.max_seconds - (time.monotonic() - started)
    if run.requests >= run.max_requests:
        return left, f"the budget of {run.max_requests} requests is used up"
    if run.tokens >= run.max_tokens:
        return left, f"the budget of {run.max_tokens} tokens is used up ({run.tokens} used)"
    if left <= 0:
        return left, f"the time budget of {run.max_seconds} s is used up"
    return left, ""


@dataclass
class _Item:
    """What judging one item came to."""

    status: str = ""
    submission: Submission | None = None
    response: str = ""
    reasons: list[str] = field(default_factory=list)
    tries: int = 0
    from_cache: bool = False
    stop: str = ""  # the budget ran out before the item was decided: it is left for a later run
    fatal: bool = False  # the endpoint refuses every request: the run fails


class _Runner:
    def __init__(self, run: JudgeRun, sleep: Callable[[float], None]) -> None:
        self.run = run
        self.sleep = sleep
        self.rater = run.rater
        self.task = get_task(run.study_task.task)
        self.params = chat_params(run.rater.parameters)
        self.api_key = _api_key(run)
        self.started = time.monotonic() - run.seconds

    def judge(self, item: StudyItem, units: list[Any], messages: list[dict[str, str]], digest: str) -> _Item:
        outcome = _Item()

        def parse(content: str) -> Submission:
            return answer_parse(self.task, units=units, summary_text=item.summary.text, content=content)

        cached = CachedResponse.objects.filter(prompt_hash=digest).first()
        if cached is not None:
            try:
                outcome.submission = parse(cached.content)
            except AnswerError:
                cached.delete()  # the task's rules changed since: ask again
            else:
                outcome.response, outcome.from_cache = cached.content, True
                return outcome
        body = chat_body(model=self.rater.model, messages=messages, params=self.params)
        while outcome.tries < self.run.tries:
            left, outcome.stop = _budget_left(self.run, self.started)
            if outcome.stop:
                return outcome
            outcome.tries += 1
            self.run.requests += 1
            try:
                raw = chat_post(
                    url=self.rater.endpoint,
                    api_key=self.api_key,
                    body=body,
                    timeout=max(0.1, min(float(settings.FAITHANNO_LLM_TIMEOUT_SECONDS), left)),
                    max_bytes=settings.FAITHANNO_LLM_MAX_RESPONSE_BYTES,
                )
                reply = chat_reply_parse(raw)
                self.run.prompt_tokens += reply.prompt_tokens
                self.run.completion_tokens += reply.completion_tokens
                outcome.response = reply.content[:MAX_RESPONSE_CHARS]
                outcome.submission = parse(reply.content)
            except EndpointError as exc:
                outcome.reasons.append(f"try {outcome.tries}: {exc.reason}")
                if not exc.retryable:
                    outcome.fatal = True
                    return outcome
            except AnswerError as exc:
                outcome.reasons.append(f"try {outcome.tries}: {exc}")
            else:
                CachedResponse.objects.get_or_create(
                    prompt_hash=digest,
                    defaults={
                        "model": self.rater.model,
                        "content": reply.content,
                        "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens,
                    },
                )
                return outcome
            if outcome.tries < self.run.tries:
                self.sleep(settings.FAITHANNO_LLM_BACKOFF_SECONDS * 2 ** (outcome.tries - 1))
        return outcome

    @transaction.atomic
    def record(self, item: StudyItem, outcome: _Item, messages: list[dict[str, str]], digest: str) -> None:
        status = JudgeItem.Status.FAILED
        if outcome.submission is not None:
            assignment, _ = Assignment.objects.get_or_create(
                item=item, annotator=self.rater.user, defaults={"position": item.position}
            )
            try:
                with transaction.atomic():
                    assignment_submit(
                        assignment=assignment,
                        user=self.rater.user,
                        labels=outcome.submission.labels,
                        notes=outcome.submission.notes,
                        guidelines_version=self.run.guidelines_version,
                    )
            except ValidationError as exc:
                outcome.reasons.append(f"not stored: {'; '.join(exc.messages)}")
                assignment.delete()
            else:
                status = JudgeItem.Status.JUDGED
        JudgeItem.objects.create(
            run=self.run,
            item=item,
            status=status,
            model=self.rater.model,
            endpoint=self.rater.endpoint,
            parameters=self.params.as_dict(),
            prompt=messages,
            prompt_hash=digest,
            response=outcome.response,
            reason="\n".join(outcome.reasons),
            tries=outcome.tries,
            from_cache=outcome.from_cache,
        )
        if status == JudgeItem.Status.JUDGED:
            self.run.judged += 1
            self.run.cached += outcome.from_cache
        else:
            self.run.failed += 1


def _save(run: JudgeRun, started: float, **values: Any) -> None:
    run.seconds = time.monotonic() - started
    run.heartbeat_at = timezone.now()
    for name, value in values.items():
        setattr(run, name, value)
    fields = [
        "judged",
        "failed",
        "cached",
        "requests",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
        "heartbeat_at",
        *values,
    ]
    run.save(update_fields=fields)


def _finish(run: JudgeRun, started: float, status: str, reason: str = "") -> None:
    # The key given in the form is kept no longer than the run needs it.
    _save(run, started, status=status, reason=reason, api_key="", finished_at=timezone.now())


def judge_items_left(*, run: JudgeRun) -> Any:
    """The run's items still to judge: neither tried by this run nor judged by its rater already."""
    judged = Assignment.objects.filter(
        item__study_task=run.study_task, annotator=run.rater.user, status=Assignment.Status.SUBMITTED
    ).values("item_id")
    return (
        StudyItem.objects.filter(study_task=run.study_task)
        .exclude(pk__in=judged)
        .exclude(pk__in=JudgeItem.objects.filter(run=run).values("item_id"))
        .select_related("study_task", "summary__document", "explanation")
        .order_by("position", "pk")
    )


def judge_run_execute(
    *,
    run_id: int,
    progress: Callable[[JudgeRun, JudgeItem | None], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> JudgeRun | None:
    """Run a queued run here. None, doing nothing, when the run is not there to take (finished, or running
    on a live worker). `progress` is called after every item with the run and the item's record."""
    if not _claim(run_id):
        logger.info("Judge run %s is not queued (another delivery has it or had it): nothing to do.", run_id)
        return None
    run = JudgeRun.objects.select_related("rater__user", "study_task__study").get(pk=run_id)
    try:
        runner = _Runner(run, sleep)
    except SealError as error:
        _finish(run, time.monotonic() - run.seconds, JudgeRun.Status.FAILED, f"The run's API key is lost: {error}.")
        return run
    items = judge_items_left(run=run)
    if run.started_at is None:
        _save(run, runner.started, started_at=timezone.now(), items_total=items.count())
    study_task = run.study_task
    try:
        for item in items.iterator(chunk_size=100):
            units = item_units(item, with_document=True)
            messages = prompt_build(
                runner.task,
                guidelines=study_task.guidelines,
                document_text=item.summary.document.text,
                summary_text=item.summary.text,
                units=units,
            ).as_list()
            digest = prompt_hash(
                endpoint=run.rater.endpoint, model=run.rater.model, messages=messages, params=runner.params
            )
            outcome = runner.judge(item, units, messages, digest)
            if outcome.stop:
                _finish(run, runner.started, JudgeRun.Status.STOPPED, f"Stopped: {outcome.stop}.")
                return run
            runner.record(item, outcome, messages, digest)
            if outcome.fatal:
                reason = outcome.reasons[-1].split(": ", 1)[-1]
                _finish(run, runner.started, JudgeRun.Status.FAILED, f"The endpoint refuses the requests: {reason}")
                return run
            _save(run, runner.started)
            if progress is not None:
                progress(run, JudgeItem.objects.filter(run=run, item=item).first())
    except Exception:
        # Handed back for the task's retry (judges.jobs), which continues after the items already recorded.
        _save(run, runner.started, status=JudgeRun.Status.QUEUED)
        raise
    _finish(run, runner.started, JudgeRun.Status.DONE)
    return run


def judge_run_fail(*, run_id: int, reason: str) -> None:
    """Mark a run failed for good (its worker gave up retrying); its key is forgotten."""
    JudgeRun.objects.filter(pk=run_id).exclude(status__in=FINISHED).update(
        status=JudgeRun.Status.FAILED, reason=reason[:2000], api_key="", finished_at=timezone.now()
    )
