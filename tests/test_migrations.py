"""The migrations: none missing, and a database made by the old layout (every model in `annotations`)
migrates in place to the apps corpus, studies and accounts without losing a row."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from corpus.models import Dataset, Document, HumanScore, ImportJob, MetricScore, Summary
from scoring.models import Explanation, ScoringClaim
from studies.models import Assignment, GuidelinesVersion, Judgement, Study, StudyExample, StudyItem, StudyTask

# The migration leaves of main before the apps were split.
OLD_LAYOUT = [
    ("annotations", "0006_import_job"),
    ("scoring", "0002_scoring_claims"),
    ("corpus", None),
    ("studies", None),
    ("accounts", None),
    # Apps made after the layout changed (their tables refer to the moved models) did not exist yet.
    ("crowd", None),
    ("bundles", None),
    ("judges", None),
]
# Every table the moved models and scoring write, the many-to-many tables of Study included.
TABLES = [
    "annotations_dataset",
    "annotations_document",
    "annotations_summary",
    "annotations_humanscore",
    "annotations_metricscore",
    "annotations_importjob",
    "annotations_study",
    "annotations_study_researchers",
    "annotations_study_annotators",
    "annotations_studytask",
    "annotations_guidelinesversion",
    "annotations_studyexample",
    "annotations_studyitem",
    "annotations_assignment",
    "annotations_judgement",
    "scoring_explanation",
    "scoring_scoringclaim",
]


@pytest.mark.django_db
def test_it_has_a_migration_for_every_model_change() -> None:
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def _row_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in TABLES:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def _fill_the_old_layout(old: Any) -> dict[str, Any]:
    """One row in every table, written with the historical models of the old layout."""
    user = old.get_model("auth", "User").objects.create(username="olga")
    dataset = old.get_model("annotations", "Dataset").objects.create(name="old", source_format="jsonl")
    document = old.get_model("annotations", "Document").objects.create(
        dataset=dataset, external_id="d1", text="A cat sat.", sentences=[[0, 10]]
    )
    summary = old.get_model("annotations", "Summary").objects.create(
        document=document, external_id="s1", system="sys", text="A cat.", sentences=[[0, 6]]
    )
    old.get_model("annotations", "HumanScore").objects.create(summary=summary, name="Faithful", value=1.0)
    old.get_model("annotations", "MetricScore").objects.create(summary=summary, name="FactCC", value=0.5)
    old.get_model("annotations", "ImportJob").objects.create(
        created_by=user, name="old", format="jsonl", file_name="old.jsonl", path="/tmp/old.jsonl", dataset=dataset
    )
    explanation = old.get_model("scoring", "Explanation").objects.create(
        summary=summary, metric="bertscore", config={}, config_hash="h", model_ids={}, code_version="1", score=0.9
    )
    old.get_model("scoring", "ScoringClaim").objects.create(
        summary=summary, metric="qags", config_hash="h", owner="worker", expires_at=timezone.now()
    )
    study = old.get_model("annotations", "Study").objects.create(name="old study", dataset=dataset, created_by=user)
    study.researchers.add(user)
    study.annotators.add(user)
    task = old.get_model("annotations", "StudyTask").objects.create(study=study, task="bertscore")
    old.get_model("annotations", "GuidelinesVersion").objects.create(study_task=task, version=1, text="Judge.")
    old.get_model("annotations", "StudyExample").objects.create(
        study_task=task, summary=summary, explanation=explanation
    )
    item = old.get_model("annotations", "StudyItem").objects.create(
        study_task=task, summary=summary, explanation=explanation
    )
    assignment = old.get_model("annotations", "Assignment").objects.create(item=item, annotator=user)
    judgement = old.get_model("annotations", "Judgement").objects.create(
        assignment=assignment, unit_index=0, unit_text="cat", label="correct"
    )
    # Permissions and admin log entries refer to the content type of a model.
    content_types = old.get_model("contenttypes", "ContentType").objects
    summary_type, _ = content_types.get_or_create(app_label="annotations", model="summary")
    account_type, _ = content_types.get_or_create(app_label="annotations", model="annotatoraccount")
    permission, _ = old.get_model("auth", "Permission").objects.get_or_create(
        content_type=summary_type, codename="view_summary", defaults={"name": "Can view summary"}
    )
    old.get_model("auth", "User").objects.get(pk=user.pk).user_permissions.add(permission)
    old.get_model("admin", "LogEntry").objects.create(
        user=user, content_type=summary_type, object_id=str(summary.pk), object_repr="s1", action_flag=2
    )
    return {
        "user": user.pk,
        "summary": summary.pk,
        "judgement": judgement.pk,
        "explanation": explanation.pk,
        "summary_type": summary_type.pk,
        "account_type": account_type.pk,
    }


@pytest.mark.django_db(transaction=True)
def test_it_migrates_a_database_of_the_old_layout_in_place_without_losing_a_row() -> None:
    executor = MigrationExecutor(connection)
    new_leaves = executor.loader.graph.leaf_nodes()
    # The suite's database has the new layout: take it back to the old one and fill it there.
    ContentType.objects.filter(app_label__in=["corpus", "studies", "accounts", "annotations"]).delete()
    executor.migrate(OLD_LAYOUT)
    executor.loader.build_graph()
    moved = {app for app, _ in OLD_LAYOUT}
    old_nodes = [t for t in OLD_LAYOUT if t[1]] + [leaf for leaf in new_leaves if leaf[0] not in moved]
    old_apps = executor.loader.project_state(old_nodes).apps
    ids = _fill_the_old_layout(old_apps)
    before = _row_counts()
    assert all(count >= 1 for count in before.values()), before

    executor = MigrationExecutor(connection)
    executor.migrate(new_leaves)

    assert _row_counts() == before
    # Each row is reachable through the new models, across every foreign key and many-to-many table.
    judgement = Judgement.objects.select_related(
        "assignment__annotator", "assignment__item__study_task__study__dataset", "assignment__item__explanation"
    ).get(pk=ids["judgement"])
    item = judgement.assignment.item
    assert (judgement.label, judgement.assignment.annotator.username) == ("correct", "olga")
    assert item.study_task.study.dataset.name == "old"
    assert item.summary.document.dataset == item.study_task.study.dataset
    assert item.explanation.summary_id == item.summary_id == ids["summary"]
    study = item.study_task.study
    assert isinstance(study, Study) and isinstance(item, StudyItem)
    assert [u.username for u in study.researchers.all()] == [u.username for u in study.annotators.all()] == ["olga"]
    assert study.created_by.username == "olga"
    assert GuidelinesVersion.objects.get(study_task=item.study_task).text == "Judge."
    assert StudyExample.objects.get(study_task__study=study).explanation_id == ids["explanation"]
    assert StudyTask.objects.filter(study=study).count() == Assignment.objects.filter(item=item).count() == 1
    summary = Summary.objects.get(pk=ids["summary"])
    assert isinstance(summary.document, Document) and isinstance(summary.document.dataset, Dataset)
    assert HumanScore.objects.get(summary=summary).value == 1.0
    assert MetricScore.objects.get(summary=summary).value == 0.5
    job = ImportJob.objects.select_related("dataset").get()
    assert (job.dataset, job.created_by_id, job.file_name) == (summary.document.dataset, ids["user"], "old.jsonl")
    assert ContentType.objects.get_for_model(ImportJob).app_label == "corpus"
    assert [e.pk for e in summary.explanations.all()] == [ids["explanation"]]
    assert ScoringClaim.objects.get(summary=summary).owner == "worker"
    assert Explanation.objects.get(pk=ids["explanation"]).summary == summary
    # The content types moved with their models: same rows, new app labels.
    summary_type = ContentType.objects.get_for_model(Summary)
    assert (summary_type.pk, summary_type.app_label) == (ids["summary_type"], "corpus")
    assert ContentType.objects.get(pk=ids["account_type"]).app_label == "accounts"
    user = User.objects.get(pk=ids["user"])
    assert user.has_perm("corpus.view_summary")
    assert Permission.objects.get(codename="view_summary", content_type=summary_type)
    assert LogEntry.objects.get(user=user).get_edited_object() == summary
