"""Bundles are hostile input: each bad one is refused naming member, line and field, and changes nothing."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from bundles.format import MANIFEST, BundleInvalid
from bundles.services.bundle_export import study_bundle_export
from bundles.services.bundle_import import study_bundle_import
from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.api.conftest import api_client_for
from tests.conftest import units_of
from tests.snapshots import changed_tables, database_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(bertscore_study: Study, alice: AbstractUser, bob: AbstractUser) -> bytes:
    for user in (alice, bob):
        for assignment in Assignment.objects.filter(annotator=user, item__study_task__study=bertscore_study)[:2]:
            labels = {unit.index: "correct" for unit in units_of(assignment)}
            assignment_submit(assignment=assignment, user=user, labels=labels, seconds=12)
    out = io.BytesIO()
    study_bundle_export(study=bertscore_study, output=out)
    return out.getvalue()


def members_of(bundle: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rebuilt(
    bundle: bytes,
    *,
    change: Callable[[dict[str, bytes]], None] = lambda members: None,
    manifest: Callable[[dict[str, Any]], None] = lambda manifest: None,
    rehash: bool = True,
) -> bytes:
    """The bundle with its members changed; `rehash`: the manifest's sha256s and sizes follow the change (a
    forger's bundle rather than a damaged one)."""
    members = members_of(bundle)
    meta = json.loads(members.pop(MANIFEST))
    change(members)
    if rehash:
        for name, data in members.items():
            if name in meta["members"]:
                rows = data.count(b"\n")
                meta["members"][name].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), rows=rows)
    manifest(meta)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr(MANIFEST, json.dumps(meta))
    return out.getvalue()


def refused(data: bytes, user: AbstractUser | None = None) -> BundleInvalid:
    before = database_state()
    with pytest.raises(BundleInvalid) as raised:
        study_bundle_import(source=io.BytesIO(data), user=user)
    assert changed_tables(before, database_state()) == []
    return raised.value


def edit_line(member: str, line: int, edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, bytes]], None]:
    def change(members: dict[str, bytes]) -> None:
        rows = members[member].decode().splitlines()
        row = json.loads(rows[line - 1])
        edit(row)
        rows[line - 1] = json.dumps(row)
        members[member] = ("\n".join(rows) + "\n").encode()

    return change


def test_it_refuses_a_bundle_of_a_newer_format_version_saying_so(bundle: bytes) -> None:
    error = refused(rebuilt(bundle, manifest=lambda meta: meta.update(format_version=3)))
    (problem,) = error.problems
    assert (problem.member, problem.field) == ("manifest.json", "format_version")
    assert "format version 3" in problem.message and "newer FaithAnno" in problem.message
    assert "reads format versions up to 2" in problem.message


def test_it_refuses_a_bundle_with_a_missing_file(bundle: bytes) -> None:
    gone = refused(rebuilt(bundle, change=lambda members: members.pop("judgements.jsonl"), rehash=False))
    assert str(gone) == "judgements.jsonl: is listed in the manifest but missing from the archive"

    def unlisted(meta: dict[str, Any]) -> None:
        del meta["members"]["items.jsonl"]

    never = refused(rebuilt(bundle, change=lambda members: members.pop("items.jsonl"), manifest=unlisted))
    assert "items.jsonl: missing from the manifest" in str(never)
    no_manifest = io.BytesIO()
    with zipfile.ZipFile(no_manifest, "w") as archive:
        archive.writestr("study.json", "{}")
    assert "manifest.json: missing" in str(refused(no_manifest.getvalue()))


def test_it_refuses_a_changed_member_and_an_unlisted_one(bundle: bytes) -> None:
    def tamper(members: dict[str, bytes]) -> None:
        members["judgements.jsonl"] = members["judgements.jsonl"].replace(b'"correct"', b'"incorrect"', 1)

    changed = refused(rebuilt(bundle, change=tamper, rehash=False))
    assert str(changed).startswith("judgements.jsonl: the member's sha256 or size differs from the manifest")
    extra = refused(rebuilt(bundle, change=lambda members: members.update({"notes.json": b"{}\n"})))
    assert "notes.json: is in the archive but not in the manifest" in str(extra)


@pytest.mark.parametrize("name", ["../evil.jsonl", "folder/study.json", "/etc/passwd", "Study.JSON", "a\\b.json"])
def test_it_refuses_member_names_that_are_not_plain_names(bundle: bytes, name: str) -> None:
    error = refused(rebuilt(bundle, change=lambda members: members.update({name: b"{}\n"})))
    assert "is not a plain member name" in str(error)


def test_it_bounds_what_a_bundle_unpacks_to(bundle: bytes, settings: Any) -> None:
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members_of(bundle).items():
            archive.writestr(name, data)
        archive.writestr("padding.jsonl", b"\n" * (64 * 1024 * 1024))
    assert len(bomb.getvalue()) < 2 * len(bundle) + 200_000  # 64 MiB packed into almost nothing
    settings.FAITHANNO_BUNDLE_MAX_BYTES = 16 * 1024 * 1024
    error = refused(bomb.getvalue())
    assert "padding.jsonl: the archive unpacks to more than 16,777,216 bytes" in str(error)
    settings.FAITHANNO_BUNDLE_MAX_BYTES = 1000
    assert "unpacks to more than 1,000 bytes" in str(refused(bundle))


