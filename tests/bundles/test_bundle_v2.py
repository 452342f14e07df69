"""Format version 2: a crowd study with conditions, workers and their answers, exclusions, adjudicated final
labels, payment rules and LLM judge runs comes back whole from its bundle, every analysis and the quality
page give the same numbers and the payment files the same bytes; the API key is never in the bundle; a
version 1 bundle still imports; hostile version 2 members are refused naming member, line and field."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.db.models import RestrictedError
from django.urls import reverse
from django.utils import timezone

from bundles.format import MANIFEST, MEMBERS
from bundles.services.bundle_export import study_bundle_export
from bundles.services.bundle_import import BundleImportResult, study_bundle_import
from common.roles import MODEL
from corpus.models import Dataset
from crowd.models import CrowdItemRecord, CrowdStudy, CrowdWorker, TrainingItem
from crowd.services.assignment import crowd_item_next, crowd_paste_record, crowd_work_evaluate
from crowd.services.workers import crowd_worker_arrive
from judges.models import CachedResponse, JudgeItem, JudgeRun, ModelRater
from judges.services import JudgeSpec, judge_run_create, judge_run_execute
from review.selectors.quality import study_quality
from review.services.adjudication import final_label_adjudicate, study_final_labels_compute
from studies.models import Assignment, FinalLabel, Participation, PaymentRules, Study, StudyCondition
from studies.services.participation import participation_bonus_set, participation_exclude, participation_review
from studies.services.payments import payment_rules_set
from studies.services.studies import assignment_submit
from tests.bundles.test_bad_bundles import edit_line, members_of, rebuilt, refused
from tests.bundles.test_round_trip import analyses
from tests.conftest import client_for, units_of
from tests.crowd.factories import crowd_study_make
from tests.crowd.test_crowd_services import submit, to_annotation
from tests.judges.chat_server import Reply, chat_server

pytestmark = pytest.mark.django_db

SECRET = "sk-bundle-0123456789-secret"
VALID = json.dumps({"judgements": [{"unit": 0, "label": "yes", "note": "supported"}]})
NOW = datetime(2030, 1, 1, tzinfo=UTC)
PAYMENT_FILES = ("prolific-approve", "prolific-reject", "prolific-bonus", "mturk")


def _worker(crowd: CrowdStudy, pid: str) -> CrowdWorker:
    worker, _ = crowd_worker_arrive(crowd=crowd, params={"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": pid})
    return to_annotation(worker)


@pytest.fixture
def full_study(scored_dataset: Dataset, rita: AbstractUser, settings: Any) -> Study:
    """rita's crowd study: three workers (one pastes, one fails a check and is excluded), two conditions,
    payment rules, final labels with an adjudication, an LLM judge run done and one still queued with a key."""
    settings.FAITHANNO_LLM_BACKOFF_SECONDS = 0
    crowd = crowd_study_make(scored_dataset, rita).crowd
    study = crowd.study
    workers = [_worker(crowd, pid) for pid in ("P-ann", "P-ben", "P-cat")]
    for number, worker in enumerate(workers):
        for _ in range(3):
            assignment = crowd_item_next(worker=worker)
            if assignment is None:
                break
            if number == 0:
                crowd_paste_record(worker=worker, assignment_id=assignment.pk)
            check = getattr(assignment.item, "crowd_check", None)
            right = "yes" if check is None or check.expected == "faithful" else "no"
            wrong = "no" if right == "yes" else "yes"
            submit(assignment, wrong if check is not None and number == 2 else right, seconds=5.0 + number)
        crowd_work_evaluate(worker=worker)
    ann, ben, cat = (worker.user for worker in workers)
    participation_exclude(study=study, annotator=cat, reason="failed the attention check", by=rita)
    participation_review(study=study, annotator=ann, review="approved")
    participation_bonus_set(study=study, annotator=ann, amount="0.75")
    participation_review(study=study, annotator=cat, review="rejected")
    payment_rules_set(
        study=study,
        per_item="0.40",
        per_accepted_item="0.10",
        gold_bonus="1.00",
        gold_min_percent=50,
        currency="GBP",
        by=rita,
    )
    shown = StudyCondition.objects.create(study=study, name="highlights", position=0, evidence="shown")
    hidden = StudyCondition.objects.create(
        study=study, name="plain", position=1, evidence="hidden", guidelines={"factuality": "Read it all."}
    )
    Study.objects.filter(pk=study.pk).update(condition_design=Study.ConditionDesign.WITHIN)
    Participation.objects.filter(study=study, annotator=ann).update(condition=shown)
    Participation.objects.filter(study=study, annotator=ben).update(condition=hidden)
    Participation.objects.filter(study=study, annotator=cat).update(
        platform_status="returned", platform_status_at=timezone.now()
    )
    for number, assignment in enumerate(Assignment.objects.filter(item__study_task__study=study).order_by("pk")):
        Assignment.objects.filter(pk=assignment.pk).update(condition=(shown, hidden)[number % 2])
    with chat_server(lambda body: Reply(VALID)) as server:
        run = judge_run_create(
            spec=JudgeSpec(
                study_task=study.tasks.get(),
                endpoint=server.url,
                model="test-model",
                parameters={"temperature": 0.0, "seed": 3},
                max_requests=3,
                api_key=SECRET,
                created_by=rita,
            )
        )
        judge_run_execute(run_id=run.pk, sleep=lambda seconds: None)
        # A second run, never started: it holds the key until it ends.
        judge_run_create(
            spec=JudgeSpec(
                study_task=study.tasks.get(), endpoint=server.url, model="test-model", api_key=SECRET, created_by=rita
            )
        )
    study_final_labels_compute(study=study)
    label = FinalLabel.objects.filter(item__study_task__study=study).order_by("pk").first()
    final_label_adjudicate(
        user=rita, item_id=label.item_id, unit_index=label.unit_index, version=label.version, label="no", note="read"
    )
    study.adjudicators.add(rita)
    study.refresh_from_db()
    return study


def _exported(study: Study) -> bytes:
    out = io.BytesIO()
    study_bundle_export(study=study, output=out)
    return out.getvalue()


def _import(data: bytes, user: AbstractUser) -> BundleImportResult:
    return study_bundle_import(source=io.BytesIO(data), user=user)


def quality(study: Study, names: dict[str, str]) -> dict[str, Any]:
    """The quality page's numbers and decisions, with user names by `names` and ids left out."""
    found = study_quality(study=study, now=NOW)
    rows = []
    for row in found.workers:
        values = {key: value for key, value in vars(row).items() if key not in ("user_id", "payment")}
        values["username"] = names.get(row.username, row.username)
        values["payment"] = repr(row.payment).replace(f"worker={row.username!r}", "")
        rows.append(repr(sorted(values.items())))
    live = {key: value for key, value in vars(found.live).items()}
    return {"workers": sorted(rows), "live": repr(sorted(live.items())), "rules": repr(found.rules)}


