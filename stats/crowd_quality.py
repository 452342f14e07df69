"""Crowd worker quality: aggregated labels and competence estimates (issue 14, point 7). No Django here.

One function, `labels_aggregate`, for every method: the majority vote (computed here, like the rest of the
agreement code) and the models of crowd-kit (Toloka's maintained library, Apache-2.0): Wawa, Dawid-Skene,
one-coin Dawid-Skene, GLAD and MACE. crowd-kit pulls in pandas and scikit-learn and takes seconds to import,
so it is imported inside the function: pages that import `stats` do not load it (tests/test_lazy_imports.py).

Labels are categorical (a task's choice values); a unit is anything hashable (e.g. (item id, unit index)).
Ties (two labels equally likely for a unit) get no label and are reported; units judged by one worker keep
that worker's label under the majority vote and are reported too. Competence has each method's own scale
(COMPETENCE): compare workers within one method, not across methods.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stats.agreement import annotator_agreements

MAJORITY = "majority"
METHODS = ("majority", "wawa", "dawid_skene", "one_coin_dawid_skene", "glad", "mace")
COMPETENCE = {
    "majority": "share of the worker's labels equal to the unit's majority (units with a tie or one label left out)",
    "wawa": "share of the worker's labels equal to the majority vote (crowd-kit Wawa's skill)",
    "dawid_skene": "probability that the worker's label is the true one (the confusion matrix's diagonal, "
    "weighted by the estimated class priors)",
    "one_coin_dawid_skene": "probability that the worker's label is the true one (one-coin skill)",
    "glad": "expertise alpha: 0 random, higher better, below 0 adversarial (GLAD)",
    "mace": "probability that the worker is not spamming (MACE)",
}
# Two labels whose probabilities differ by less than this tie.
TIE_TOLERANCE = 1e-9
# crowd-kit 1.4.2's MACE starts every restart from the same random state (an int random_state), so more than
# one restart repeats the same fit: one restart gives the identical result in a tenth of the time.
MACE_RESTARTS = 1
# A crowd model (any method but the majority) over more judgements than this would hold a web worker for
# minutes (GLAD: 36 s for 3,000 on the loaded 2-core machine, docs/PERFORMANCE.md): requests refuse it, the
# commands have no limit.
MAX_REQUEST_JUDGEMENTS = 20_000


@dataclass(frozen=True, slots=True)
class CrowdJudgement:
    worker: str
    unit: Hashable
    label: str


@dataclass(frozen=True, slots=True)
class UnitLabel:
    unit: Hashable
    label: str | None  # None on a tie
    probability: float  # of the label (for a tie: of each tied label); the majority: its share of the votes
    n_raters: int
    tied: tuple[str, ...] = ()  # the labels that tie, sorted; () when there is a label


@dataclass(frozen=True, slots=True)
class WorkerQuality:
    worker: str
    n_judgements: int
    competence: float | None  # on the method's scale (COMPETENCE); None when the method gives none
    agreement_with_majority: float | None  # share of the worker's labels equal to the unit's majority
    n_compared: int  # the worker's judgements on units with a majority (2+ labels, no tie)


@dataclass(frozen=True)
class Aggregation:
    method: str
    units: dict[Hashable, UnitLabel]
    workers: list[WorkerQuality]  # sorted by competence, lowest first (None last), then by worker

    @property
    def labels(self) -> dict[Hashable, str | None]:
        return {unit: row.label for unit, row in self.units.items()}

    @property
    def ties(self) -> list[Hashable]:
        return [unit for unit, row in self.units.items() if row.label is None]

    @property
    def single_rater(self) -> list[Hashable]:
        return [unit for unit, row in self.units.items() if row.n_raters == 1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "competence": COMPETENCE[self.method],
            "n_units": len(self.units),
            "n_ties": len(self.ties),
            "n_single_rater": len(self.single_rater),
            "workers": [
                {
                    "worker": w.worker,
                    "n_judgements": w.n_judgements,
                    "competence": w.competence,
                    "agreement_with_majority": w.agreement_with_majority,
                    "n_compared": w.n_compared,
                }
                for w in self.workers
            ],
        }


def _labelled(judgements: Iterable[CrowdJudgement]) -> dict[Hashable, dict[str, str]]:
    labelled: dict[Hashable, dict[str, str]] = {}
    for judgement in judgements:
        if not isinstance(judgement.label, str) or not isinstance(judgement.worker, str):
            raise ValueError(f"worker and label must be text (got {judgement.worker!r}, {judgement.label!r})")
        by_worker = labelled.setdefault(judgement.unit, {})
        if judgement.worker in by_worker:
            raise ValueError(f"worker {judgement.worker!r} judged unit {judgement.unit!r} twice")
        by_worker[judgement.worker] = judgement.label
    return labelled


def _unit_label(unit: Hashable, probabilities: Mapping[str, float], n_raters: int) -> UnitLabel:
    best = max(probabilities.values())
    top = sorted(label for label, p in probabilities.items() if best - p < TIE_TOLERANCE)
    if len(top) > 1:
        return UnitLabel(unit, None, float(best), n_raters, tuple(top))
    return UnitLabel(unit, top[0], float(best), n_raters)


def _majority(labelled: Mapping[Hashable, Mapping[str, str]]) -> dict[Hashable, UnitLabel]:
    units = {}
    for unit, by_worker in labelled.items():
        counts = Counter(by_worker.values())
        units[unit] = _unit_label(unit, {label: n / len(by_worker) for label, n in counts.items()}, len(by_worker))
    return units


def _crowdkit(
    method: str, labelled: Mapping[Hashable, Mapping[str, str]], seed: int
) -> tuple[dict[Hashable, UnitLabel], dict[str, float]]:
    """Fit a crowd-kit model; units and workers go in as integer codes (sorted), labels as they are."""
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 uses pandas keywords that pandas 3 deprecates (inplace=, copy=); nothing to act on here.
        warnings.filterwarnings("ignore", module="crowdkit")
        return _crowdkit_fit(method, labelled, seed)


def _crowdkit_fit(
    method: str, labelled: Mapping[Hashable, Mapping[str, str]], seed: int
) -> tuple[dict[Hashable, UnitLabel], dict[str, float]]:
    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote, OneCoinDawidSkene, Wawa

    unit_list = sorted(labelled, key=repr)  # the same codes whatever order the judgements came in
    workers = sorted({worker for by_worker in labelled.values() for worker in by_worker})
    worker_code = {worker: code for code, worker in enumerate(workers)}
    rows = sorted(
        (worker_code[worker], task, label)
        for task, unit in enumerate(unit_list)
        for worker, label in labelled[unit].items()
    )
    data = pd.DataFrame(rows, columns=["worker", "task", "label"])
    competence: dict[str, float] = {}
    if method == "wawa":
        model: Any = Wawa().fit(data)
        # Wawa.predict calls scikit-learn's check_is_fitted, which scikit-learn >= 1.6 refuses for crowd-kit's
        # classes; Wawa's labels are the majority vote weighted by its skills, computed here the same way.
        skills = model.skills_
        probas = MajorityVote().fit(data, skills=skills).probas_
        competence = {workers[code]: float(skill) for code, skill in skills.items()}
    elif method in ("dawid_skene", "one_coin_dawid_skene"):
        model = (DawidSkene if method == "dawid_skene" else OneCoinDawidSkene)(n_iter=100).fit(data)
        probas = model.probas_
        if method == "one_coin_dawid_skene":
            competence = {workers[code]: float(skill) for code, skill in model.skills_.items()}
        else:
            errors, priors = model.errors_, model.priors_
            for code in errors.index.get_level_values("worker").unique():
                matrix = errors.loc[code]
                competence[workers[code]] = float(
                    sum(priors[label] * matrix.loc[label, label] for label in priors.index if label in matrix.index)
                )
    elif method == "glad":
        model = GLAD(n_iter=100).fit(data)
        probas = model.probas_
        competence = {workers[code]: float(alpha) for code, alpha in model.alphas_.items()}
    else:  # mace
        model = MACE(n_restarts=MACE_RESTARTS, random_state=seed).fit(data)
        probas = model.probas_
        order = pd.unique(data["worker"])  # MACE numbers workers in order of appearance
        competence = {workers[code]: float(model.spamming_[position, 1]) for position, code in enumerate(order)}
    assert probas is not None, "crowd-kit's fit sets probas_"
    units = {}
    for task, row in probas.iterrows():
        unit = unit_list[int(task)]
        probabilities = {str(label): float(p) for label, p in row.items() if pd.notna(p)}
        units[unit] = _unit_label(unit, probabilities, len(labelled[unit]))
    return units, competence


def labels_aggregate(*, judgements: Iterable[CrowdJudgement], method: str = MAJORITY, seed: int = 0) -> Aggregation:
    """Per unit the aggregated label, per worker a competence estimate and the agreement with the majority.

    The same judgements, method and seed give the same result. A ValueError names an unknown method, a label
    or worker that is not text, or a worker who judged the same unit twice."""
    if method not in METHODS:
        raise ValueError(f"unknown aggregation method {method!r} (methods: {', '.join(METHODS)})")
    labelled = _labelled(judgements)
    labels = {label for by_worker in labelled.values() for label in by_worker.values()}
    competence: dict[str, float]
    if method == MAJORITY or len(labels) < 2:
        # One label in all: every model gives it; crowd-kit's need two classes to fit.
        units, competence = _majority(labelled), {}
    else:
        units, competence = _crowdkit(method, labelled, seed)
    agreements = annotator_agreements(labelled)
    if method == MAJORITY or not competence:
        competence = {
            row.annotator: row.agreement_with_majority for row in agreements if row.agreement_with_majority is not None
        }
    workers = [
        WorkerQuality(
            worker=row.annotator,
            n_judgements=row.n_judgements,
            competence=competence.get(row.annotator),
            agreement_with_majority=row.agreement_with_majority,
            n_compared=row.n_compared,
        )
        for row in agreements
    ]
    workers.sort(key=lambda w: (w.competence is None, w.competence if w.competence is not None else 0.0, w.worker))
    return Aggregation(method=method, units=units, workers=workers)
