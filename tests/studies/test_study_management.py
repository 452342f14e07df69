"""Study management: choosing items, exact-k assignment with its options, reclaiming, annotators joining and
leaving, guidelines and examples, on the service level and through the researcher's pages."""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from common import roles
from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from studies.models import Assignment, Study, StudyExample, StudyItem
from studies.selectors.selection import ItemSelection
from studies.selectors.studies import study_progress, study_task_progress
from studies.services.examples import study_example_create
from studies.services.studies import (
    StudySpec,
    assignment_submit,
    assignments_reclaim,
    study_annotator_remove,
    study_annotators_add,
    study_create,
    study_settings_update,
)
from tests.conftest import client_for, make_user, write_jsonl
from tests.factories import explanation_create

pytestmark = pytest.mark.django_db

# (document sentences, [(system, human Faithful, imported metric M)]): three summaries disagree strongly.
SCORED = {
    "short1": ("Ann won the race.", [("A", 1.0, 0.1), ("B", 0.5, 0.5)]),
    "short2": ("Bob lost the game.", [("A", 0.0, 0.9), ("B", 0.8, 0.8)]),
    "long": ("It rained. Roads flooded. Schools closed. Trains stopped.", [("A", 0.9, 0.0), ("B", 0.2, 0.2)]),
}


@pytest.fixture
def scored_records(tmp_path: Path) -> Dataset:
    records = [
        {
            "id": doc_id,
            "text": text,
            "summaries": [
                {
                    "system": system,
                    "text": f"{system} says: {text.split('.')[0]}.",
                    "human_scores": {"Faithful": h},
                    "metric_scores": {"M": m},
                }
                for system, h, m in summaries
            ],
        }
        for doc_id, (text, summaries) in SCORED.items()
    ]
    return dataset_import(name="scored", batch=parse("jsonl", write_jsonl(tmp_path / "s.jsonl", records))).dataset


@pytest.fixture
def team(db: None) -> list[AbstractUser]:
    return [make_user(f"annotator{i}", roles.ANNOTATOR) for i in range(4)]


def chosen(study: Study) -> set[tuple[str, str]]:
    return set(
        StudyItem.objects.filter(study_task__study=study).values_list(
            "summary__document__external_id", "summary__system"
        )
    )


def test_it_chooses_the_controversial_items_optionally_of_short_documents(
    scored_records: Dataset, team: list[AbstractUser]
) -> None:
    def create(size: int, max_sentences: int | None = None, metrics: tuple[str, ...] = ("M",)) -> Study:
        selection = ItemSelection(
            mode="controversial", size=size, human_score="Faithful", metrics=metrics, max_sentences=max_sentences
        )
        return study_create(
            spec=StudySpec(
                name="c",
                dataset=scored_records,
                tasks=["factuality"],
                annotators=team[:1],
                annotators_per_item=1,
                created_by=None,
                selection=selection,
            )
        ).study

    assert chosen(create(1)) == {("short2", "A")}
    assert chosen(create(3)) == {("short2", "A"), ("short1", "A"), ("long", "A")}
    assert chosen(create(2, max_sentences=2)) == {("short2", "A"), ("short1", "A")}
    for summary in Summary.objects.filter(document__dataset=scored_records):
        explanation_create(summary, "qags_cloze", {}, score=summary.metric_scores.get(name="M").value)
    study = create(3, metrics=("M", "explanation:qags_cloze"))
    assert chosen(study) == {("short2", "A"), ("short1", "A"), ("long", "A")}
    assert study.selection["metrics"] == ["M", "explanation:qags_cloze"] and study.selection["size"] == 3

    with pytest.raises(ValidationError, match="compares at least one metric score"):
        create(2, metrics=())
    with pytest.raises(ValidationError, match="has the human score 'Nope'"):
        study_create(
            spec=StudySpec(
                name="none",
                dataset=scored_records,
                tasks=["factuality"],
                annotators=team[:1],
                annotators_per_item=1,
                created_by=None,
                selection=ItemSelection(mode="controversial", size=2, human_score="Nope", metrics=("M",)),
            )
        )