def decisions(study: Study, names: dict[str, str]) -> dict[str, Any]:
    """The rows version 2 adds, as their fields say (ids replaced by what they point at)."""

    def name(username: str | None) -> str | None:
        return names.get(username, username) if username else None

    return {
        "final labels": sorted(
            (
                row.item.study_task.task,
                row.item.position,
                row.unit_index,
                row.label,
                row.status,
                row.method,
                name(row.adjudicated_by.username if row.adjudicated_by else None),
                str(row.adjudicated_at),
                row.note,
                row.aggregated_label,
                row.n_raters,
                row.agreement,
                row.version,
            )
            for row in FinalLabel.objects.filter(item__study_task__study=study).select_related(
                "item__study_task", "adjudicated_by"
            )
        ),
        "standing": sorted(
            (
                name(row.annotator.username),
                row.platform,
                row.external_id,
                row.excluded,
                row.excluded_reason,
                str(row.excluded_at),
                name(row.excluded_by.username if row.excluded_by else None),
                row.review,
                str(row.bonus),
                row.condition.name if row.condition else None,
                row.platform_status,
                str(row.platform_status_at),
            )
            for row in Participation.objects.filter(study=study).select_related("annotator", "excluded_by", "condition")
        ),
        "conditions": sorted(
            StudyCondition.objects.filter(study=study).values_list("name", "position", "evidence", "guidelines")
        ),
        "assignment conditions": sorted(
            (
                name(row.annotator.username),
                row.item.position,
                row.item.summary.external_id,
                row.condition.name if row.condition else None,
            )
            for row in Assignment.objects.filter(item__study_task__study=study).select_related(
                "annotator", "item__summary", "condition"
            )
        ),
        "payment rules": list(
            PaymentRules.objects.filter(study=study).values_list(
                "per_item", "per_accepted_item", "gold_bonus", "gold_min_percent", "currency", "updated_at"
            )
        ),
        "payment rules by": [name(row.updated_by.username) for row in PaymentRules.objects.filter(study=study)],
        "design": (
            study.condition_design,
            study.pull_based,
            sorted(name(u.username) for u in study.adjudicators.all()),
        ),
    }


