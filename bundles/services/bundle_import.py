"""Importing a study bundle (docs/BUNDLES.md): everything is checked first (bundles.format.bundle_read),
then written in one transaction, so a bad bundle changes nothing.

The study comes back with new ids: a new dataset (a taken name gets a suffix), new documents, summaries,
scores and explanations, the study with its tasks, guidelines versions, examples, items, conditions,
assignments, judgements and participations, its payment rules, final labels, crowd settings with workers
and check results, and its LLM judge runs, every timestamp as the bundle has it. Everyone the bundle names
(people.jsonl) becomes a new inactive account without a usable password (a taken user name gets a suffix;
nobody is merged into an existing account; a model rater's account gets the model role); the importing
researcher runs the study.
"""

from __future__ import annotations

import hashlib
import secrets
import zipfile
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.services import role_group
from bundles.format import MANIFEST, MAX_ERRORS, BundleContents, BundleInvalid, Problem, Row, bundle_read, invalid
from bundles.models import BundleImport
from common import roles
from common.validation import errors_by_field
from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from crowd.models import PHASES, CrowdCheck, CrowdItemRecord, CrowdStudy, CrowdWorker, TrainingItem
from crowd.services.studies import CROWD_FIELDS, CrowdSpec, TrainingSpec, checks_dataset_create, crowd_spec_check
from crowd.services.workers import SURVEYS, survey_answers_clean
from judges.client import endpoint_url
from judges.models import CachedResponse, JudgeItem, JudgeRun, ModelRater
from protocols.tasks import STUDY_TASKS
from scoring.models import Explanation
from studies.models import (
    Assignment,
    FinalLabel,
    GuidelinesVersion,
    Judgement,
    Participation,
    PaymentRules,
    Study,
    StudyCondition,
    StudyExample,
    StudyItem,
    StudyTask,
)

Progress = Callable[[str, int], None]
BATCH = 1000
USERNAME_MAX = 150
DATASET_NAME_MAX = 200


@dataclass
class BundleImportResult:
    study: Study
    dataset: Dataset
    usernames: dict[str, str]  # the bundle's user name -> the new account's
    ignored_members: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def bundle_choices() -> dict[str, list[str]]:
    """What each choice field of a bundle may hold: the models' choices and the task names."""
    return {
        "study_kind": list(Study.Kind.values),
        "task": list(STUDY_TASKS),
        "assignment_status": list(Assignment.Status.values),
        "skip_reason": list(Assignment.SkipReason.values),
        "platform": list(Participation.Platform.values),
        "review": list(Participation.Review.values),
        "condition_design": list(Study.ConditionDesign.values),
        "evidence": list(StudyCondition.Evidence.values),
        "final_status": list(FinalLabel.Status.values),
        "pass_rule": list(CrowdStudy.PassRule.values),
        "worker_status": list(CrowdWorker.Status.values),
        "phase": list(PHASES),
        "judge_run_status": list(JudgeRun.Status.values),
        "judge_item_status": list(JudgeItem.Status.values),
    }


def _free_name(wanted: str, taken: Callable[[str], bool], max_length: int, joiner: str) -> str:
    if not taken(wanted):
        return wanted
    number = 1
    while True:
        suffix = f"{joiner}imported" + (f"-{number}" if number > 1 else "")
        candidate = wanted[: max_length - len(suffix)] + suffix
        if not taken(candidate):
            return candidate
        number += 1


