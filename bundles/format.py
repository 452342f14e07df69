"""The study bundle format (docs/BUNDLES.md): one zip archive of JSON and JSONL members described by a
manifest. Writing and every check of what is read live here, without Django: the services only turn
model rows into the rows below and the checked rows back into model rows.

A bundle is hostile input. The reader bounds the archive (members, uncompressed bytes, line length),
refuses member names that are not plain names (`..`, `/`, NUL), checks the sha256 of every member against
the manifest, every row's fields (types, lengths, finite numbers, storable text, choices) and every
reference between members, and names the member file, line and field of each problem.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tomllib
import zipfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import IO, Any

from common.validation import MAX_ID, InputError, bounded_int, finite_number, json_parse, printable, storable_text

FORMAT_NAME = "faithanno-study-bundle"
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
MAX_MEMBERS = 64
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_ERRORS = 20
_MEMBER_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\.jsonl?", re.ASCII)
# Django's username rule (UnicodeUsernameValidator) and length.
_USERNAME = re.compile(r"[\w.@+-]{1,150}")
_DECIMAL = re.compile(r"-?\d{1,6}(?:\.\d{1,2})?", re.ASCII)
INT32_MAX = 2**31 - 1
SMALLINT_MAX = 2**15 - 1


# --- errors -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    member: str
    line: int | None  # 1-based line of a JSONL member; None for a whole member or a JSON member
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.member}, line {self.line}" if self.line is not None else self.member
        return f"{where}, {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"member": self.member, "line": self.line, "field": self.field, "message": self.message}


class BundleInvalid(ValueError):
    """The bundle cannot be imported; `problems` says where and why (at most MAX_ERRORS of them)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(problem) for problem in problems))


def invalid(member: str, message: str, *, line: int | None = None, field: str = "") -> BundleInvalid:
    return BundleInvalid([Problem(member, line, field, message)])


# --- fields -------------------------------------------------------------------------------------------

Check = Callable[[Any, str], Any]


def text(max_chars: int | None = None, *, blank: bool = True, null: bool = False) -> Check:
    def check(value: Any, name: str) -> Any:
        if value is None and null:
            return None
        value = storable_text(value, field=name, max_chars=max_chars)
        if not blank and not value.strip():
            raise InputError(name, f"{name} must not be empty")
        return value

    return check


def integer(minimum: int = 0, maximum: int = INT32_MAX, *, null: bool = False) -> Check:
    def check(value: Any, name: str) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(name, f"{name} must be a whole number, got {type(value).__name__}")
        return bounded_int(value, field=name, minimum=minimum, maximum=maximum)

    return check


def identifier(*, null: bool = False) -> Check:
    return integer(1, MAX_ID, null=null)


def number(minimum: float | None = None, *, null: bool = False) -> Check:
    def check(value: Any, name: str) -> Any:
        if value is None and null:
            return None
        if isinstance(value, str):  # finite_number reads decimal strings; a bundle holds JSON numbers
            raise InputError(name, f"{name} must be a number, got str")
        return finite_number(value, field=name, minimum=minimum)

    return check


def boolean(value: Any, name: str) -> Any:
    if not isinstance(value, bool):
        raise InputError(name, f"{name} must be true or false, got {type(value).__name__}")
    return value


def boolean_or_null(value: Any, name: str) -> Any:
    return None if value is None else boolean(value, name)


def json_object(value: Any, name: str) -> Any:
    if not isinstance(value, dict):
        raise InputError(name, f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def json_array(value: Any, name: str) -> Any:
    if not isinstance(value, list):
        raise InputError(name, f"{name} must be a JSON array, got {type(value).__name__}")
    return value


def timestamp(*, null: bool = False) -> Check:
    def check(value: Any, name: str) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, str) or len(value) > 40:
            raise InputError(name, f"{name} must be an ISO 8601 date and time, got {type(value).__name__}")
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise InputError(name, f"{name} must be an ISO 8601 date and time, got {printable(value)!r}") from None
        if moment.tzinfo is None:
            raise InputError(name, f"{name} must name its time zone (e.g. +00:00), got {printable(value)!r}")
        return moment

    return check


def username(*, null: bool = False) -> Check:
    def check(value: Any, name: str) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, str) or not _USERNAME.fullmatch(value):
            shown = printable(value)[:40] if isinstance(value, str) else type(value).__name__
            raise InputError(name, f"{name} must be a user name (letters, digits and @.+-_, at most 150), got {shown}")
        return value

    return check


def choice(kind: str, *, blank: bool = False) -> Check:
    """One of the values the reader was given for `kind` (the models' choices, passed in by the service)."""

    def check(value: Any, name: str) -> Any:
        if blank and value == "":
            return value
        allowed = _choices.get({}).get(kind, ())
        if not isinstance(value, str) or value not in allowed:
            shown = printable(value)[:40] if isinstance(value, str) else type(value).__name__
            raise InputError(name, f"{name} must be one of {', '.join(sorted(allowed))}, got {shown}")
        return value

    return check