def crowd_rows(study: Study, names: dict[str, str]) -> dict[str, Any]:
    crowd = CrowdStudy.objects.get(study=study)
    settings = {
        field.name: getattr(crowd, field.name)
        for field in CrowdStudy._meta.concrete_fields
        if field.name not in ("id", "study", "key")
    }
    training = {item.pk: item.position for item in TrainingItem.objects.filter(crowd_study=crowd)}
    workers = sorted(
        (
            names.get(worker.user.username, worker.user.username),
            worker.participation.external_id,
            worker.platform_study_id,
            worker.platform_session_id,
            worker.status,
            worker.phase,
            str(worker.consented_at),
            worker.training_attempt,
            sorted((training[int(key)], label) for key, label in worker.training_answers.items()),
            json.dumps(worker.training_results),
            json.dumps(worker.survey_answers, sort_keys=True),
            json.dumps(worker.warnings),
            worker.end_reason,
            str(worker.started_at),
            str(worker.last_seen_at),
            str(worker.finished_at),
        )
        for worker in CrowdWorker.objects.filter(crowd_study=crowd).select_related("user", "participation")
    )
    records = sorted(
        (
            names.get(record.worker.user.username, record.worker.user.username),
            record.assignment.item.position,
            record.paste_events,
            str(record.evaluated_at),
            record.check_passed,
            record.check_reason,
        )
        for record in CrowdItemRecord.objects.filter(worker__crowd_study=crowd).select_related(
            "worker__user", "assignment__item"
        )
    )
    checks = sorted(
        (
            item.position,
            item.crowd_check.kind,
            item.crowd_check.expected,
            item.crowd_check.span_start,
            item.crowd_check.span_end,
            json.dumps(item.crowd_check.source, sort_keys=True),
            item.summary.text,
            item.summary.document.dataset.source_format,
        )
        for item in study.tasks.get()
        .items.filter(crowd_check__isnull=False)
        .select_related("crowd_check", "summary__document__dataset")
    )
    return {
        "settings": repr(sorted(settings.items())),
        "training": sorted(
            (*row, dataset == study.dataset_id)  # the gold items' documents are the study's
            for *row, dataset in TrainingItem.objects.filter(crowd_study=crowd).values_list(
                "position", "summary_text", "expected", "explanation", "document__external_id", "document__dataset"
            )
        ),
        "workers": workers,
        "records": records,
        "checks": checks,
    }


def runs(study: Study, names: dict[str, str]) -> dict[str, Any]:
    found = []
    for run in (
        JudgeRun.objects.filter(study_task__study=study).select_related("rater__user", "created_by").order_by("pk")
    ):
        items = sorted(
            (
                item.item.position,
                item.status,
                item.model,
                item.endpoint,
                json.dumps(item.parameters, sort_keys=True),
                json.dumps(item.prompt),
                item.prompt_hash,
                item.response,
                item.reason,
                item.tries,
                item.from_cache,
                str(item.created_at),
            )
            for item in JudgeItem.objects.filter(run=run).select_related("item")
        )
        found.append(
            (
                names.get(run.rater.user.username, run.rater.user.username),
                run.rater.endpoint,
                run.rater.model,
                json.dumps(run.rater.parameters, sort_keys=True),
                names.get(run.created_by.username, run.created_by.username),
                run.api_key_variable,
                run.max_requests,
                run.tries,
                run.judged,
                run.failed,
                run.cached,
                run.requests,
                run.prompt_tokens,
                run.completion_tokens,
                str(run.created_at),
                items,
            )
        )
    return {"runs": found}