@pytest.mark.parametrize(
    ("member", "edit", "field", "message"),
    [
        ("judgements.jsonl", lambda row: row.update(label="a\x00b"), "label", "contains a NUL character"),
        ("judgements.jsonl", lambda row: row.update(label=7), "label", "must be text"),
        ("judgements.jsonl", lambda row: row.update(assignment=999999), "assignment", "assignments.jsonl does not"),
        ("judgements.jsonl", lambda row: row.update(start=5, end=2), "end", "start <= end"),
        ("judgements.jsonl", lambda row: row.update(colour="red"), "colour", "unknown field"),
        ("judgements.jsonl", lambda row: row.pop("note"), "note", "missing field"),
        ("assignments.jsonl", lambda row: row.update(status="done"), "status", "must be one of assigned"),
        ("assignments.jsonl", lambda row: row.update(time_spent=-1), "time_spent", "at least 0"),
        ("assignments.jsonl", lambda row: row.update(annotator="zed"), "annotator", "people.jsonl does not hold"),
        ("assignments.jsonl", lambda row: row.update(created_at="yesterday"), "created_at", "ISO 8601"),
        ("assignments.jsonl", lambda row: row.update(created_at="2024-01-01T10:00:00"), "created_at", "time zone"),
        ("items.jsonl", lambda row: row.update(position=2**40), "position", "between 0 and"),
        ("explanations.jsonl", lambda row: row.update(score=True), "score", "must be a number"),
    ],
)
def test_it_names_the_member_line_and_field_of_a_bad_row(
    bundle: bytes, member: str, edit: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    error = refused(rebuilt(bundle, change=edit_line(member, 2, edit)))
    problem = error.problems[0]
    assert (problem.member, problem.line, problem.field) == (member, 2, field), str(error)
    assert message in problem.message
    assert str(problem).startswith(f"{member}, line 2, {field}: ")


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_it_refuses_non_finite_numbers(bundle: bytes, number: bytes) -> None:
    def change(members: dict[str, bytes]) -> None:
        lines = members["assignments.jsonl"].split(b"\n")
        row = json.loads(lines[0])
        row["time_spent"] = 123456.5
        lines[0] = json.dumps(row).encode().replace(b"123456.5", number)
        members["assignments.jsonl"] = b"\n".join(lines)

    problem = refused(rebuilt(bundle, change=change)).problems[0]
    assert (problem.member, problem.line, problem.field) == ("assignments.jsonl", 1, "time_spent")
    assert "finite" in problem.message


def test_it_refuses_what_is_not_a_zip_and_a_manifest_of_another_format(bundle: bytes) -> None:
    assert "is not a readable zip archive" in str(refused(b"PK\x03\x04 not really"))
    other = refused(rebuilt(bundle, manifest=lambda meta: meta.update(format="something-else")))
    assert other.problems[0].field == "format" and "not a FaithAnno study bundle" in str(other)


def test_it_refuses_an_unknown_required_member_and_leaves_out_an_optional_one(
    bundle: bytes, rita: AbstractUser
) -> None:
    def add(name: str, required: bool) -> bytes:
        data = b'{"a": 1}\n'

        def manifest(meta: dict[str, Any]) -> None:
            sha256 = hashlib.sha256(data).hexdigest()
            meta["members"][name] = {"sha256": sha256, "bytes": len(data), "rows": 1, "required": required}

        return rebuilt(bundle, change=lambda members: members.update({name: data}), manifest=manifest)

    unknown = add("llm_votes.jsonl", True)
    assert "llm_votes.jsonl: is required by the bundle but unknown to this FaithAnno" in str(refused(unknown))
    result = study_bundle_import(source=io.BytesIO(add("reviewer_notes.jsonl", False)), user=rita)
    assert result.ignored_members == ["reviewer_notes.jsonl"]


def test_it_refuses_to_import_the_same_bundle_twice(bundle: bytes, rita: AbstractUser) -> None:
    first = study_bundle_import(source=io.BytesIO(bundle), user=rita)
    error = refused(bundle, rita)
    assert str(error) == (
        f"manifest.json, bundle_id: this bundle was already imported as study {first.study.pk}; "
        "delete that study to import it again"
    )
    first.study.delete()
    again = study_bundle_import(source=io.BytesIO(bundle), user=rita)
    assert again.usernames["alice"] == "alice-imported-2"  # the first import's accounts stay


def test_it_answers_a_bad_bundle_on_the_api_with_the_errors_and_an_oversized_one_with_413(
    bundle: bytes, rita: AbstractUser, settings: Any
) -> None:
    bad = rebuilt(bundle, change=edit_line("judgements.jsonl", 1, lambda row: row.update(label="")))
    before = database_state()
    answer = api_client_for(rita).post(
        reverse("api_bundles"), {"file": SimpleUploadedFile("b.zip", bad)}, format="multipart"
    )
    assert answer.status_code == 400
    assert answer.json()["errors"][0] == {
        "member": "judgements.jsonl",
        "line": 1,
        "field": "label",
        "message": "label must not be empty",
    }
    settings.FAITHANNO_UPLOAD_MAX_BYTES = 100
    big = api_client_for(rita).post(
        reverse("api_bundles"), {"file": SimpleUploadedFile("b.zip", bundle)}, format="multipart"
    )
    assert big.status_code == 413
    assert changed_tables(before, database_state()) == ["authtoken_token"]  # rita's API token, made above


def test_it_prints_each_problem_on_the_command_line_and_writes_nothing(bundle: bytes, tmp_path: Any) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    path = tmp_path / "newer.zip"
    path.write_bytes(rebuilt(bundle, manifest=lambda meta: meta.update(format_version=3)))
    before = database_state()
    with pytest.raises(CommandError) as raised:
        call_command("import_study", str(path))
    assert str(raised.value).startswith("Import failed, nothing was written.\n  manifest.json, format_version: ")
    assert "format version 3" in str(raised.value)
    assert changed_tables(before, database_state()) == []
    with pytest.raises(CommandError, match="No study with id 999999"):
        call_command("export_study", "--study", "999999", "--output", str(tmp_path / "x.zip"))