def _accounts_create(names: Iterable[str], models: Collection[str] = ()) -> dict[str, User]:
    """A new inactive account, without a usable password, per user name; a taken name gets a suffix. The
    accounts named in `models` are model raters' (role model, so analyses never count them as humans);
    the others hold imported labels (role external)."""
    user_model = get_user_model()
    wanted = list(names)
    if not wanted:
        return {}
    # Every name that could collide, in one query (user names compare without case on sign-in).
    starts = Q()
    for name in wanted:
        starts |= Q(username__istartswith=name[:100])  # a suffixed long name is cut after 100 characters
    taken = {name.lower() for name in user_model.objects.filter(starts).values_list("username", flat=True)}
    chosen: dict[str, str] = {}
    for name in wanted:
        chosen[name] = _free_name(name, lambda candidate: candidate.lower() in taken, USERNAME_MAX, "-")
        taken.add(chosen[name].lower())
    users = []
    for name in chosen.values():
        user = user_model(username=name, is_active=False)
        user.set_unusable_password()
        users.append(user)
    user_model.objects.bulk_create(users, batch_size=BATCH)
    created = {user.username: user for user in user_model.objects.filter(username__in=chosen.values())}
    accounts = {name: created[new] for name, new in chosen.items()}
    for role, members in (
        (roles.EXTERNAL, [user for name, user in accounts.items() if name not in models]),
        (roles.MODEL, [user for name, user in accounts.items() if name in models]),
    ):
        if members:
            role_group(role).user_set.add(*members)
    return accounts


def _create(
    model: type[models.Model],
    rows: list[dict[str, Any]],
    *,
    links: Callable[[dict[str, Any]], dict[str, Any]],
    drop: Iterable[str] = (),
    times: Iterable[str] = (),
) -> dict[Any, int]:
    """One new row per bundle row, in the bundle's order (so new ids keep every order-dependent analysis the
    same): `links` gives the foreign keys, the other fields are copied except those in `drop`; the timestamps
    in `times` are put back after auto_now and auto_now_add overwrote them. Returns bundle id -> new id."""
    stamps = list(times)
    left_out = {"id", *drop, *stamps}
    objects = [model(**links(row), **{k: v for k, v in row.items() if k not in left_out}) for row in rows]
    manager = model._default_manager
    made = manager.bulk_create(objects, batch_size=BATCH)
    if stamps and made:
        for obj, row in zip(made, rows, strict=True):
            for name in stamps:
                setattr(obj, name, row[name])
        manager.bulk_update(made, stamps, batch_size=BATCH)
    return {row.get("id"): obj.pk for row, obj in zip(rows, made, strict=True)}


def _dataset_name(name: str) -> str:
    taken = set(Dataset.objects.filter(name__startswith=name[:150]).values_list("name", flat=True))
    return _free_name(name, taken.__contains__, DATASET_NAME_MAX, " ")


def study_bundle_import(
    *, source: IO[bytes], user: User | None, progress: Progress | None = None
) -> BundleImportResult:
    """Import the bundle in `source` (a binary, seekable file); raises BundleInvalid naming member, line
    and field, and then nothing was written."""
    told = progress or (lambda name, rows: None)
    contents = bundle_read(source, max_uncompressed=settings.FAITHANNO_BUNDLE_MAX_BYTES, choices=bundle_choices())
    _crowd_settings_check(contents)
    _endpoints_check(contents)
    manifest = contents.manifest
    earlier = BundleImport.objects.filter(bundle_id=manifest["bundle_id"]).first()
    if earlier is not None:
        raise invalid(
            MANIFEST,
            f"this bundle was already imported as study {earlier.study_id}; delete that study to import it again",
            field="bundle_id",
        )
    source.seek(0)
    with zipfile.ZipFile(source) as archive:
        manifest_sha256 = hashlib.sha256(archive.read(MANIFEST)).hexdigest()
    try:
        with transaction.atomic():
            result = _write(contents, user, told)
            _recorded(manifest, manifest_sha256, result, contents, user)
    except IntegrityError:
        # Another import of the same bundle committed in the meantime (the check above ran before it).
        if BundleImport.objects.filter(bundle_id=manifest["bundle_id"]).exists():
            message = "this bundle was imported at the same time by another request"
            raise invalid(MANIFEST, message, field="bundle_id") from None
        raise
    result.ignored_members = list(contents.ignored)
    return result


def _recorded(
    manifest: dict[str, Any],
    manifest_sha256: str,
    result: BundleImportResult,
    contents: BundleContents,
    user: User | None,
) -> None:
    BundleImport.objects.create(
        bundle_id=manifest["bundle_id"],
        format_version=manifest["format_version"],
        app_version=manifest["app_version"],
        manifest_sha256=manifest_sha256,
        study=result.study,
        dataset=result.dataset,
        usernames=result.usernames,
        ignored_members=contents.ignored,
        imported_by=user,
    )