def decimal(value: Any, name: str) -> Any:
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise InputError(name, f"{name} must be a decimal number written as text with at most 2 decimals")
    return Decimal(value)


def usernames(value: Any, name: str) -> Any:
    json_array(value, name)
    return [username()(item, f"{name}.{index}") for index, item in enumerate(value)]


# The allowed values of each choice field, given by the caller of bundle_read (the models' choices).
_choices: ContextVar[Mapping[str, Collection[str]]] = ContextVar("bundle_choices")


# --- members ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    name: str
    fields: Mapping[str, Check]
    lines: bool = True  # JSONL (one row a line); False: one JSON object
    since: int = 1  # the format version that introduced the member (an older bundle reads as one without rows)
    # Fields a later version added: name -> (that version, the check, what a row of an older bundle reads as).
    added: Mapping[str, tuple[int, Check, Any]] = field(default_factory=dict)

    def fields_of(self, version: int) -> dict[str, Check]:
        """The fields a row of a bundle of `version` has."""
        later = {name: check for name, (since, check, _) in self.added.items() if since <= version}
        return {**self.fields, **later}

    def defaults_of(self, version: int) -> dict[str, Any]:
        """What the fields added after `version` read as in a row of such a bundle."""
        return {name: default for name, (since, _, default) in self.added.items() if since > version}