def test_it_keeps_every_summary_away_from_annotators_who_saw_it_in_another_task(
    small_dataset: Dataset, team: list[AbstractUser]
) -> None:
    plan = study_create(
        spec=StudySpec(
            name="one task per summary",
            dataset=small_dataset,
            tasks=["factuality", "feqa"],
            annotators=team,
            annotators_per_item=2,
            created_by=None,
            one_task_per_summary=True,
        )
    )
    seen: dict[int, list[int]] = defaultdict(list)
    for summary_id, annotator_id in Assignment.objects.filter(item__study_task__study=plan.study).values_list(
        "item__summary_id", "annotator_id"
    ):
        seen[summary_id].append(annotator_id)
    assert seen and all(len(ids) == 4 == len(set(ids)) for ids in seen.values())
    load = Counter(Assignment.objects.filter(item__study_task__study=plan.study).values_list("annotator", flat=True))
    assert max(load.values()) - min(load.values()) <= 1
    with pytest.raises(ValidationError, match="nobody seeing a summary in two tasks, need at least 4 annotators; 3"):
        study_create(
            spec=StudySpec(
                name="x",
                dataset=small_dataset,
                tasks=["factuality", "feqa"],
                annotators=team[:3],
                annotators_per_item=2,
                created_by=None,
                one_task_per_summary=True,
            )
        )


def test_it_gives_untouched_work_to_someone_else_when_k_is_not_reached(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="r",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=1,
            created_by=None,
            reclaim_after_hours=2,
        )
    ).study
    alices = list(Assignment.objects.filter(item__study_task__study=study, annotator=alice).order_by("position"))
    assert len(alices) == 2
    for assignment in Assignment.objects.filter(item__study_task__study=study, annotator=bob):
        assignment_submit(assignment=assignment, user=bob, labels={"0": "yes"})
    now = timezone.now()
    Assignment.objects.filter(pk=alices[0].pk).update(touched_at=now - timedelta(hours=3))
    Assignment.objects.filter(pk=alices[1].pk).update(touched_at=now - timedelta(hours=1))

    assert assignments_reclaim(study=study, now=now) == 1
    alices[0].refresh_from_db()
    assert alices[0].status == Assignment.Status.RECLAIMED
    taker = Assignment.objects.get(item=alices[0].item, status=Assignment.Status.ASSIGNED)
    assert taker.annotator == bob  # bob had nothing open left
    assert Assignment.objects.filter(item=alices[0].item).exclude(status=Assignment.Status.RECLAIMED).count() == 1
    assert assignments_reclaim(study=study, now=now) == 0  # the fresh one stays with alice
    answer = client_for(alice).post(
        reverse("api_assignment_submit", args=[alices[0].pk]),
        data=json.dumps({"labels": {"0": "no"}}),
        content_type="application/json",
    )
    assert answer.status_code == 403 and "given to another annotator" in answer.json()["errors"][0]
    assert alices[0].pk not in [a.pk for a in client_for(alice).get(reverse("dashboard")).context["assignments"]]
    progress = {row.username: row for row in study_progress(study=study)}
    assert (progress["alice"].assigned, progress["alice"].reclaimed, progress["bob"].open) == (1, 1, 1)

    # An annotator with nothing left who asks for more (a POST) takes over work that went stale meanwhile.
    Assignment.objects.filter(pk=alices[1].pk).update(touched_at=now - timedelta(hours=5))
    assignment_submit(assignment=taker, user=bob, labels={"0": "yes"})
    assert "Take over work" in client_for(bob).get(reverse("dashboard")).content.decode()
    before = sorted(Assignment.objects.filter(item__study_task__study=study).values_list("pk", "annotator", "status"))
    assert client_for(bob).get(reverse("annotate_next")).url == reverse("dashboard")
    after = sorted(Assignment.objects.filter(item__study_task__study=study).values_list("pk", "annotator", "status"))
    assert after == before  # a GET never changes another annotator's assignment
    assert client_for(bob).post(reverse("annotate_next")).url == reverse(
        "annotate", args=[Assignment.objects.get(item=alices[1].item, annotator=bob).pk]
    )
    out = io.StringIO()
    call_command("reclaim_assignments", stdout=out)
    assert f"study {study.pk}: 0 assignments" in out.getvalue()


