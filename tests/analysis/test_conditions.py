"""Comparing a study's conditions (issue 16 point 2): the selector, the export's condition column, the study's
analysis page and the API. Conditions and the condition of each assignment are set here directly; assigning
them is the study creation's job."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import AbstractUser
from django.core.cache import cache
from django.urls import reverse

from analysis.selectors.conditions import condition_labels, conditions_compare, study_conditions
from corpus.models import Dataset
from studies.models import Assignment, FinalLabel, Study, StudyCondition, StudyItem
from studies.selectors.participation import ALL
from studies.services.participation import participation_exclude
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for, make_user

pytestmark = pytest.mark.django_db

SHOWN = ("alice", "bob", "carol")
HIDDEN = ("dave", "erin", "frank")


def label_of(annotator: str, position: int) -> str:
    """The shown annotators say yes to everything (carol: no to the first item); the hidden ones say no to
    every odd item."""
    if annotator in SHOWN:
        return "no" if annotator == "carol" and position == 0 else "yes"
    return "no" if position % 2 else "yes"


def conditions_study(
    dataset: Dataset, annotators: list[AbstractUser], researcher: AbstractUser, *, design: str = "between"
) -> Study:
    """A factuality study (every annotator on every item) with conditions shown and hidden, between
    annotators: alice, bob and carol see the highlights, dave, erin and frank do not. Everything submitted,
    the shown ones in 30 s per item, the hidden ones in 10 s."""
    study = study_create(
        spec=StudySpec(
            name="Conditions",
            dataset=dataset,
            tasks=["factuality"],
            annotators=annotators,
            annotators_per_item=len(annotators),
            created_by=researcher,
        )
    ).study
    study.condition_design = design
    study.save(update_fields=["condition_design"])
    shown = StudyCondition.objects.create(study=study, name="shown", position=0, evidence="shown")
    hidden = StudyCondition.objects.create(study=study, name="hidden", position=1, evidence="hidden")
    for assignment in Assignment.objects.filter(item__study_task__study=study).select_related("annotator", "item"):
        in_shown = assignment.annotator.username in SHOWN
        assignment.condition = shown if in_shown else hidden
        assignment.save(update_fields=["condition"])
        assignment_submit(
            assignment=assignment,
            user=assignment.annotator,
            labels={"0": label_of(assignment.annotator.username, assignment.item.position)},
            seconds=30 if in_shown else 10,
        )
    return study


@pytest.fixture
def study(small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: Any) -> Study:
    others = [make_user(name, "annotator") for name in HIDDEN]
    return conditions_study(small_dataset, [alice, bob, carol, *others], rita)


def items_of(study: Study) -> list[StudyItem]:
    return list(StudyItem.objects.filter(study_task__study=study).order_by("position"))


def test_it_groups_the_counted_judgements_by_condition(study: Study, carol: AbstractUser, rita: AbstractUser) -> None:
    study_task = study.tasks.get()
    items = items_of(study)
    shown, hidden = study_conditions(study=study)
    labels, without = condition_labels(study_task=study_task, conditions=[shown, hidden])
    assert [c.name for c in labels] == ["shown", "hidden"] and without == 0
    first = (items[0].pk, 0)
    assert labels[0].labels[first] == {"alice": "yes", "bob": "yes", "carol": "no"}
    assert set(labels[1].labels[(items[1].pk, 0)].values()) == {"no"}
    assert labels[0].seconds[(items[0].pk, "alice")] == 30 and labels[1].seconds[(items[0].pk, "dave")] == 10
    participation_exclude(study=study, annotator=carol, reason="careless", by=rita)
    accepted, _ = condition_labels(study_task=study_task, conditions=[shown, hidden])
    assert "carol" not in accepted[0].labels[first]
    everything, _ = condition_labels(study_task=study_task, conditions=[shown, hidden], judgements=ALL)
    assert everything[0].labels[first]["carol"] == "no"


def test_it_leaves_judgements_without_a_condition_out_and_counts_them(study: Study) -> None:
    Assignment.objects.filter(item__study_task__study=study, annotator__username="alice").update(condition=None)
    (result,) = conditions_compare(
        study=study, study_tasks=list(study.tasks.all()), conditions=study_conditions(study=study)
    )
    assert result.n_without_condition == len(items_of(study))
    assert result.comparison is not None
    assert result.comparison.conditions[0].n_annotators == 2


def test_it_compares_the_conditions_with_the_final_labels(study: Study) -> None:
    items = items_of(study)
    study_task = study.tasks.get()
    (before,) = conditions_compare(study=study, study_tasks=[study_task], conditions=study_conditions(study=study))
    assert before.comparison is not None
    shown, hidden = before.comparison.conditions
    assert shown.n_items == hidden.n_items == len(items)
    assert shown.distribution.counts == {"no": 1, "yes": 3 * len(items) - 1}
    assert (shown.time.median, hidden.time.median) == (30, 10)
    (contrast,) = before.comparison.contrasts
    assert contrast.time_median.value == -20
    assert contrast.gold.p_value is None and "no final labels" in contrast.gold.reason
    assert before.comparison.design == "between" and contrast.gold.randomized == "annotator"
    # Every item's gold is yes: the shown ones agree with it on all but carol's first label.
    for item in items:
        FinalLabel.objects.create(item=item, unit_index=0, label="yes", status=FinalLabel.Status.ADJUDICATED)
    (after,) = conditions_compare(study=study, study_tasks=[study_task], conditions=study_conditions(study=study))
    assert after.comparison is not None
    shown, hidden = after.comparison.conditions
    n = 3 * len(items)
    assert shown.gold.proportion == pytest.approx((n - 1) / n)
    odd = sum(item.position % 2 for item in items)
    assert hidden.gold.proportion == pytest.approx((n - 3 * odd) / n)
    (contrast,) = after.comparison.contrasts
    assert contrast.gold.difference == pytest.approx(hidden.gold.proportion - shown.gold.proportion)
    assert contrast.gold.p_value is not None and 0 < contrast.gold.p_value <= 1
    assert contrast.gold.n_permutations == 1000


def exported(client: Any, study: Study, format_name: str) -> bytes:
    response = client.get(reverse("study_export", args=[study.pk, format_name]))
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def test_it_exports_the_condition_of_each_judgement(study: Study, rita: AbstractUser) -> None:
    Assignment.objects.filter(item__study_task__study=study, annotator__username="frank").update(condition=None)
    client = client_for(rita)
    rows = list(csv.DictReader(io.StringIO(exported(client, study, "csv").decode())))
    by_annotator = {row["annotator"]: row["condition"] for row in rows}
    assert by_annotator["alice"] == "shown" and by_annotator["dave"] == "hidden" and by_annotator["frank"] == ""
    table = pq.read_table(io.BytesIO(exported(client, study, "parquet")))
    conditions = dict(zip(table.column("annotator").to_pylist(), table.column("condition").to_pylist(), strict=True))
    assert conditions["bob"] == "shown" and conditions["erin"] == "hidden" and conditions["frank"] == ""


def test_it_escapes_a_condition_name_that_looks_like_a_formula(study: Study, rita: AbstractUser) -> None:
    StudyCondition.objects.filter(study=study, name="hidden").update(name="=HYPERLINK(1)")
    rows = list(csv.DictReader(io.StringIO(exported(client_for(rita), study, "csv").decode())))
    assert {row["condition"] for row in rows} == {"shown", "'=HYPERLINK(1)"}


def test_it_shows_the_conditions_on_the_analysis_page(study: Study, rita: AbstractUser) -> None:
    cache.clear()
    page = client_for(rita).get(reverse("study_analysis", args=[study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="conditions"' in html and 'data-condition="hidden"' in html
    assert "1000 bootstrap resamples" in html and "Seed 0" in html
    (panel,) = page.context["conditions"]["tasks"]
    assert [row.summary.name for row in panel["rows"]] == ["shown", "hidden"]
    assert panel["rows"][0].contrast is None and panel["rows"][1].contrast is not None
    assert "undefined: no final labels yet" in html
    for item in items_of(study):
        FinalLabel.objects.create(item=item, unit_index=0, label="yes", status=FinalLabel.Status.ADJUDICATED)
    html = client_for(rita).get(reverse("study_analysis", args=[study.pk])).content.decode()
    assert "undefined: no final labels yet" not in html
    assert re.search(r'class="gold-difference">-\d+ percentage points, p = 0\.\d{3}<', html), html


def test_it_shows_no_conditions_section_with_fewer_than_two(study: Study, rita: AbstractUser) -> None:
    Assignment.objects.filter(item__study_task__study=study).update(condition=None)
    StudyCondition.objects.filter(study=study, name="hidden").delete()
    page = client_for(rita).get(reverse("study_analysis", args=[study.pk]))
    assert page.status_code == 200 and page.context["conditions"] is None
    assert 'id="conditions"' not in page.content.decode()


def test_it_follows_the_judgement_set_on_the_page(study: Study, carol: AbstractUser, rita: AbstractUser) -> None:
    participation_exclude(study=study, annotator=carol, reason="careless", by=rita)
    client = client_for(rita)
    url = reverse("study_analysis", args=[study.pk])
    accepted = client.get(url).context["conditions"]["tasks"][0]["rows"][0].summary
    everything = client.get(url, {"judgements": "all"}).context["conditions"]["tasks"][0]["rows"][0].summary
    assert (accepted.n_annotators, everything.n_annotators) == (2, 3)


def test_it_answers_the_comparison_in_the_api(study: Study, rita: AbstractUser, ronald: AbstractUser) -> None:
    url = reverse("api_study_conditions", args=[study.pk])
    answer = client_for(rita).get(url, {"resamples": 50, "seed": 3})
    assert answer.status_code == 200
    data = answer.json()
    assert [c["name"] for c in data["conditions"]] == ["shown", "hidden"]
    assert (data["design"], data["resamples"], data["seed"]) == ("between", 50, 3)
    (task,) = data["tasks"]
    comparison = task["comparison"]
    assert comparison["reference"] == "shown" and comparison["resamples"] == 50
    (contrast,) = comparison["contrasts"]
    assert contrast["gold_difference"]["p_value"] is None and contrast["gold_difference"]["reason"]
    assert contrast["time_median_difference"]["value"] == -20
    # Strict JSON: no NaN anywhere.
    json.loads(answer.content, parse_constant=lambda name: pytest.fail(f"{name} in the answer"))
    assert client_for(ronald).get(url).status_code == 404
    assert client_for(rita).get(url, {"resamples": 10**6}).status_code == 400


def test_it_shows_the_comparison_only_to_the_studys_researchers_and_admins(
    study: Study, alice: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> None:
    api = reverse("api_study_conditions", args=[study.pk])
    page = reverse("study_analysis", args=[study.pk])
    assert client_for(alice).get(api).status_code == 403
    assert client_for(ronald).get(page).status_code == 404
    assert client_for(admin_user).get(api, {"resamples": 0}).status_code == 200
    assert 'id="conditions"' in client_for(admin_user).get(page).content.decode()


def test_it_permutes_within_annotators_in_a_within_design(study: Study) -> None:
    # Every annotator sees the even items under shown, the odd ones under hidden.
    study.condition_design = "within"
    study.save(update_fields=["condition_design"])
    shown, hidden = study_conditions(study=study)
    items = items_of(study)
    for item in items:
        Assignment.objects.filter(item=item).update(condition=hidden if item.position % 2 else shown)
        FinalLabel.objects.create(item=item, unit_index=0, label="yes", status=FinalLabel.Status.ADJUDICATED)
    (result,) = conditions_compare(study=study, study_tasks=list(study.tasks.all()), conditions=[shown, hidden])
    assert result.comparison is not None and result.comparison.design == "within"
    first, second = result.comparison.conditions
    assert first.n_annotators == second.n_annotators == 6
    assert first.n_items + second.n_items == len(items)
    (contrast,) = result.comparison.contrasts
    assert contrast.gold.randomized == "assignment within annotator"
    # Hidden annotators say no to every odd item: the hidden condition's share is lower.
    assert contrast.gold.difference is not None and contrast.gold.difference < 0
    assert contrast.gold.p_value is not None