def test_it_round_trips_a_crowd_study_with_every_decision_and_every_number_stays_the_same(
    full_study: Study, rita: AbstractUser, ronald: AbstractUser
) -> None:
    names_before: dict[str, str] = {}
    before = {
        **analyses(full_study, names_before),
        **quality(full_study, names_before),
        **decisions(full_study, names_before),
        **crowd_rows(full_study, names_before),
    }
    client = client_for(rita)
    files_before = {
        name: client.get(reverse("study_payment_file", args=[full_study.pk, name])).content for name in PAYMENT_FILES
    }
    before_runs = runs(full_study, names_before)
    result = _import(_exported(full_study), rita)
    copy = result.study
    names = {new: old for old, new in result.usernames.items()}
    after = {**analyses(copy, names), **quality(copy, names), **decisions(copy, names), **crowd_rows(copy, names)}
    assert set(after) == set(before)
    for key in before:
        assert after[key] == before[key], key
    files_after = {
        name: client.get(reverse("study_payment_file", args=[copy.pk, name])).content for name in PAYMENT_FILES
    }
    assert files_after == files_before
    # Not vacuous: workers were paid and excluded, labels adjudicated, conditions held, checks graded.
    assert b"P-ann" in files_before["prolific-approve"] and b"P-cat" in files_before["prolific-reject"]
    assert any(row[4] == "adjudicated" and row[6] == "rita" for row in before["final labels"])
    assert any(row[3] and row[6] == "rita" for row in before["standing"])
    assert {"highlights", "plain"} <= {row[3] for row in before["assignment conditions"]}
    assert any(row[4] is False for row in before["records"]) and any(row[2] for row in before["records"])
    assert len(before["workers"]) == 3 and before["checks"]
    # (Human-enhanced scores need a metric's task: tests/bundles/test_round_trip.py covers them.)
    assert before["correlations"] and before["factuality disagreements"] and before["kappa"]
    # The runs: the finished one as it was; the one still queued is no longer waiting for a key it never got.
    after_runs = runs(copy, names)
    assert after_runs == before_runs and len(before_runs["runs"]) == 2 and before_runs["runs"][0][-1]
    statuses = list(JudgeRun.objects.filter(study_task__study=copy).order_by("pk").values_list("status", "api_key"))
    assert statuses[0] == ("stopped", "") and statuses[1][0] == "failed" and statuses[1][1] == ""
    # The copy's raters are their own (model role, so no analysis counts them as humans), and since this
    # instance already has raters of the same endpoint, model and parameters, their keys name the bundle too.
    raters = ModelRater.objects.filter(runs__study_task__study=copy).distinct()
    originals = ModelRater.objects.filter(runs__study_task__study=full_study).distinct()
    assert raters.count() == originals.count() == 2
    assert all(rater.user.groups.filter(name=MODEL).exists() for rater in raters)
    assert not {rater.pk for rater in raters} & {rater.pk for rater in originals}
    assert not {rater.key for rater in raters} & {rater.key for rater in originals}
    assert CachedResponse.objects.count() == len({row[6] for row in before_runs["runs"][0][-1]})
    # A new public link, and the attention checks' copies in a dataset of their own.
    assert CrowdStudy.objects.get(study=copy).key != CrowdStudy.objects.get(study=full_study).key
    assert before["checks"][0][-1] == "crowd checks"
    quality_page = client.get(reverse("study_quality", args=[copy.pk])).content.decode()
    assert "failed the attention check" in quality_page and "P-ben" in quality_page