def test_it_hands_a_removed_annotators_open_items_to_the_others_and_keeps_their_work(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="rm",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=2,
            created_by=None,
        )
    ).study
    carols = list(Assignment.objects.filter(item__study_task__study=study, annotator=carol).order_by("position"))
    assignment_submit(assignment=carols[0], user=carol, labels={"0": "no"})
    moved = study_annotator_remove(study=study, annotator=carol)
    # Her open items move, and the item she submitted gets one more annotator: a removed annotator's
    # work stays in the data but does not count towards k.
    assert moved == len(carols)
    for item in StudyItem.objects.filter(study_task__study=study):
        annotators = list(item.assignments.values_list("annotator", flat=True))
        assert len(annotators) == len(set(annotators)) >= 2
    assert Assignment.objects.get(pk=carols[0].pk).status == Assignment.Status.SUBMITTED
    with pytest.raises(PermissionDenied, match="no longer an annotator of this study"):
        assignment_submit(assignment=carols[0], user=carol, labels={"0": "yes"})
    assert client_for(carol).get(reverse("dashboard")).context["assignments"] == []
    with pytest.raises(ValidationError, match="needs 1 more annotators but only 0 are free"):
        study_annotator_remove(study=study, annotator=bob)
    assert study.annotators.filter(pk=bob.pk).exists()  # nothing changed
    with pytest.raises(ValidationError, match="k can only grow"):
        study_settings_update(study=study, annotators_per_item=1, reclaim_after_hours=None)
    for bad_k, message in [(51, "k is at most 50"), (2.5, "whole number"), (True, "whole number")]:
        with pytest.raises(ValidationError, match=message):
            study_settings_update(study=study, annotators_per_item=bad_k, reclaim_after_hours=None)
    study.refresh_from_db()
    assert study.annotators_per_item == 2  # nothing changed
    dave = make_user("dave", roles.ANNOTATOR)
    assert study_annotators_add(study=study, annotators=[dave]).assigned == 0  # every item already has k
    created = study_settings_update(study=study, annotators_per_item=3, reclaim_after_hours=4)
    assert created == StudyItem.objects.filter(study_task__study=study).count()  # one more on every item
    progress = study_task_progress(study=study)[study.tasks.get().pk]
    assert (progress.items, progress.done, progress.complete_items) == (6, 1, 0)