def _crowd_settings_check(contents: BundleContents) -> None:
    """The crowd settings obey every rule the crowd's own form does (crowd_spec_check)."""
    documents = {row["id"]: row["external_id"] for row in contents.table("documents.jsonl")}
    tasks = [row["task"] for row in contents.table("tasks.jsonl")]
    for line, row in contents.rows["crowd_studies.jsonl"]:
        training = [
            TrainingSpec(documents[item["document"]], item["summary_text"], item["expected"], item["explanation"])
            for item in contents.table("training_items.jsonl")
        ]
        spec = CrowdSpec(**{name: row[name] for name in CROWD_FIELDS}, training=training, generated_checks=False)
        try:
            checked = crowd_spec_check(spec=spec, tasks=tasks)
        except ValidationError as exc:
            raise _problems("crowd_studies.jsonl", line, "", exc) from None
        _survey_answers_check(contents, checked)


def _problems(member: str, line: int, prefix: str, exc: ValidationError) -> BundleInvalid:
    """A service's ValidationError as problems of one row: its fields under `prefix`."""
    return BundleInvalid(
        [
            Problem(member, line, prefix + name, message)
            for name, messages in errors_by_field(exc).items()
            for message in messages
        ][:MAX_ERRORS]
    )


def _survey_answers_check(contents: BundleContents, crowd: CrowdSpec) -> None:
    """Each worker's answers are answers to the crowd's surveys, as the survey page would have taken them."""
    for line, row in contents.rows["crowd_workers.jsonl"]:
        for survey, answers in row["survey_answers"].items():
            questions = getattr(crowd, survey) if survey in SURVEYS else None
            if questions is None or not isinstance(answers, dict):
                message = f"must map {' or '.join(SURVEYS)} to the answers by question"
                raise invalid("crowd_workers.jsonl", message, line=line, field=f"survey_answers.{survey}")
            try:
                survey_answers_clean(list(questions), answers)
            except ValidationError as exc:
                raise _problems("crowd_workers.jsonl", line, f"survey_answers.{survey}.", exc) from None


def _endpoints_check(contents: BundleContents) -> None:
    """A model rater's endpoint is one a run could use (http(s), no credentials, query or fragment)."""
    for line, row in contents.rows["model_raters.jsonl"]:
        try:
            checked = endpoint_url(row["endpoint"])
        except ValueError as exc:
            raise invalid("model_raters.jsonl", str(exc)[:300], line=line, field="endpoint") from None
        if checked != row["endpoint"]:
            raise invalid("model_raters.jsonl", "must be a full chat completions URL", line=line, field="endpoint")


