"""Aggregated labels and worker competence (crowd-kit behind labels_aggregate) on synthetic crowds."""

from __future__ import annotations

import random
from functools import cache

import pytest

from stats.crowd_quality import COMPETENCE, METHODS, Aggregation, CrowdJudgement, labels_aggregate

GOOD = {"expert1": 0.95, "expert2": 0.9, "good1": 0.8, "good2": 0.75}
SPAMMERS = ("always_yes", "random1", "random2")


@cache
def crowd(units: int = 60, seed: int = 4) -> tuple[dict, tuple[CrowdJudgement, ...]]:
    """Four careful workers of known accuracy and three spammers (one answers yes to everything, two at random)
    label every unit: the spammers are nearly half the votes, so the majority often goes wrong."""
    rng = random.Random(seed)
    truth = {("item", unit): rng.choice(["yes", "no"]) for unit in range(units)}
    judgements = []
    for unit, true in truth.items():
        for worker, accuracy in GOOD.items():
            label = true if rng.random() < accuracy else {"yes": "no", "no": "yes"}[true]
            judgements.append(CrowdJudgement(worker, unit, label))
        judgements.append(CrowdJudgement("always_yes", unit, "yes"))
        judgements.extend(CrowdJudgement(worker, unit, rng.choice(["yes", "no"])) for worker in SPAMMERS[1:])
    return truth, tuple(judgements)


@cache
def aggregated(method: str, units: int = 60) -> Aggregation:
    return labels_aggregate(judgements=crowd(units)[1], method=method, seed=0)


def correct(method: str, units: int = 60) -> int:
    truth = crowd(units)[0]
    return sum(aggregated(method, units).labels[unit] == label for unit, label in truth.items())


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_it_ranks_the_spammers_lowest_and_recovers_more_true_labels_than_the_majority(method: str) -> None:
    result = aggregated(method)
    assert {worker.worker for worker in result.workers[:3]} == set(SPAMMERS)
    assert [worker.worker for worker in result.workers][-1] == "expert1"
    assert correct(method) > correct("majority")
    assert correct(method) >= 58 and correct("majority") <= 55


@pytest.mark.parametrize("method", ["wawa", "one_coin_dawid_skene", "glad"])
def test_it_offers_the_other_crowd_kit_models_behind_the_same_function(method: str) -> None:
    units = 20  # GLAD's gradient steps take seconds even on this
    result = aggregated(method, units=units)
    assert result.method == method and len(result.units) == units and result.ties == []
    assert {worker.worker for worker in result.workers[:3]} == set(SPAMMERS)
    assert correct(method, units=units) >= correct("majority", units=units)
    assert all(worker.competence is not None and worker.n_judgements == units for worker in result.workers)


def test_it_gives_identical_results_for_the_same_seed() -> None:
    _, judgements = crowd(30)
    first = labels_aggregate(judgements=judgements, method="mace", seed=11)
    again = labels_aggregate(judgements=reversed(judgements), method="mace", seed=11)
    assert first.units == again.units and first.workers == again.workers


def test_it_reports_ties_and_single_rater_units_of_the_majority() -> None:
    judgements = [
        CrowdJudgement("a", "tie", "yes"),
        CrowdJudgement("b", "tie", "no"),
        CrowdJudgement("a", "alone", "no"),
        CrowdJudgement("a", "clear", "yes"),
        CrowdJudgement("b", "clear", "yes"),
        CrowdJudgement("c", "clear", "no"),
    ]
    result = labels_aggregate(judgements=judgements, method="majority")
    assert result.units["tie"].label is None and result.units["tie"].tied == ("no", "yes")
    assert result.units["tie"].probability == 0.5
    assert result.units["alone"].label == "no" and result.units["alone"].n_raters == 1
    assert result.units["clear"].label == "yes" and result.units["clear"].probability == pytest.approx(2 / 3)
    assert result.ties == ["tie"] and result.single_rater == ["alone"]
    workers = {worker.worker: worker for worker in result.workers}
    # only "clear" has a majority: a and b agree with it, c does not; ties and single labels are not compared
    assert (workers["a"].n_judgements, workers["a"].n_compared, workers["a"].agreement_with_majority) == (3, 1, 1.0)
    assert workers["c"].agreement_with_majority == 0.0 and workers["c"].competence == 0.0
    summary = result.as_dict()
    assert (summary["n_ties"], summary["n_single_rater"], summary["competence"]) == (1, 1, COMPETENCE["majority"])


def test_it_reports_a_model_tie_and_agrees_on_a_single_label() -> None:
    tie = [CrowdJudgement("a", 1, "yes"), CrowdJudgement("b", 1, "no")]
    result = labels_aggregate(judgements=tie, method="dawid_skene")
    assert result.units[1].label is None and result.units[1].tied == ("no", "yes")
    same = [CrowdJudgement(worker, unit, "yes") for worker in "ab" for unit in range(3)]
    for method in METHODS:
        assert set(labels_aggregate(judgements=same, method=method).labels.values()) == {"yes"}


def test_it_refuses_unknown_methods_and_double_judgements() -> None:
    with pytest.raises(ValueError, match="unknown aggregation method 'vote'"):
        labels_aggregate(judgements=[], method="vote")
    with pytest.raises(ValueError, match="worker 'a' judged unit 1 twice"):
        labels_aggregate(judgements=[CrowdJudgement("a", 1, "yes"), CrowdJudgement("a", 1, "no")])
    assert labels_aggregate(judgements=[]).units == {}
