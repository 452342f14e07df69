"""A study exported as a bundle and imported again gives every analysis the same numbers."""

from __future__ import annotations

import io
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.analysis import (
    agreement_overview,
    dataset_correlations,
    human_names,
    study_agreement,
    study_enhanced_scores,
    study_enhanced_table,
)
from analysis.selectors.exports import study_judgement_rows
from bundles.models import BundleImport
from bundles.services.bundle_export import study_bundle_export, study_summary_ids
from bundles.services.bundle_import import BundleImportResult, study_bundle_import
from corpus.models import Summary
from protocols.tasks import get_task
from scoring.models import Explanation
from studies.models import Assignment, GuidelinesVersion, Judgement, Participation, Study, StudyItem
from studies.services.participation import participation_exclude, participation_get_or_create
from studies.services.studies import (
    assignment_skip,
    assignment_submit,
    study_annotators_add,
    study_task_guidelines_update,
)
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db

JUDGED_TASKS = ("bertscore", "qgqa", "entailment", "factuality", "sentence_consistency", "hallucination_spans")


def _judge(study: Study, annotator: AbstractUser, offset: int) -> None:
    """Every item of the judged tasks, labels chosen so the two annotators sometimes disagree; one BUMP edit."""
    assignments = Assignment.objects.filter(item__study_task__study=study, annotator=annotator).select_related(
        "item__study_task", "item__summary"
    )
    for assignment in assignments.order_by("pk"):
        key = assignment.item.study_task.task
        if key not in JUDGED_TASKS:
            continue
        task = get_task(key)
        values = [choice.value for choice in task.choices]
        seconds = 10.0 + assignment.item.position + offset
        if task.spans:
            spans = [{"start": 0, "end": 3 + offset, "label": values[(assignment.item.position + offset) % 2]}]
            assignment_submit(assignment=assignment, user=annotator, spans=spans, seconds=seconds)
            continue
        labels = {
            unit.index: values[(unit.index * (offset + 1) + assignment.item.position) % len(values)]
            for unit in units_of(assignment)
        }
        notes = {index: "checked" for index in labels} if task.note_required or key == "sentence_consistency" else None
        assignment_submit(
            assignment=assignment, user=annotator, labels=labels, notes=notes, comment=f"by {offset}", seconds=seconds
        )
    bump = assignments.filter(item__study_task__task="bump").order_by("pk").first()
    edit = {"text": bump.item.summary.text + " Not.", "label": bump.item.params["error_type"], "note": "n"}
    assignment_submit(assignment=bump, user=annotator, edit=edit, seconds=7.5)