def test_it_never_writes_the_api_key(full_study: Study) -> None:
    # The queued run holds the key (as typed, or sealed where keys are stored sealed): neither is written.
    (held,) = JudgeRun.objects.exclude(api_key="").values_list("api_key", flat=True)
    data = _exported(full_study)
    members = members_of(data)
    assert set(members) == {*MEMBERS, MANIFEST}
    for secret in {SECRET, held}:
        assert all(secret.encode() not in content for content in members.values())
        assert secret.encode() not in data
    run = json.loads(members["judge_runs.jsonl"].splitlines()[-1])
    assert "api_key" not in run and run["api_key_variable"] == ""


def version_1(data: bytes) -> bytes:
    """The bundle as FaithAnno wrote it before version 2: without the members and fields version 2 added, and
    without the people only named for a decision."""
    deciders: set[str] = set()

    def older(members: dict[str, bytes]) -> None:
        for name, member in MEMBERS.items():
            if member.since > 1:
                del members[name]
                continue
            added = [field for field, (since, _, _) in member.added.items() if since > 1]
            rows = [json.loads(line) for line in members[name].splitlines()]
            for row in rows:
                for field in added:
                    del row[field]
            members[name] = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
        study = json.loads(members["study.json"])
        named = {json.loads(line)["annotator"] for line in members["assignments.jsonl"].splitlines()}
        named |= {json.loads(line)["annotator"] for line in members["participations.jsonl"].splitlines()}
        named |= set(study["annotators"])
        people = [json.loads(line)["username"] for line in members["people.jsonl"].splitlines()]
        deciders.update(set(people) - named)
        members["people.jsonl"] = b"".join(b'{"username": "%s"}\n' % name.encode() for name in people if name in named)

    def manifest(meta: dict[str, Any]) -> None:
        meta["format_version"] = 1
        meta["members"] = {name: meta["members"][name] for name in meta["members"] if MEMBERS[name].since == 1}

    older_data = rebuilt(data, change=older, manifest=manifest)
    assert deciders == {"rita"}
    return older_data