def _write(contents: BundleContents, user: User | None, told: Progress) -> BundleImportResult:
    counts: dict[str, int] = {}

    def create(name: str, model: type[models.Model], rows: list[Row] | None = None, **options: Any) -> dict[Any, int]:
        """The member's rows (or `rows`, some of them) as new rows of `model` (_create)."""
        chosen = contents.table(name) if rows is None else rows
        made = _create(model, chosen, **options)
        counts[name] = len(chosen)
        told(name, counts[name])
        return made

    meta = contents.objects["dataset.json"]
    dataset = Dataset.objects.create(**{**meta, "name": _dataset_name(meta["name"])})
    Dataset.objects.filter(pk=dataset.pk).update(created_at=meta["created_at"])
    dataset.refresh_from_db()
    raters = {row["username"] for row in contents.table("model_raters.jsonl")}
    people = _accounts_create((row["username"] for row in contents.table("people.jsonl")), raters)
    counts["people.jsonl"] = len(people)
    told("people.jsonl", len(people))

    spec = contents.objects["study.json"]
    kept_in_bundle = ("created_by", "researchers", "annotators", "adjudicators", "created_at")
    settings_ = {k: v for k, v in spec.items() if k not in kept_in_bundle}
    study = Study.objects.create(**settings_, dataset=dataset, created_by=user)
    Study.objects.filter(pk=study.pk).update(created_at=spec["created_at"])
    study.refresh_from_db()
    if user is not None:
        study.researchers.add(user)
    study.annotators.add(*[people[name] for name in spec["annotators"]])
    study.adjudicators.add(*[people[name] for name in spec["adjudicators"]])

    # The attention checks' documents go to a dataset of their own, as the crowd keeps them.
    checks_dataset = (
        checks_dataset_create(study=study)
        if any(row["attention_check"] for row in contents.table("documents.jsonl"))
        else None
    )
    documents = create(
        "documents.jsonl",
        Document,
        links=lambda row: {"dataset": checks_dataset if row["attention_check"] else dataset},
        drop=["attention_check"],
    )
    summaries = create(
        "summaries.jsonl", Summary, links=lambda row: {"document_id": documents[row["document"]]}, drop=["document"]
    )
    for name, model in (("human_scores.jsonl", HumanScore), ("metric_scores.jsonl", MetricScore)):
        create(name, model, links=lambda row: {"summary_id": summaries[row["summary"]]}, drop=["summary"])
    explanations = create(
        "explanations.jsonl",
        Explanation,
        links=lambda row: {"summary_id": summaries[row["summary"]]},
        drop=["summary"],
        times=["created_at"],
    )

    def by(name: str | None) -> User | None:
        """The account of someone the bundle names for a decision; a version 1 bundle does not list them in
        people.jsonl, and then who decided stays in the bundle only."""
        return people.get(name) if name is not None else None

    tasks = create("tasks.jsonl", StudyTask, links=lambda row: {"study": study})
    create(
        "guidelines.jsonl",
        GuidelinesVersion,
        links=lambda row: {"study_task_id": tasks[row["task"]], "created_by": by(row["created_by"])},
        drop=["task", "created_by"],
        times=["created_at"],
    )

    def shown(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "study_task_id": tasks[row["task"]],
            "summary_id": summaries[row["summary"]],
            "explanation_id": explanations.get(row["explanation"]),
        }

    create(
        "examples.jsonl",
        StudyExample,
        links=lambda row: {**shown(row), "created_by": by(row["created_by"])},
        drop=["task", "summary", "explanation", "created_by"],
        times=["created_at"],
    )
    items = create("items.jsonl", StudyItem, links=shown, drop=["task", "summary", "explanation"])
    conditions = create("conditions.jsonl", StudyCondition, links=lambda row: {"study": study}, times=["created_at"])
    stamps = ["created_at", "updated_at"]
    assignments = create(
        "assignments.jsonl",
        Assignment,
        links=lambda row: {
            "item_id": items[row["item"]],
            "annotator": people[row["annotator"]],
            "condition_id": conditions.get(row["condition"]),
        },
        drop=["item", "annotator", "condition"],
        times=stamps,
    )
    create(
        "judgements.jsonl",
        Judgement,
        links=lambda row: {"assignment_id": assignments[row["assignment"]]},
        drop=["assignment"],
        times=stamps,
    )
    create(
        "participations.jsonl",
        Participation,
        links=lambda row: {
            "study": study,
            "annotator": people[row["annotator"]],
            "excluded_by": by(row["excluded_by"]),
            "condition_id": conditions.get(row["condition"]),
        },
        drop=["annotator", "excluded_by", "condition"],
        times=stamps,
    )
    create(
        "payment_rules.jsonl",
        PaymentRules,
        links=lambda row: {"study": study, "updated_by": by(row["updated_by"])},
        drop=["updated_by"],
        times=["updated_at"],
    )
    create(
        "final_labels.jsonl",
        FinalLabel,
        links=lambda row: {"item_id": items[row["item"]], "adjudicated_by": by(row["adjudicated_by"])},
        drop=["item", "adjudicated_by"],
        times=stamps,
    )
    _crowd_write(contents, study, people, documents, items, assignments, create)
    _judges_write(contents, people, tasks, items, create, by)
    return BundleImportResult(study, dataset, {name: account.username for name, account in people.items()}, [], counts)


Create = Callable[..., dict[Any, int]]