def test_it_shows_annotated_examples_in_the_task_view_but_never_an_item_of_the_task(
    small_dataset: Dataset, alice: AbstractUser, rita: AbstractUser
) -> None:
    study = study_create(
        spec=StudySpec(
            name="ex",
            dataset=small_dataset,
            tasks=["sentence_consistency", "bump"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=rita,
            selection=ItemSelection(mode="random", size=2, seed=3),
        )
    ).study
    qags = study.tasks.get(task="sentence_consistency")
    items = set(qags.items.values_list("summary_id", flat=True))
    outside = Summary.objects.filter(document__dataset=small_dataset).exclude(pk__in=items).exclude(text="").first()
    with pytest.raises(ValidationError, match="is an item of this task"):
        study_example_create(study_task=qags, summary=qags.items.first().summary, user=rita)
    with pytest.raises(ValidationError, match="edits reference summaries"):
        study_example_create(
            study_task=study.tasks.get(task="bump"),
            summary=Summary.objects.filter(is_reference=False).first(),
            user=rita,
        )

    client = client_for(rita)
    created = client.post(
        reverse("study_task_examples", args=[study.pk, qags.pk]),
        {"summary": outside.pk, "explanation_text": "Dates must match the article."},
    )
    example = StudyExample.objects.get(study_task=qags)
    assert created.url == reverse("study_example_annotate", args=[study.pk, example.pk])
    page = client.get(created.url)
    assert page.status_code == 200 and page.context["state"]["mode"] == "example"
    submit_url = reverse("api_study_example_submit", args=[study.pk, example.pk])
    incomplete = client.post(submit_url, data=json.dumps({"labels": {"0": "no"}}), content_type="application/json")
    assert incomplete.status_code == 400 and "need a short explanation" in incomplete.json()["errors"][0]
    body = {"labels": {"0": "no"}, "notes": {"0": "The age is wrong."}, "comment": "Dates must match the article."}
    assert client.post(submit_url, data=json.dumps(body), content_type="application/json").status_code == 200

    assignment = Assignment.objects.filter(annotator=alice, item__study_task=qags).first()
    html = client_for(alice).get(reverse("annotate", args=[assignment.pk])).content.decode()
    assert "View examples (1)" in html and "The age is wrong." in html and "Dates must match the article." in html
    assert client_for(alice).get(reverse("study_example_annotate", args=[study.pk, example.pk])).status_code == 403


def test_it_creates_and_runs_a_study_from_the_researchers_pages(
    scored_records: Dataset, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    client = client_for(rita)
    step_one = client.get(reverse("study_new"))
    assert "dataset_form" in step_one.context
    step_two = client.get(reverse("study_new"), {"dataset": scored_records.pk})
    html = step_two.content.decode()
    assert "Faithful (6 summaries)" in html and "M (imported) (6)" in html and "3 reference" not in html
    form = {
        "name": "Web study",
        "dataset": scored_records.pk,
        "tasks": ["feqa", "hallucination_spans"],
        "selection_mode": "controversial",
        "sample_size": 2,
        "seed": 0,
        "human_score": "Faithful",
        "metrics": ["M"],
        "annotators": [alice.pk, bob.pk],
        "annotators_per_item": 2,
        "reclaim_after_hours": 24,
        "bump_mode": "taxonomy",
        "guidelines_feqa": "Read the sentence alone first.",
    }
    missing_n = client.post(reverse("study_new"), {**form, "sample_size": ""})
    assert "A controversial selection needs n, a number of items" in missing_n.content.decode()
    created = client.post(reverse("study_new"), form)
    study = Study.objects.get(name="Web study")
    assert created.url == reverse("study_detail", args=[study.pk])
    assert chosen(study) == {("short2", "A"), ("short1", "A")}
    feqa = study.tasks.get(task="feqa")
    assert feqa.guidelines == "Read the sentence alone first." and study.reclaim_after_hours == 24

    detail = client.get(created.url)
    assert detail.status_code == 200 and b'id="task-progress"' in detail.content
    added = client.post(reverse("study_annotators", args=[study.pk]), {"annotators": [carol.pk]})
    assert added.status_code == 302 and study.annotators.filter(pk=carol.pk).exists()
    client.post(reverse("study_annotators", args=[study.pk]), {"remove": bob.pk})
    assert not study.annotators.filter(pk=bob.pk).exists()
    assert not Assignment.objects.filter(item__study_task__study=study, annotator=bob).exists()
    guidelines = client.post(
        reverse("study_task_guidelines", args=[study.pk, feqa.pk]), {"text": "Read the sentence alone first. Twice."}
    )
    assert guidelines.status_code == 302
    feqa.refresh_from_db()
    assert feqa.guidelines_version == 2
    history = client.get(reverse("study_task_guidelines", args=[study.pk, feqa.pk])).content.decode()
    assert "Twice." in history and "Read the sentence alone first." in history
    assert client.post(reverse("study_reclaim", args=[study.pk])).status_code == 302
    for url in (reverse("study_settings", args=[study.pk]), reverse("study_annotators", args=[study.pk])):
        assert client_for(alice).post(url, {"annotators_per_item": 1}).status_code == 403


def test_it_chooses_controversial_items_from_the_command_line(scored_records: Dataset, alice: AbstractUser) -> None:
    out = io.StringIO()
    call_command(
        "create_study",
        "--dataset",
        "scored",
        "--name",
        "cli",
        "--task",
        "feqa",
        "--annotators",
        "alice",
        "--k",
        "1",
        "--controversial",
        "2",
        "--human-score",
        "Faithful",
        "--metric",
        "M",
        "--max-sentences",
        "2",
        stdout=out,
    )
    assert "2 items, 2 assignments" in out.getvalue()
    assert "2 of 6 summaries left out: their documents have more than 2 sentences" in out.getvalue()
    assert chosen(Study.objects.get(name="cli")) == {("short2", "A"), ("short1", "A")}


def test_it_leaves_imported_judgements_alone(alice: AbstractUser) -> None:
    from tests.conftest import DATA

    dataset = dataset_import(name="frank", batch=parse("frank-xsum", DATA / "frank_xsum_sample")).dataset
    imported = Study.objects.get(dataset=dataset, kind=Study.Kind.IMPORTED)
    before = Assignment.objects.filter(item__study_task__study=imported).count()
    for change in (
        lambda: study_settings_update(study=imported, annotators_per_item=9, reclaim_after_hours=None),
        lambda: study_annotators_add(study=imported, annotators=[alice]),
    ):
        with pytest.raises(ValidationError, match="holds imported judgements"):
            change()
    assert Assignment.objects.filter(item__study_task__study=imported).count() == before
    assert not imported.annotators.filter(pk=alice.pk).exists()