@pytest.fixture
def judged_study(
    task_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> Study:
    factuality = task_study.tasks.get(task="factuality")
    study_task_guidelines_update(study_task=factuality, text="Version two: judge the whole summary.", user=rita)
    _judge(task_study, alice, 0)
    _judge(task_study, bob, 1)
    open_bump = Assignment.objects.filter(
        item__study_task__study=task_study, annotator=bob, status=Assignment.Status.ASSIGNED
    ).first()
    assignment_skip(assignment_id=open_bump.pk, user=bob, reason="other", note="the text is cut off")
    study_annotators_add(study=task_study, annotators=[carol], extend=False)
    participation_exclude(study=task_study, annotator=carol, reason="failed the checks", by=rita)
    standing = participation_get_or_create(study=task_study, annotator=bob, platform="prolific", external_id="P-77")
    Participation.objects.filter(pk=standing.pk).update(review=Participation.Review.APPROVED, bonus="1.25")
    return task_study


def _canon(value: Any) -> str:
    return json.dumps(asdict(value) if is_dataclass(value) else value, sort_keys=True, default=str)


def _summary_keys(study: Study) -> dict[int, tuple[str, str]]:
    rows = Summary.objects.filter(document__dataset=study.dataset).values_list(
        "pk", "document__external_id", "external_id"
    )
    return {pk: (document, summary) for pk, document, summary in rows}


def _item_keys(study: Study) -> dict[int, tuple[str, int]]:
    return dict(
        (pk, (task, position))
        for pk, task, position in StudyItem.objects.filter(study_task__study=study).values_list(
            "pk", "study_task__task", "position"
        )
    )


def analyses(study: Study, names: dict[str, str]) -> dict[str, Any]:
    """Every analysis of the study with ids replaced by what they stand for and user names by `names`."""
    items, summaries = _item_keys(study), _summary_keys(study)

    def named(labels: dict[str, Any]) -> dict[str, Any]:
        return {names.get(name, name): label for name, label in labels.items()}

    def annotator_rows(rows: Any) -> list[Any]:
        return sorted(_canon({**asdict(row), "annotator": names.get(row.annotator, row.annotator)}) for row in rows)

    found: dict[str, Any] = {}
    tasks = list(study.tasks.order_by("task"))
    agreement = study_agreement(study_tasks=tasks)
    found["kappa"] = {task.task: _canon(agreement.tasks[task.pk]) for task in tasks}
    found["annotators"] = annotator_rows(agreement.annotators.values())
    for task in tasks:
        overview = agreement_overview(study_task=task)
        found[f"{task.task} coefficients"] = _canon(overview.results)
        found[f"{task.task} disagreements"] = [
            (
                items[row.item_id],
                row.unit,
                row.unit_text,
                summaries.get(row.summary_id),
                _canon(named(row.agreement.labels)),
                row.agreement.majority,
                row.agreement.agreement,
                row.agreement.spread,
            )
            for row in overview.tables.items
        ]
        found[f"{task.task} counts"] = (overview.tables.n_items, overview.tables.n_single, overview.fewest_raters)
        found[f"{task.task} annotators"] = annotator_rows(overview.tables.annotators)
    found["enhanced"] = {
        f"{task} {aggregation}": {summaries[pk]: score for pk, score in scores.items()}
        for (task, aggregation), scores in study_enhanced_scores(study=study).items()
    }
    human = human_names(dataset=study.dataset)
    assert human == ["Faithful"]
    found["enhanced table"] = [_canon(row) for row in study_enhanced_table(study=study, human="Faithful", bootstrap=50)]
    # Over the dataset: the bundle holds the study's slice, so summaries outside it (the small dataset's empty
    # one, which no task can show) no longer count as missing; every number computed is the same.
    correlations = dataset_correlations(
        dataset=study.dataset, human="Faithful", methods=["pearson", "spearman"], bootstrap=50
    )
    found["correlations"] = [_canon({k: v for k, v in row.items() if k != "n_missing"}) for row in correlations]
    found["judgement rows"] = [
        _canon(
            {
                **{key: value for key, value in row.items() if key not in ("study", "summary_id", "dataset")},
                "annotator": names.get(row["annotator"], row["annotator"]),
                "final_by": names.get(row.get("final_by"), row.get("final_by")),  # who adjudicated
                "summary": summaries[row["summary_id"]],
            }
        )
        for row in study_judgement_rows(study=study)
    ]
    return found


def _round_trip(study: Study, tmp_path: Path, user: AbstractUser) -> BundleImportResult:
    path = tmp_path / "study.zip"
    with path.open("wb") as handle:
        study_bundle_export(study=study, output=handle)
    with path.open("rb") as handle:
        return study_bundle_import(source=handle, user=user)


def test_it_round_trips_a_study_and_every_analysis_gives_the_same_numbers(
    judged_study: Study, rita: AbstractUser, tmp_path: Path
) -> None:
    before = analyses(judged_study, {})
    result = _round_trip(judged_study, tmp_path, rita)
    copy = result.study
    assert copy.pk != judged_study.pk and copy.dataset_id != judged_study.dataset_id
    after = analyses(copy, {new: old for old, new in result.usernames.items()})
    assert set(after) == set(before)
    for name in before:
        assert after[name] == before[name], name
    # The analyses are not vacuous: several tasks agree or disagree on shared units, scores are enhanced.
    assert len([name for name in before if name.endswith("disagreements") and before[name]]) >= 4
    assert before["enhanced"] and len(before["judgement rows"]) > 50


def test_it_keeps_guidelines_versions_timing_skips_and_each_annotators_standing(
    judged_study: Study, rita: AbstractUser, tmp_path: Path
) -> None:
    result = _round_trip(judged_study, tmp_path, rita)
    copy = result.study
    # rita wrote guidelines and excluded carol: who decided is mapped by name like the annotators.
    assert result.usernames == {
        "alice": "alice-imported",
        "bob": "bob-imported",
        "carol": "carol-imported",
        "rita": "rita-imported",
    }
    assert result.dataset.name == "small imported"
    versions = GuidelinesVersion.objects.filter(study_task__study=copy, study_task__task="factuality")
    assert sorted(versions.values_list("version", "text")) == sorted(
        GuidelinesVersion.objects.filter(study_task__study=judged_study, study_task__task="factuality").values_list(
            "version", "text"
        )
    )
    fields = ("status", "time_spent", "guidelines_version", "skip_reason", "skip_note", "comment", "submitted_at")
    assert sorted(Assignment.objects.filter(item__study_task__study=copy).values_list(*fields)) == sorted(
        Assignment.objects.filter(item__study_task__study=judged_study).values_list(*fields)
    )
    assert Assignment.objects.filter(item__study_task__study=copy, status="skipped").count() == 1
    carol = Participation.objects.get(study=copy, annotator__username="carol-imported")
    assert (
        carol.excluded
        and carol.excluded_reason == "failed the checks"
        and carol.excluded_by.username == "rita-imported"
    )
    bob = Participation.objects.get(study=copy, annotator__username="bob-imported")
    assert (bob.platform, bob.external_id, bob.review, str(bob.bonus)) == ("prolific", "P-77", "approved", "1.25")
    new_accounts = get_user_model().objects.filter(username__in=result.usernames.values())
    assert new_accounts.count() == 4
    assert not any(user.is_active or user.has_usable_password() for user in new_accounts)
    assert list(copy.researchers.all()) == [rita] and copy.created_by == rita
    judgement_fields = ("unit_index", "unit_text", "label", "start", "end", "note", "data", "created_at")
    assert sorted(
        map(str, Judgement.objects.filter(assignment__item__study_task__study=copy).values_list(*judgement_fields))
    ) == sorted(
        map(
            str,
            Judgement.objects.filter(assignment__item__study_task__study=judged_study).values_list(*judgement_fields),
        )
    )
    explanation_fields = ("metric", "config_hash", "model_ids", "code_version", "score", "created_at")
    assert sorted(
        map(str, Explanation.objects.filter(summary__document__dataset=copy.dataset).values_list(*explanation_fields))
    ) == sorted(
        map(
            str,
            Explanation.objects.filter(summary__in=study_summary_ids(study=judged_study)).values_list(
                *explanation_fields
            ),
        )
    )
    record = BundleImport.objects.get(study=copy)
    assert record.usernames == result.usernames and record.imported_by == rita


def test_it_exports_and_imports_from_the_command_line(judged_study: Study, tmp_path: Path) -> None:
    path = tmp_path / "out.zip"
    out = io.StringIO()
    call_command("export_study", "--study", str(judged_study.pk), "--output", str(path), stdout=out)
    assert f"Wrote study {judged_study.pk}" in out.getvalue() and path.exists()
    out = io.StringIO()
    call_command("import_study", str(path), "--researcher", "rita", stdout=out)
    copy = BundleImport.objects.get().study
    assert f"Imported study {copy.pk}" in out.getvalue()
    assert "annotator alice -> alice-imported (the name was taken)" in out.getvalue()
    assert copy.researchers.get().username == "rita"


def test_it_offers_the_bundle_on_the_api_and_the_study_page(
    judged_study: Study, rita: AbstractUser, ronald: AbstractUser, alice: AbstractUser
) -> None:
    url = reverse("api_study_bundle", args=[judged_study.pk])
    page = client_for(rita).get(reverse("study_detail", args=[judged_study.pk]))
    assert f'href="{url}" download>Download bundle</a>' in page.content.decode()
    assert api_client_for(ronald).get(url).status_code == 404  # not his study
    assert api_client_for(alice).get(url).status_code == 403
    response = api_client_for(rita).get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert "attachment" in response["Content-Disposition"]
    bundle = b"".join(response.streaming_content)
    upload = io.BytesIO(bundle)
    upload.name = "study.zip"
    assert api_client_for(alice).post(reverse("api_bundles"), {"file": upload}).status_code == 403
    upload.seek(0)
    answer = api_client_for(ronald).post(reverse("api_bundles"), {"file": upload})
    assert answer.status_code == 201, answer.content
    copy = Study.objects.get(pk=answer.json()["study"])
    assert list(copy.researchers.all()) == [ronald]
    assert answer.json()["usernames"]["alice"] == "alice-imported"
    assert (
        answer.json()["counts"]["judgements.jsonl"]
        == Judgement.objects.filter(assignment__item__study_task__study=judged_study).count()
    )


def test_it_exports_and_imports_with_the_same_number_of_queries_for_few_and_many_judgements(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def counted() -> tuple[int, int]:
        out = io.BytesIO()
        with CaptureQueriesContext(connection) as exported:
            study_bundle_export(study=bertscore_study, output=out)
        with CaptureQueriesContext(connection) as imported:
            study_bundle_import(source=io.BytesIO(out.getvalue()), user=rita)
        return len(exported.captured_queries), len(imported.captured_queries)

    assignments = list(Assignment.objects.filter(item__study_task__study=bertscore_study).order_by("pk"))
    for assignment in assignments[:1]:
        labels = {unit.index: "correct" for unit in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)
    few = counted()
    for assignment in assignments[1:]:
        labels = {unit.index: "incorrect" for unit in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels, seconds=3)
    many = counted()
    assert Judgement.objects.filter(assignment__item__study_task__study=bertscore_study).count() > 10
    assert few == many == (EXPORT_QUERIES, IMPORT_QUERIES)


# The export: one query per member, one for everyone the study names (annotators, adjudicators, who excluded,
# adjudicated, wrote guidelines...) and a few for its settings. The import: the earlier-import look-up,
# then one INSERT per member with rows (and one UPDATE where timestamps are put back), the accounts in one go,
# the study's links, the model raters' and cached answers' look-ups and the record of the import; nothing per row.
EXPORT_QUERIES = 29
IMPORT_QUERIES = 33
