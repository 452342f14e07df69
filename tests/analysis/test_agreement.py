from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.selectors.analysis import coded_unit_labels, unit_labels
from stats.agreement import fleiss_kappa
from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.conftest import client_for, units_of

# The worked example of the Wikipedia article on Fleiss' kappa: 10 subjects, 14 raters, 5 categories.
WIKIPEDIA_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def ratings_from_table(table: list[list[int]]) -> dict[int, list[str]]:
    return {item: [f"c{j}" for j, n in enumerate(row) for _ in range(n)] for item, row in enumerate(table)}


def test_it_reproduces_the_wikipedia_example() -> None:
    result = fleiss_kappa(ratings_from_table(WIKIPEDIA_TABLE))
    assert result.value == pytest.approx(0.20993, abs=5e-5)  # the article: 0.210
    assert result.observed_agreement == pytest.approx(0.37802, abs=5e-5)
    assert result.chance_agreement == pytest.approx(0.21276, abs=5e-5)  # the article rounds it to 0.213
    assert (result.n_items, result.n_dropped, result.raters_per_item) == (10, 0, 14)


def test_it_uses_items_with_the_modal_number_of_raters_and_counts_the_rest() -> None:
    ratings = {1: ["a", "a", "b"], 2: ["a", "a", "a"], 3: ["b", "b", "b"], 4: ["a", "b"], 5: ["a"]}
    result = fleiss_kappa(ratings)
    assert (result.n_items, result.n_dropped, result.raters_per_item) == (3, 2, 3)
    # p_a = 5/9, p_b = 4/9; P = (1/3 + 1 + 1) / 3
    chance = (5 / 9) ** 2 + (4 / 9) ** 2
    assert result.value == pytest.approx((7 / 9 - chance) / (1 - chance))


def test_it_is_perfect_for_full_agreement_on_two_categories() -> None:
    assert fleiss_kappa({1: ["a", "a"], 2: ["b", "b"]}).value == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("ratings", "reason"),
    [
        ({}, "no judgements yet"),
        ({1: ["a"], 2: ["b"]}, "each item needs at least two raters"),
        ({1: ["a", "b"]}, "at least two complete items are needed"),
        ({1: ["a", "a"], 2: ["a", "a"]}, "every judgement has the same label"),
    ],
)
def test_it_explains_when_kappa_is_undefined(ratings: dict[int, list[str]], reason: str) -> None:
    result = fleiss_kappa(ratings)
    assert result.value is None
    assert reason in result.reason


@pytest.mark.django_db
def test_it_reports_the_study_kappa_in_json_and_on_the_researcher_page(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    # alice labels everything correct; bob says "don't know" to the first unit of each item and agrees otherwise.
    for user in (alice, bob):
        for assignment in Assignment.objects.filter(annotator=user, item__study_task__study=bertscore_study):
            units = sorted(units_of(assignment), key=lambda u: u.index)
            labels = {u.index: "correct" for u in units}
            if user == bob:
                labels[units[0].index] = "dont_know"
            assignment_submit(assignment=assignment, user=user, labels=labels)
    # Both finished every item, so every unit has exactly two raters.
    out = io.StringIO()
    call_command("agreement", "--study", str(bertscore_study.pk), "--json", stdout=out)
    plain = json.loads(out.getvalue())
    assert plain["coefficient"] == "fleiss" and plain["task"] == "bertscore"
    assert plain["n_dropped"] == 0 and plain["raters_per_item"] == 2 and plain["n_items"] > 10
    assert plain["value"] < 0.0  # only "correct" plus a few disagreements: below chance

    out = io.StringIO()
    call_command("agreement", "--study", str(bertscore_study.pk), "--dont-know-as-incorrect", "--json", stdout=out)
    mapped = json.loads(out.getvalue())
    assert mapped["category_proportions"].keys() == {"correct", "incorrect"}
    assert mapped["n_items"] == plain["n_items"]

    page = client_for(rita).get(reverse("study_detail", args=[bertscore_study.pk]))
    assert page.context["tasks"][0]["agreement"].value == pytest.approx(plain["value"])
    assert f"{plain['value']:.3f}" in page.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("label_map", [None, {"dont_know": "incorrect"}])
def test_it_reads_the_same_labels_as_arrays(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, label_map: dict[str, str] | None
) -> None:
    """The study page reads judged units as arrays (coded_unit_labels): the same units, annotators and
    labels as unit_labels, units in its order, "don't know" mapped alike; unsubmitted work left out."""
    for user in (alice, bob):
        assignments = Assignment.objects.filter(annotator=user, item__study_task__study=bertscore_study)
        for number, assignment in enumerate(assignments.order_by("pk")[:3]):
            choices = ("correct", "incorrect", "dont_know")
            labels = {u.index: choices[(u.index + number + len(user.username)) % 3] for u in units_of(assignment)}
            assignment_submit(assignment=assignment, user=user, labels=labels)
    Assignment.objects.filter(annotator=bob, status=Assignment.Status.SUBMITTED).update(
        status=Assignment.Status.ASSIGNED
    )  # withdrawn: bob's judgements stay in the table and must not be read
    study_task = bertscore_study.tasks.get()
    expected = unit_labels(study_task=study_task, label_map=label_map)
    coded = coded_unit_labels(study_task=study_task, label_map=label_map)
    assert coded.n_units == len(expected) > 10 and coded.annotators == ["alice"]
    rebuilt: list[dict[str, str]] = [{} for _ in range(coded.n_units)]
    for unit, annotator, label in zip(coded.unit, coded.annotator, coded.label, strict=True):
        rebuilt[unit][coded.annotators[annotator]] = coded.labels[label]
    assert rebuilt == list(expected.values())
    assert ("dont_know" in coded.labels) == (label_map is None)


@pytest.mark.django_db
def test_it_drops_units_of_unfinished_items(bertscore_study: Study, alice: AbstractUser) -> None:
    assignment = Assignment.objects.filter(annotator=alice, item__study_task__study=bertscore_study).first()
    assignment_submit(assignment=assignment, user=alice, labels={u.index: "correct" for u in units_of(assignment)})
    out = io.StringIO()
    call_command("agreement", "--study", str(bertscore_study.pk), "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["value"] is None and result["reason"] == "each item needs at least two raters"


@pytest.mark.django_db
def test_it_reports_an_unknown_study() -> None:
    with pytest.raises(CommandError, match="No study with id 999"):
        call_command("agreement", "--study", "999", "--json")