def test_it_still_imports_a_version_1_bundle(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    for user in (alice, bob):
        for assignment in Assignment.objects.filter(annotator=user, item__study_task__study=bertscore_study)[:3]:
            label = "correct" if user == alice else "incorrect"
            labels = {unit.index: label for unit in units_of(assignment)}
            assignment_submit(assignment=assignment, user=user, labels=labels, seconds=9)
    participation_exclude(study=bertscore_study, annotator=bob, reason="too fast", by=rita)
    data = version_1(_exported(bertscore_study))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "conditions.jsonl" not in archive.namelist()
        assert json.loads(archive.read(MANIFEST))["format_version"] == 1
    result = _import(data, rita)
    copy = result.study
    assert set(result.usernames) == {"alice", "bob"}
    names = {new: old for old, new in result.usernames.items()}
    assert analyses(copy, names) == analyses(bertscore_study, {})
    assert not StudyCondition.objects.filter(study=copy).exists() and not CrowdStudy.objects.filter(study=copy).exists()
    bob_standing = Participation.objects.get(study=copy, annotator__username="bob-imported")
    # Version 1 kept who excluded in the bundle only.
    assert bob_standing.excluded and bob_standing.excluded_by is None and bob_standing.condition is None
    assert copy.condition_design == Study.ConditionDesign.BETWEEN


@pytest.fixture
def bundle_v2(full_study: Study) -> bytes:
    return _exported(full_study)


@pytest.mark.parametrize(
    ("member", "edit", "field", "message"),
    [
        ("crowd_workers.jsonl", lambda row: row["survey_answers"].update(x="a\u0000b"), "survey_answers.x", "NUL"),
        ("final_labels.jsonl", lambda row: row.update(agreement=1e999), "agreement", "finite"),
        ("crowd_records.jsonl", lambda row: row.update(paste_events=10**30), "paste_events", "between 0 and"),
        ("judge_items.jsonl", lambda row: row.update(model="m" * 201), "model", "at most 200"),
        (
            "conditions.jsonl",
            lambda row: row.update(guidelines={"nope": "Read."}),
            "guidelines.nope",
            "must map tasks",
        ),
        (
            "crowd_workers.jsonl",
            lambda row: row.update(survey_answers={"pre_survey": 5}),
            "survey_answers.pre_survey",
            "must map",
        ),
        (
            "crowd_workers.jsonl",
            lambda row: row["survey_answers"]["pre_survey"].update(english="Maybe"),
            "survey_answers.pre_survey.english",
            "Choose one",
        ),
        ("crowd_records.jsonl", lambda row: row.update(worker=row["worker"] + 1), "worker", "another annotator"),
        ("conditions.jsonl", lambda row: row.update(evidence="blurred"), "evidence", "must be one of"),
        ("crowd_studies.jsonl", lambda row: row.update(phases=["annotation", "nope", "end"]), "phases", "Unknown"),
        ("model_raters.jsonl", lambda row: row.update(endpoint="http://user:pw@host/v1"), "endpoint", "API key"),
        ("assignments.jsonl", lambda row: row.update(condition=999999), "condition", "conditions.jsonl"),
        (
            "crowd_workers.jsonl",
            lambda row: row.update(training_answers={"424242": "faithful"}),
            "training_answers",
            "training",
        ),
    ],
)
def test_it_refuses_hostile_version_2_rows_naming_member_line_and_field(
    bundle_v2: bytes, member: str, edit: Any, field: str, message: str
) -> None:
    if member == "final_labels.jsonl":  # json.dumps writes Infinity; a forger writes the number
        data = rebuilt(
            bundle_v2,
            change=lambda members: members.update(
                {member: members[member].replace(b'"agreement":', b'"agreement":1e999,"x":', 1)}
            ),
        )
    else:
        data = rebuilt(bundle_v2, change=edit_line(member, 1, edit))
    error = refused(data)
    problem = error.problems[0]
    assert (problem.member, problem.field) == (member, field), str(error)
    assert message in problem.message and problem.line == 1


def test_it_refuses_a_missing_or_changed_version_2_member(bundle_v2: bytes) -> None:
    gone = refused(rebuilt(bundle_v2, change=lambda members: members.pop("crowd_workers.jsonl"), rehash=False))
    assert str(gone) == "crowd_workers.jsonl: is listed in the manifest but missing from the archive"

    def unlisted(meta: dict[str, Any]) -> None:
        del meta["members"]["judge_runs.jsonl"]

    never = refused(rebuilt(bundle_v2, change=lambda members: members.pop("judge_runs.jsonl"), manifest=unlisted))
    assert "judge_runs.jsonl: missing from the manifest: every format version 2 bundle has it" in str(never)
    changed = refused(
        rebuilt(
            bundle_v2,
            change=lambda members: members.update(
                {"payment_rules.jsonl": members["payment_rules.jsonl"].replace(b"0.40", b"9.40")}
            ),
            rehash=False,
        )
    )
    assert str(changed) == (
        "payment_rules.jsonl: the member's sha256 or size differs from the manifest: the bundle was changed"
    )
    assert Decimal("0.40") == PaymentRules.objects.get().per_item


def test_it_imports_the_bundle_again_once_its_copy_is_deleted(bundle_v2: bytes, rita: AbstractUser) -> None:
    """The copy's model raters outlive its study (their accounts hold no other work): a second import of the
    same bundle gets raters of its own again."""
    first = _import(bundle_v2, rita)
    # The copy's work has conditions: they go with the study (a condition alone with work is kept).
    condition = StudyCondition.objects.filter(study=first.study, assignments__isnull=False).first()
    assert condition is not None
    with pytest.raises(RestrictedError):
        condition.delete()
    first.study.delete()
    assert not StudyCondition.objects.filter(pk=condition.pk).exists()
    again = _import(bundle_v2, rita)
    keys = list(ModelRater.objects.values_list("key", flat=True))
    assert len(keys) == len(set(keys)) == 6  # the original's two, the first copy's two, the second's two
    assert JudgeRun.objects.filter(study_task__study=again.study).count() == 2
