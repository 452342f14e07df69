"""Importing a study bundle (docs/BUNDLES.md): everything is checked first (bundles.format.bundle_read),
then written in one transaction, so a bad bundle changes nothing.

The study comes back with new ids: a new dataset (a taken name gets a suffix), new documents, summaries,
scores and explanations, the study with its tasks, guidelines versions, examples, items, assignments,
judgements and participations, every timestamp as the bundle has it. Annotators become new inactive
accounts without a usable password (a taken user name gets a suffix; nobody is merged into an existing
account); the importing researcher runs the study.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, models, transaction
from django.db.models import Q

from accounts.services import role_group
from bundles.format import MANIFEST, BundleContents, BundleInvalid, bundle_read, invalid
from bundles.models import BundleImport
from common import roles
from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from protocols.tasks import STUDY_TASKS
from scoring.models import Explanation
from studies.models import (
    Assignment,
    GuidelinesVersion,
    Judgement,
    Participation,
    Study,
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


def _accounts_create(names: Iterable[str]) -> dict[str, User]:
    """A new inactive account, without a usable password, per user name; a taken name gets a suffix."""
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
    role_group(roles.EXTERNAL).user_set.add(*created.values())
    return {name: created[new] for name, new in chosen.items()}


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


def _write(contents: BundleContents, user: User | None, told: Progress) -> BundleImportResult:
    counts: dict[str, int] = {}

    def create(name: str, model: type[models.Model], **options: Any) -> dict[Any, int]:
        made = _create(model, contents.table(name), **options)
        counts[name] = len(contents.rows[name])
        told(name, counts[name])
        return made

    meta = contents.objects["dataset.json"]
    dataset = Dataset.objects.create(**{**meta, "name": _dataset_name(meta["name"])})
    Dataset.objects.filter(pk=dataset.pk).update(created_at=meta["created_at"])
    dataset.refresh_from_db()
    documents = create("documents.jsonl", Document, links=lambda row: {"dataset": dataset})
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
    people = _accounts_create(row["username"] for row in contents.table("people.jsonl"))
    counts["people.jsonl"] = len(people)
    told("people.jsonl", len(people))

    spec = contents.objects["study.json"]
    settings_ = {k: v for k, v in spec.items() if k not in ("created_by", "researchers", "annotators", "created_at")}
    study = Study.objects.create(**settings_, dataset=dataset, created_by=user)
    Study.objects.filter(pk=study.pk).update(created_at=spec["created_at"])
    study.refresh_from_db()
    if user is not None:
        study.researchers.add(user)
    study.annotators.add(*[people[name] for name in spec["annotators"]])

    tasks = create("tasks.jsonl", StudyTask, links=lambda row: {"study": study})
    # Who wrote guidelines or examples, or excluded an annotator, is a researcher of the original instance:
    # kept in the bundle, not made an account here.
    create(
        "guidelines.jsonl",
        GuidelinesVersion,
        links=lambda row: {"study_task_id": tasks[row["task"]]},
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
        links=shown,
        drop=["task", "summary", "explanation", "created_by"],
        times=["created_at"],
    )
    items = create("items.jsonl", StudyItem, links=shown, drop=["task", "summary", "explanation"])
    stamps = ["created_at", "updated_at"]
    assignments = create(
        "assignments.jsonl",
        Assignment,
        links=lambda row: {"item_id": items[row["item"]], "annotator": people[row["annotator"]]},
        drop=["item", "annotator"],
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
        links=lambda row: {"study": study, "annotator": people[row["annotator"]]},
        drop=["annotator", "excluded_by"],
        times=stamps,
    )
    return BundleImportResult(study, dataset, {name: account.username for name, account in people.items()}, [], counts)


__all__ = ["BundleImportResult", "BundleInvalid", "bundle_choices", "study_bundle_import"]