_TIMES = {"created_at": timestamp(), "updated_at": timestamp()}
_SCORE = {
    "summary": identifier(),
    "name": text(100, blank=False),
    "value": number(),
    "source": text(100),
}
_RUN_COUNTS = (
    "items_total",
    "judged",
    "failed",
    "cached",
    "requests",
    "prompt_tokens",
    "completion_tokens",
)
MEMBERS: dict[str, Member] = {
    member.name: member
    for member in (
        Member(
            "dataset.json",
            {
                "name": text(200, blank=False),
                "description": text(),
                "source_format": text(50),
                "primary_human_score": text(200),
                "created_at": timestamp(),
            },
            lines=False,
        ),
        Member(
            "documents.jsonl",
            {
                "id": identifier(),
                "external_id": text(200, blank=False),
                "title": text(300),
                "text": text(),
                "sentences": json_array,
                "meta": json_object,
            },
            # A copy in the study's own dataset of attention-check documents (crowd studies), not its dataset.
            added={"attention_check": (2, boolean, False)},
        ),
        Member(
            "summaries.jsonl",
            {
                "id": identifier(),
                "document": identifier(),
                "external_id": text(200, blank=False),
                "system": text(100),
                "text": text(),
                "sentences": json_array,
                "is_reference": boolean,
                "meta": json_object,
            },
        ),
        Member("human_scores.jsonl", _SCORE),
        Member("metric_scores.jsonl", _SCORE),
        Member(
            "explanations.jsonl",
            {
                "id": identifier(),
                "summary": identifier(),
                "metric": text(50, blank=False),
                "config": json_object,
                "config_hash": text(64, blank=False),
                "model_ids": json_object,
                "code_version": text(20),
                "score": number(null=True),
                "scores": json_object,
                "payload": json_object,
                "error": text(),
                "created_at": timestamp(),
            },
        ),
        Member("people.jsonl", {"username": username()}),
        Member(
            "study.json",
            {
                "name": text(200, blank=False),
                "kind": choice("study_kind"),
                "description": text(),
                "annotators_per_item": integer(1, SMALLINT_MAX),
                "one_task_per_summary": boolean,
                "reclaim_after_hours": integer(1, INT32_MAX, null=True),
                "skipped_items_reassigned": boolean,
                "selection": json_object,
                "created_by": username(null=True),
                "researchers": usernames,
                "annotators": usernames,
                "created_at": timestamp(),
            },
            lines=False,
            added={
                "pull_based": (2, boolean, False),
                "condition_design": (2, choice("condition_design"), "between"),
                "adjudicators": (2, usernames, []),
            },
        ),
        Member(
            "tasks.jsonl",
            {
                "id": identifier(),
                "task": choice("task"),
                "guidelines": text(),
                "guidelines_version": integer(1),
                "explanation_config_hash": text(64),
                "options": json_object,
            },
        ),
        Member(
            "guidelines.jsonl",
            {
                "task": identifier(),
                "version": integer(1),
                "text": text(),
                "created_by": username(null=True),
                "created_at": timestamp(),
            },
        ),
        Member(
            "examples.jsonl",
            {
                "task": identifier(),
                "summary": identifier(),
                "explanation": identifier(null=True),
                "params": json_object,
                "judgements": json_array,
                "explanation_text": text(),
                "position": integer(),
                "created_by": username(null=True),
                "annotated_at": timestamp(null=True),
                "created_at": timestamp(),
            },
        ),
        Member(
            "items.jsonl",
            {
                "id": identifier(),
                "task": identifier(),
                "summary": identifier(),
                "explanation": identifier(null=True),
                "position": integer(),
                "params": json_object,
            },
        ),
        Member(
            "assignments.jsonl",
            {
                "id": identifier(),
                "item": identifier(),
                "annotator": username(),
                "status": choice("assignment_status"),
                "position": integer(),
                "comment": text(),
                "time_spent": number(0),
                "guidelines_version": integer(1, null=True),
                "draft": json_object,
                "draft_saved_at": timestamp(null=True),
                "touched_at": timestamp(),
                "skip_reason": choice("skip_reason", blank=True),
                "skip_note": text(),
                "skipped_at": timestamp(null=True),
                "submitted_at": timestamp(null=True),
                **_TIMES,
            },
            added={"condition": (2, identifier(null=True), None)},
        ),
        Member(
            "judgements.jsonl",
            {
                "assignment": identifier(),
                "unit_index": integer(),
                "unit_text": text(),
                "label": text(50, blank=False),
                "start": integer(null=True),
                "end": integer(null=True),
                "note": text(),
                "data": json_object,
                **_TIMES,
            },
        ),
        Member(
            "participations.jsonl",
            {
                "annotator": username(),
                "platform": choice("platform"),
                "external_id": text(100),
                "excluded": boolean,
                "excluded_reason": text(),
                "excluded_at": timestamp(null=True),
                "excluded_by": username(null=True),
                "review": choice("review"),
                "bonus": decimal,
                **_TIMES,
            },
            added={
                "condition": (2, identifier(null=True), None),
                # What the crowd platform last said of the worker's submission (returned, timed out, ...).
                "platform_status": (2, text(30), ""),
                "platform_status_at": (2, timestamp(null=True), None),
            },
        ),
        # Version 2: conditions, payment rules, final labels, crowd settings and workers, LLM judge runs.
        Member(
            "conditions.jsonl",
            {
                "id": identifier(),
                "name": text(100, blank=False),
                "position": integer(0, SMALLINT_MAX),
                "evidence": choice("evidence"),
                "guidelines": json_object,
                "created_at": timestamp(),
            },
            since=2,
        ),
        Member(
            "payment_rules.jsonl",
            {
                "per_item": decimal,
                "per_accepted_item": decimal,
                "gold_bonus": decimal,
                "gold_min_percent": integer(0, 100),
                "currency": text(3, blank=False),
                "updated_by": username(null=True),
                "updated_at": timestamp(),
            },
            since=2,
        ),
        Member(
            "final_labels.jsonl",
            {
                "item": identifier(),
                "unit_index": integer(),
                "unit_text": text(),
                "label": text(50),
                "status": choice("final_status"),
                "method": text(40),
                "adjudicated_by": username(null=True),
                "adjudicated_at": timestamp(null=True),
                "note": text(),
                "aggregated_label": text(50),
                "aggregated_method": text(40),
                "n_raters": integer(0, SMALLINT_MAX),
                "agreement": number(0, null=True),
                "version": integer(1),
                # A span or edit task's final spans or edit (unit 0 of its item); {} for label tasks.
                "data": json_object,
                **_TIMES,
            },
            since=2,
        ),
        Member(
            "crowd_studies.jsonl",
            {
                "public": boolean,
                "platform": choice("platform"),
                "worker_param": text(50),
                "study_param": text(50),
                "session_param": text(50),
                "phases": json_array,
                "consent_text": text(),
                "instructions": text(),
                "pre_survey": json_array,
                "post_survey": json_array,
                "training_rule": choice("pass_rule"),
                "training_value": integer(0, SMALLINT_MAX),
                "training_attempts": integer(0, SMALLINT_MAX),
                "check_rate": number(0),
                "attention_warn_at": integer(0, SMALLINT_MAX, null=True),
                "attention_block_at": integer(0, SMALLINT_MAX, null=True),
                "min_seconds": json_object,
                "min_explanation_chars": integer(),
                "time_warn_at": integer(0, SMALLINT_MAX, null=True),
                "time_block_at": integer(0, SMALLINT_MAX, null=True),
                "completion_code": text(100),
                "screenout_code": text(100),
                "failure_code": text(100),
                "completion_url": text(500),
                "screenout_url": text(500),
                "failure_url": text(500),
                "max_items_per_worker": integer(),
                "timeout_minutes": integer(),
                **_TIMES,
            },
            since=2,
        ),
        Member(
            "training_items.jsonl",
            {
                "id": identifier(),
                "document": identifier(),
                "summary_text": text(),
                "expected": text(20, blank=False),
                "explanation": text(),
                "position": integer(),
            },
            since=2,
        ),
        Member(
            "crowd_checks.jsonl",
            {
                "item": identifier(),
                "kind": text(20, blank=False),
                "expected": text(20, blank=False),
                "span_start": integer(null=True),
                "span_end": integer(null=True),
                "source": json_object,
            },
            since=2,
        ),
        Member(
            "crowd_workers.jsonl",
            {
                "id": identifier(),
                "annotator": username(),
                "platform_study_id": text(100),
                "platform_session_id": text(100),
                "status": choice("worker_status"),
                "phase": choice("phase"),
                "consented_at": timestamp(null=True),
                "training_attempt": integer(0, SMALLINT_MAX),
                "training_answers": json_object,
                "training_results": json_array,
                "survey_answers": json_object,
                "warnings": json_array,
                "end_reason": text(),
                "started_at": timestamp(),
                "last_seen_at": timestamp(),
                "finished_at": timestamp(null=True),
            },
            since=2,
        ),
        Member(
            "crowd_records.jsonl",
            {
                "assignment": identifier(),
                "worker": identifier(),
                "paste_events": integer(),
                "evaluated_at": timestamp(null=True),
                "check_passed": boolean_or_null,
                "check_reason": text(),
            },
            since=2,
        ),
        Member(
            "model_raters.jsonl",
            {
                "id": identifier(),
                "username": username(),
                "endpoint": text(500, blank=False),
                "model": text(200, blank=False),
                "parameters": json_object,
                "key": text(64, blank=False),
                "created_at": timestamp(),
            },
            since=2,
        ),
        Member(
            "judge_runs.jsonl",
            {
                "id": identifier(),
                "task": identifier(),
                "rater": identifier(),
                "created_by": username(null=True),
                "status": choice("judge_run_status"),
                "reason": text(),
                "api_key_variable": text(100),
                "max_requests": integer(),
                "max_tokens": integer(),
                "max_seconds": integer(),
                "tries": integer(0, SMALLINT_MAX),
                "guidelines_version": integer(),
                **{name: integer() for name in _RUN_COUNTS},
                "seconds": number(0),
                "created_at": timestamp(),
                "started_at": timestamp(null=True),
                "heartbeat_at": timestamp(null=True),
                "finished_at": timestamp(null=True),
            },
            since=2,
        ),
        Member(
            "judge_items.jsonl",
            {
                "run": identifier(),
                "item": identifier(),
                "status": choice("judge_item_status"),
                "model": text(200, blank=False),
                "endpoint": text(500),
                "parameters": json_object,
                "prompt": json_array,
                "prompt_hash": text(64, blank=False),
                "response": text(),
                "reason": text(),
                "tries": integer(0, SMALLINT_MAX),
                "from_cache": boolean,
                "created_at": timestamp(),
            },
            since=2,
        ),
        Member(
            "cached_responses.jsonl",
            {
                "prompt_hash": text(64, blank=False),
                "model": text(200, blank=False),
                "content": text(),
                "prompt_tokens": integer(),
                "completion_tokens": integer(),
                "created_at": timestamp(),
            },
            since=2,
        ),
    )
}