def _crowd_write(
    contents: BundleContents,
    study: Study,
    people: dict[str, User],
    documents: dict[Any, int],
    items: dict[Any, int],
    assignments: dict[Any, int],
    create: Create,
) -> None:
    # A new public link: the key is the link's secret and stays with the original.
    crowd = create(
        "crowd_studies.jsonl",
        CrowdStudy,
        links=lambda row: {"study": study, "key": secrets.token_urlsafe(16)},
        times=["created_at", "updated_at"],
    )
    crowd_id = next(iter(crowd.values()), None)
    training = create(
        "training_items.jsonl",
        TrainingItem,
        links=lambda row: {"crowd_study_id": crowd_id, "document_id": documents[row["document"]]},
        drop=["document"],
    )
    create("crowd_checks.jsonl", CrowdCheck, links=lambda row: {"item_id": items[row["item"]]}, drop=["item"])
    standing = dict(Participation.objects.filter(study=study).values_list("annotator_id", "pk"))

    def worker(row: dict[str, Any]) -> dict[str, Any]:
        account = people[row["annotator"]]
        answers = {str(training[int(key)]): label for key, label in row["training_answers"].items()}
        return {
            "crowd_study_id": crowd_id,
            "user": account,
            "participation_id": standing[account.pk],
            "training_answers": answers,
        }

    workers = create(
        "crowd_workers.jsonl",
        CrowdWorker,
        links=worker,
        drop=["annotator", "training_answers"],
        times=["started_at", "last_seen_at"],
    )
    create(
        "crowd_records.jsonl",
        CrowdItemRecord,
        links=lambda row: {"assignment_id": assignments[row["assignment"]], "worker_id": workers[row["worker"]]},
        drop=["assignment", "worker"],
    )


def _judges_write(
    contents: BundleContents,
    people: dict[str, User],
    tasks: dict[Any, int],
    items: dict[Any, int],
    create: Create,
    by: Callable[[str | None], User | None],
) -> None:
    rows = contents.table("model_raters.jsonl")
    # The same endpoint, model and parameters are one rater per instance (ModelRater.key). On an instance that
    # has the rater already (the one the bundle came from, or one that imported it before), the copy gets a
    # random key of its own: its judgements stay with its own account, and runs started here find the
    # instance's rater.
    taken = set(ModelRater.objects.filter(key__in=[row["key"] for row in rows]).values_list("key", flat=True))

    def rater_key(key: str) -> str:
        return secrets.token_hex(32) if key in taken else key

    raters = create(
        "model_raters.jsonl",
        ModelRater,
        links=lambda row: {"user": people[row["username"]], "key": rater_key(row["key"])},
        drop=["username", "key"],
        times=["created_at"],
    )
    unfinished = (JudgeRun.Status.QUEUED, JudgeRun.Status.RUNNING)

    def run(row: dict[str, Any]) -> dict[str, Any]:
        status, reason, finished_at = row["status"], row["reason"], row["finished_at"]
        if status in unfinished:  # nothing runs it here, and its API key was never exported
            reason = f"exported while {status}; the bundle holds the items judged until then"
            status, finished_at = JudgeRun.Status.FAILED, finished_at or timezone.now()
        return {
            "study_task_id": tasks[row["task"]],
            "rater_id": raters[row["rater"]],
            "created_by": by(row["created_by"]),
            "status": status,
            "reason": reason,
            "finished_at": finished_at,
        }

    runs = create(
        "judge_runs.jsonl",
        JudgeRun,
        links=run,
        drop=["task", "rater", "created_by", "status", "reason", "finished_at"],
        times=["created_at"],
    )
    create(
        "judge_items.jsonl",
        JudgeItem,
        links=lambda row: {"run_id": runs[row["run"]], "item_id": items[row["item"]]},
        drop=["run", "item"],
        times=["created_at"],
    )
    cached = contents.table("cached_responses.jsonl")
    hashes = [row["prompt_hash"] for row in cached]
    known = set(CachedResponse.objects.filter(prompt_hash__in=hashes).values_list("prompt_hash", flat=True))
    # The cache is the instance's, keyed by prompt: an answer it already holds stays as it is.
    fresh = [row for row in cached if row["prompt_hash"] not in known]
    create("cached_responses.jsonl", CachedResponse, fresh, links=lambda row: {}, times=["created_at"])


__all__ = ["BundleImportResult", "BundleInvalid", "bundle_choices", "study_bundle_import"]