# --- writing ------------------------------------------------------------------------------------------


def _encoded(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} into a bundle")


def dumps(value: Any) -> str:
    """One member row: compact JSON, no NaN or Infinity (a non-finite number is a bug of the writer)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_encoded)


@cache
def app_code_version() -> str:
    """This code's version: the package version, and the git commit when the code runs from a checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = "unknown"
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    return f"{version}+git.{described}" if described else str(version)


class BundleWriter:
    """Writes members one after another into a zip (streamed: a JSONL member is never held whole), then
    the manifest with each member's sha256, size and row count."""

    def __init__(
        self, output: IO[bytes], *, bundle_id: str, created_at: datetime, format_version: int = FORMAT_VERSION
    ) -> None:
        self.archive = zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED)
        self.bundle_id = bundle_id
        self.created_at = created_at
        self.format_version = format_version  # an earlier one only to test that older bundles still import
        self.members: dict[str, dict[str, Any]] = {}

    def _write(self, name: str, lines: Iterable[str], *, required: bool) -> int:
        if name in self.members or not _MEMBER_NAME.fullmatch(name) or name == MANIFEST:
            raise ValueError(f"bad or repeated member name {name!r}")
        digest = hashlib.sha256()
        size = rows = 0
        with self.archive.open(name, "w", force_zip64=True) as handle:
            for line in lines:
                data = line.encode("utf-8")
                digest.update(data)
                handle.write(data)
                size += len(data)
                rows += 1
        self.members[name] = {"sha256": digest.hexdigest(), "bytes": size, "rows": rows, "required": required}
        return rows

    def json_member(self, name: str, value: Mapping[str, Any], *, required: bool = True) -> None:
        self._write(name, [dumps(value) + "\n"], required=required)

    def jsonl_member(self, name: str, rows: Iterable[Mapping[str, Any]], *, required: bool = True) -> int:
        return self._write(name, (dumps(row) + "\n" for row in rows), required=required)

    def close(self) -> dict[str, Any]:
        manifest = {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "bundle_id": self.bundle_id,
            "app_version": app_code_version(),
            "created_at": self.created_at.isoformat(),
            "members": self.members,
            "counts": {name: meta["rows"] for name, meta in self.members.items() if name.endswith(".jsonl")},
        }
        self.archive.writestr(MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        self.archive.close()
        return manifest


# --- reading ------------------------------------------------------------------------------------------

Row = dict[str, Any]


@dataclass
class BundleContents:
    manifest: dict[str, Any]
    objects: dict[str, Row] = field(default_factory=dict)  # JSON members
    rows: dict[str, list[tuple[int, Row]]] = field(default_factory=dict)  # JSONL members: (line, row)
    ignored: list[str] = field(default_factory=list)  # optional members this version does not read

    def table(self, name: str) -> list[Row]:
        return [row for _, row in self.rows[name]]


class _Problems:
    def __init__(self) -> None:
        self.found: list[Problem] = []

    def add(self, member: str, message: str, *, line: int | None = None, field: str = "") -> None:
        self.found.append(Problem(member, line, field, message))
        if len(self.found) >= MAX_ERRORS:
            raise BundleInvalid(self.found)

    def raise_any(self) -> None:
        if self.found:
            raise BundleInvalid(self.found)


def _checked_row(member: Member, version: int, value: Any, line: int | None, problems: _Problems) -> Row | None:
    """The row with the fields of `version` checked, and the fields later versions added at what an older
    row reads as (so the import sees rows of the current version)."""
    if not isinstance(value, dict):
        problems.add(member.name, f"must be a JSON object, got {type(value).__name__}", line=line)
        return None
    fields = member.fields_of(version)
    unknown = sorted(set(value) - set(fields))
    if unknown:
        problems.add(member.name, "unknown field (a newer format?)", line=line, field=printable(unknown[0])[:60])
        return None
    missing = [name for name in fields if name not in value]
    if missing:
        problems.add(member.name, "missing field", line=line, field=missing[0])
        return None
    row: Row = {}
    for name, check in fields.items():
        try:
            row[name] = check(value[name], name)
        except InputError as exc:
            problems.add(member.name, exc.message, line=line, field=exc.field)
            return None
    return {**row, **member.defaults_of(version)}


def _member_verify(archive: zipfile.ZipFile, info: zipfile.ZipInfo, expected: Mapping[str, Any]) -> None:
    """The member's bytes have the manifest's size and sha256 (read before any row is trusted)."""
    digest = hashlib.sha256()
    size = 0
    with archive.open(info) as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
            size += len(chunk)
    if size != expected["bytes"] or digest.hexdigest() != expected["sha256"]:
        raise invalid(info.filename, "the member's sha256 or size differs from the manifest: the bundle was changed")


def _member_lines(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's lines, each at most MAX_LINE_BYTES."""
    with archive.open(info) as handle:
        while line := handle.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                raise invalid(info.filename, f"a line is longer than {MAX_LINE_BYTES:,} bytes")
            yield line


def _manifest(archive: zipfile.ZipFile, infos: Mapping[str, zipfile.ZipInfo]) -> dict[str, Any]:
    if MANIFEST not in infos:
        raise invalid(MANIFEST, "missing: this is not a FaithAnno study bundle")
    if infos[MANIFEST].file_size > 1024 * 1024:
        raise invalid(MANIFEST, "is larger than 1 MiB")
    with archive.open(infos[MANIFEST]) as handle:
        try:
            manifest = json_parse(handle.read())
        except InputError as exc:
            raise invalid(MANIFEST, exc.message, field=exc.field) from None
    if not isinstance(manifest, dict):
        raise invalid(MANIFEST, "must be a JSON object")
    if manifest.get("format") != FORMAT_NAME:
        raise invalid(MANIFEST, f"must be {FORMAT_NAME!r}: this is not a FaithAnno study bundle", field="format")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise invalid(MANIFEST, "must be a whole number from 1", field="format_version")
    if version > FORMAT_VERSION:
        writer = manifest.get("app_version")
        raise invalid(
            MANIFEST,
            f"the bundle has format version {version}, written by FaithAnno {printable(str(writer))[:60]}; "
            f"this FaithAnno reads format versions up to {FORMAT_VERSION}: import it with a newer FaithAnno",
            field="format_version",
        )
    for name in ("bundle_id", "app_version", "created_at"):
        try:
            storable_text(manifest.get(name), field=name, max_chars=100)
        except InputError as exc:
            raise invalid(MANIFEST, exc.message, field=name) from None
    members = manifest.get("members")
    if not isinstance(members, dict):
        raise invalid(MANIFEST, "must be an object of member name -> sha256, bytes, rows, required", field="members")
    for name, meta in members.items():
        where = f"members.{printable(name)[:70]}"
        if not _MEMBER_NAME.fullmatch(name) or name == MANIFEST:
            raise invalid(MANIFEST, "is not a plain member name (a-z, 0-9, _ then .json or .jsonl)", field=where)
        if (
            not isinstance(meta, dict)
            or not isinstance(meta.get("sha256"), str)
            or not isinstance(meta.get("required"), bool)
            or not isinstance(meta.get("bytes"), int)
            or not isinstance(meta.get("rows"), int)
        ):
            raise invalid(MANIFEST, "must hold sha256 (text), bytes, rows (whole numbers) and required", field=where)
    return manifest


def bundle_read(source: IO[bytes], *, max_uncompressed: int, choices: Mapping[str, Collection[str]]) -> BundleContents:
    """Every member of the bundle, checked (see the module's docstring); raises BundleInvalid."""
    _choices.set(choices)
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise invalid("the bundle", f"is not a readable zip archive ({exc})") from None
    with archive:
        infos_list = archive.infolist()
        if len(infos_list) > MAX_MEMBERS:
            raise invalid("the bundle", f"has {len(infos_list)} files; a bundle has at most {MAX_MEMBERS}")
        infos: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos_list:
            shown = printable(info.filename)[:80]
            if not _MEMBER_NAME.fullmatch(info.filename):
                raise invalid(shown, "is not a plain member name (no folders, '..', or other characters)")
            if info.filename in infos:
                raise invalid(shown, "appears twice in the archive")
            if info.flag_bits & 0x1:
                raise invalid(shown, "is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise invalid(shown, "uses a compression other than deflate")
            total += info.file_size
            if total > max_uncompressed:
                raise invalid(
                    shown, f"the archive unpacks to more than {max_uncompressed:,} bytes (FAITHANNO_BUNDLE_MAX_BYTES)"
                )
            infos[info.filename] = info
        manifest = _manifest(archive, infos)
        listed: dict[str, dict[str, Any]] = manifest["members"]
        for name in infos:
            if name != MANIFEST and name not in listed:
                raise invalid(name, "is in the archive but not in the manifest: the bundle was changed")
        contents = BundleContents(manifest)
        version: int = manifest["format_version"]
        known = {name: member for name, member in MEMBERS.items() if member.since <= version}
        for name in MEMBERS:
            if name not in known:
                contents.rows[name] = []  # a member of a later version: an older bundle has none of its rows
            elif name not in listed:
                raise invalid(name, f"missing from the manifest: every format version {version} bundle has it")
        for name, meta in listed.items():
            if name not in known:
                if meta["required"]:
                    raise invalid(
                        name,
                        "is required by the bundle but unknown to this FaithAnno: import it with a newer FaithAnno",
                    )
                contents.ignored.append(name)
                continue
            if name not in infos:
                raise invalid(name, "is listed in the manifest but missing from the archive")
            _read_member(archive, infos[name], meta, version, contents)
    references_check(contents)
    return contents


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, meta: Mapping[str, Any], version: int, out: BundleContents
) -> None:
    member = MEMBERS[info.filename]
    problems = _Problems()
    rows: list[tuple[int, Row]] = []
    try:
        _member_verify(archive, info, meta)
        for number_, raw in enumerate(_member_lines(archive, info), start=1):
            line = number_ if member.lines else None
            if not raw.strip():
                problems.add(member.name, "empty line", line=line)
                continue
            try:
                value = json_parse(raw)
            except InputError as exc:
                problems.add(member.name, exc.message, line=line, field=exc.field)
                continue
            row = _checked_row(member, version, value, line, problems)
            if row is not None:
                rows.append((number_, row))
    except BundleInvalid:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:  # a bad CRC, a truncated stream
        raise invalid(member.name, f"cannot be read from the archive ({exc})") from None
    problems.raise_any()
    if len(rows) != meta["rows"]:
        raise invalid(member.name, f"has {len(rows)} rows, the manifest says {meta['rows']}")
    if member.lines:
        out.rows[member.name] = rows
    elif len(rows) != 1:
        raise invalid(member.name, "must hold exactly one JSON object")
    else:
        out.objects[member.name] = rows[0][1]


# --- references between members -------------------------------------------------------------------------


def _keys(contents: BundleContents, name: str, key: str | tuple[str, ...], problems: _Problems) -> set[Any]:
    """The unique keys of a member's rows; a repeated one is a problem."""
    seen: set[Any] = set()
    for line, row in contents.rows[name]:
        value = tuple(row[part] for part in key) if isinstance(key, tuple) else row[key]
        if value in seen:
            fields = "+".join(key) if isinstance(key, tuple) else key
            problems.add(name, f"repeats {printable(str(value))[:80]}", line=line, field=fields)
        seen.add(value)
    return seen


def _refer(
    contents: BundleContents, name: str, field_: str, targets: Collection[Any], target: str, problems: _Problems
) -> None:
    for line, row in contents.rows[name]:
        value = row[field_]
        if value is not None and value not in targets:
            problems.add(
                name, f"refers to {printable(str(value))[:80]}, which {target} does not hold", line=line, field=field_
            )


def references_check(contents: BundleContents) -> None:
    """Every reference points at a row of the member it names; what must be unique is."""
    problems = _Problems()
    documents = _keys(contents, "documents.jsonl", "id", problems)
    summaries = _keys(contents, "summaries.jsonl", "id", problems)
    _keys(contents, "summaries.jsonl", ("document", "external_id"), problems)
    _refer(contents, "summaries.jsonl", "document", documents, "documents.jsonl", problems)
    for name in ("human_scores.jsonl", "metric_scores.jsonl"):
        _keys(contents, name, ("summary", "name"), problems)
        _refer(contents, name, "summary", summaries, "summaries.jsonl", problems)
    explanations = _keys(contents, "explanations.jsonl", "id", problems)
    _keys(contents, "explanations.jsonl", ("summary", "metric", "config_hash"), problems)
    _refer(contents, "explanations.jsonl", "summary", summaries, "summaries.jsonl", problems)
    explained = {row["id"]: row["summary"] for row in contents.table("explanations.jsonl")}
    people = _keys(contents, "people.jsonl", "username", problems)
    study = contents.objects["study.json"]
    for index, name in enumerate(study["annotators"]):
        if name not in people:
            problems.add(
                "study.json", f"refers to {name}, which people.jsonl does not hold", field=f"annotators.{index}"
            )
    tasks = _keys(contents, "tasks.jsonl", "id", problems)
    _keys(contents, "tasks.jsonl", "task", problems)
    _keys(contents, "guidelines.jsonl", ("task", "version"), problems)
    _refer(contents, "guidelines.jsonl", "task", tasks, "tasks.jsonl", problems)
    for name in ("examples.jsonl", "items.jsonl"):
        _refer(contents, name, "task", tasks, "tasks.jsonl", problems)
        _refer(contents, name, "summary", summaries, "summaries.jsonl", problems)
        _refer(contents, name, "explanation", explanations, "explanations.jsonl", problems)
        for line, row in contents.rows[name]:
            if row["explanation"] is not None and explained.get(row["explanation"], row["summary"]) != row["summary"]:
                problems.add(name, "is an explanation of another summary", line=line, field="explanation")
    items = _keys(contents, "items.jsonl", "id", problems)
    _keys(contents, "items.jsonl", ("task", "summary"), problems)
    assignments = _keys(contents, "assignments.jsonl", "id", problems)
    _keys(contents, "assignments.jsonl", ("item", "annotator"), problems)
    _refer(contents, "assignments.jsonl", "item", items, "items.jsonl", problems)
    _refer(contents, "assignments.jsonl", "annotator", people, "people.jsonl", problems)
    _keys(contents, "judgements.jsonl", ("assignment", "unit_index"), problems)
    _refer(contents, "judgements.jsonl", "assignment", assignments, "assignments.jsonl", problems)
    for line, row in contents.rows["judgements.jsonl"]:
        if (row["start"] is None) != (row["end"] is None) or (row["start"] is not None and row["end"] < row["start"]):
            problems.add("judgements.jsonl", "a span needs start and end with start <= end", line=line, field="end")
    _keys(contents, "participations.jsonl", "annotator", problems)
    _refer(contents, "participations.jsonl", "annotator", people, "people.jsonl", problems)
    external = [(line, row) for line, row in contents.rows["participations.jsonl"] if row["external_id"]]
    seen: set[tuple[str, str]] = set()
    for line, row in external:
        key = (row["platform"], row["external_id"])
        if key in seen:
            problems.add("participations.jsonl", "repeats a platform's worker id", line=line, field="external_id")
        seen.add(key)
    _documents_check(contents, problems)
    if contents.manifest["format_version"] >= 2:
        _deciders_check(contents, people, problems)
    _conditions_check(contents, problems)
    _crowd_check(contents, documents, items, assignments, people, problems)
    _judges_check(contents, tasks, items, people, problems)
    problems.raise_any()


def _documents_check(contents: BundleContents, problems: _Problems) -> None:
    """A document's external id is unique within its dataset: the study's, or its attention checks'."""
    _keys(contents, "documents.jsonl", ("attention_check", "external_id"), problems)


def _deciders_check(contents: BundleContents, people: set[Any], problems: _Problems) -> None:
    """Everyone a version 2 bundle names for a decision (who excluded, adjudicated, wrote guidelines or
    examples, set the payment rules or ran a judge) is in people.jsonl, so the import maps them by name."""
    for index, name in enumerate(contents.objects["study.json"]["adjudicators"]):
        if name not in people:
            problems.add(
                "study.json", f"refers to {name}, which people.jsonl does not hold", field=f"adjudicators.{index}"
            )
    for member, field_ in (
        ("guidelines.jsonl", "created_by"),
        ("examples.jsonl", "created_by"),
        ("participations.jsonl", "excluded_by"),
        ("final_labels.jsonl", "adjudicated_by"),
        ("payment_rules.jsonl", "updated_by"),
        ("judge_runs.jsonl", "created_by"),
    ):
        _refer(contents, member, field_, people, "people.jsonl", problems)


def _at_most_one(contents: BundleContents, name: str, problems: _Problems) -> None:
    for line, _ in contents.rows[name][1:]:
        problems.add(name, "holds at most one row (the study's)", line=line)


def _conditions_check(contents: BundleContents, problems: _Problems) -> None:
    conditions = _keys(contents, "conditions.jsonl", "id", problems)
    _keys(contents, "conditions.jsonl", "name", problems)
    tasks = {row["task"] for row in contents.table("tasks.jsonl")}
    for line, row in contents.rows["conditions.jsonl"]:
        for task, text_ in row["guidelines"].items():
            if task not in tasks or not isinstance(text_, str):
                message = "must map tasks of tasks.jsonl to their guidelines text"
                problems.add("conditions.jsonl", message, line=line, field=f"guidelines.{printable(task)[:40]}")
    for name in ("assignments.jsonl", "participations.jsonl"):
        _refer(contents, name, "condition", conditions, "conditions.jsonl", problems)


def _crowd_check(
    contents: BundleContents,
    documents: set[Any],
    items: set[Any],
    assignments: set[Any],
    people: set[Any],
    problems: _Problems,
) -> None:
    _at_most_one(contents, "crowd_studies.jsonl", problems)
    _at_most_one(contents, "payment_rules.jsonl", problems)
    for name in ("training_items.jsonl", "crowd_checks.jsonl", "crowd_workers.jsonl"):
        if contents.rows[name] and not contents.rows["crowd_studies.jsonl"]:
            line = contents.rows[name][0][0]
            problems.add(name, "needs the study's crowd settings (crowd_studies.jsonl has none)", line=line)
    training = _keys(contents, "training_items.jsonl", "id", problems)
    _refer(contents, "training_items.jsonl", "document", documents, "documents.jsonl", problems)
    _keys(contents, "crowd_checks.jsonl", "item", problems)
    _refer(contents, "crowd_checks.jsonl", "item", items, "items.jsonl", problems)
    workers = _keys(contents, "crowd_workers.jsonl", "id", problems)
    _keys(contents, "crowd_workers.jsonl", "annotator", problems)
    standing = {row["annotator"] for row in contents.table("participations.jsonl")}
    _refer(contents, "crowd_workers.jsonl", "annotator", standing, "participations.jsonl", problems)
    for line, row in contents.rows["crowd_workers.jsonl"]:
        for key in row["training_answers"]:
            if not key.isdigit() or int(key) not in training:
                shown = printable(key)[:40]
                message = f"names the training item {shown}, which training_items.jsonl does not hold"
                problems.add("crowd_workers.jsonl", message, line=line, field="training_answers")
    _keys(contents, "crowd_records.jsonl", "assignment", problems)
    _refer(contents, "crowd_records.jsonl", "assignment", assignments, "assignments.jsonl", problems)
    _refer(contents, "crowd_records.jsonl", "worker", workers, "crowd_workers.jsonl", problems)
    annotator_of = {row["id"]: row["annotator"] for row in contents.table("assignments.jsonl")}
    worker_of = {row["id"]: row["annotator"] for row in contents.table("crowd_workers.jsonl")}
    for line, row in contents.rows["crowd_records.jsonl"]:
        if annotator_of.get(row["assignment"], worker_of.get(row["worker"])) != worker_of.get(row["worker"]):
            problems.add("crowd_records.jsonl", "is an assignment of another annotator", line=line, field="worker")
    _keys(contents, "final_labels.jsonl", ("item", "unit_index"), problems)
    _refer(contents, "final_labels.jsonl", "item", items, "items.jsonl", problems)


def _judges_check(
    contents: BundleContents, tasks: set[Any], items: set[Any], people: set[Any], problems: _Problems
) -> None:
    raters = _keys(contents, "model_raters.jsonl", "id", problems)
    _keys(contents, "model_raters.jsonl", "username", problems)
    _keys(contents, "model_raters.jsonl", "key", problems)
    _refer(contents, "model_raters.jsonl", "username", people, "people.jsonl", problems)
    runs = _keys(contents, "judge_runs.jsonl", "id", problems)
    _refer(contents, "judge_runs.jsonl", "task", tasks, "tasks.jsonl", problems)
    _refer(contents, "judge_runs.jsonl", "rater", raters, "model_raters.jsonl", problems)
    _keys(contents, "judge_items.jsonl", ("run", "item"), problems)
    _refer(contents, "judge_items.jsonl", "run", runs, "judge_runs.jsonl", problems)
    _refer(contents, "judge_items.jsonl", "item", items, "items.jsonl", problems)
    task_of_item = {row["id"]: row["task"] for row in contents.table("items.jsonl")}
    task_of_run = {row["id"]: row["task"] for row in contents.table("judge_runs.jsonl")}
    for line, row in contents.rows["judge_items.jsonl"]:
        if task_of_item.get(row["item"], task_of_run.get(row["run"])) != task_of_run.get(row["run"]):
            problems.add("judge_items.jsonl", "is an item of another task than the run's", line=line, field="item")
    _keys(contents, "cached_responses.jsonl", "prompt_hash", problems)
