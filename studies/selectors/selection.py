"""Which summaries a study annotates: all, a seeded random sample, or the most controversial ones."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from django.db.models import Count, Q

from common.validation import INT32_MAX, INT32_MIN, printable
from corpus.models import Dataset, HumanScore, MetricScore, Summary
from corpus.selectors import primary_human_score
from scoring.models import Explanation
from stats.selection import controversy_ranking

SELECTION_MODES = ("all", "random", "controversial")
# A metric computed by FaithAnno (scoring.Explanation) rather than imported: "explanation:bertscore".
COMPUTED_PREFIX = "explanation:"


@dataclass(frozen=True)
class ItemSelection:
    mode: str = "all"
    size: int | None = None
    seed: int = 0
    # controversial: the human score and the metrics it is compared with
    human_score: str = ""
    metrics: tuple[str, ...] = ()
    # keep only documents with at most this many sentences (the thesis used 15)
    max_sentences: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        return data


@dataclass
class SelectionResult:
    summaries: list[Summary]
    notes: list[str] = field(default_factory=list)


def item_selection(
    *,
    mode: str,
    size: int | None = None,
    seed: int = 0,
    human_score: str = "",
    metrics: Sequence[str] = (),
    max_sentences: int | None = None,
) -> ItemSelection:
    """The selection a form, API call or command asks for, keeping only what its mode uses (a sample size
    with "all", a human score with "random" are dropped, so the stored selection reproduces the study)."""
    controversial = mode == "controversial"
    return ItemSelection(
        mode=mode,
        size=size if mode != "all" else None,
        seed=seed,
        human_score=human_score if controversial else "",
        metrics=tuple(metrics) if controversial else (),
        max_sentences=max_sentences,
    )


def selection_problems(*, dataset: Dataset, selection: ItemSelection) -> dict[str, list[str]]:
    """What is wrong with a selection of this dataset's summaries, by field (empty when nothing is)."""
    problems: dict[str, list[str]] = {}
    if selection.mode not in SELECTION_MODES:
        problems["selection_mode"] = [f"Choose the items by one of: {', '.join(SELECTION_MODES)}."]
        return problems
    if selection.mode != "all" and (selection.size is None or not 1 <= selection.size <= INT32_MAX):
        problems["sample_size"] = [f"A {selection.mode} selection needs n, a number of items from 1 to {INT32_MAX}."]
    if not INT32_MIN <= selection.seed <= INT32_MAX:
        problems["seed"] = [f"The seed is a whole number from {INT32_MIN} to {INT32_MAX}."]
    if selection.max_sentences is not None and not 1 <= selection.max_sentences <= INT32_MAX:
        problems["max_sentences"] = [f"Documents have 1 to {INT32_MAX} sentences."]
    if selection.mode != "controversial":
        return problems
    scope = {"summary__document__dataset": dataset}
    if not selection.human_score:
        problems["human_score"] = ["A controversial selection compares a human score: choose one."]
    elif not HumanScore.objects.filter(**scope, name=selection.human_score).exists():
        problems["human_score"] = [
            f"No summary of {dataset.name!r} has the human score {printable(selection.human_score)!r}."
        ]
    if not selection.metrics:
        problems["metrics"] = ["A controversial selection compares at least one metric score: choose one."]
    computed = [name.removeprefix(COMPUTED_PREFIX) for name in selection.metrics if name.startswith(COMPUTED_PREFIX)]
    known = set(MetricScore.objects.filter(**scope, name__in=selection.metrics).values_list("name", flat=True))
    known |= {
        f"{COMPUTED_PREFIX}{name}"
        for name in Explanation.objects.filter(**scope, metric__in=computed).values_list("metric", flat=True)
    }
    unknown = [printable(name) for name in selection.metrics if name not in known]
    if unknown:
        problems["metrics"] = [f"No summary of {dataset.name!r} has the metric score {', '.join(unknown)}."]
    return problems


def _metric_values(summary_ids: Sequence[int], name: str) -> dict[int, float]:
    if name.startswith(COMPUTED_PREFIX):
        # score=None is excluded: every score is a number.
        rows = cast(
            "Iterable[tuple[int, float]]",
            Explanation.objects.filter(summary_id__in=summary_ids, metric=name.removeprefix(COMPUTED_PREFIX))
            .exclude(score=None)
            .order_by("created_at", "pk")
            .values_list("summary_id", "score"),
        )
    else:
        rows = MetricScore.objects.filter(summary_id__in=summary_ids, name=name).values_list("summary_id", "value")
    return dict(rows)  # later rows win: the newest explanation configuration


def summaries_select(*, dataset: Dataset, selection: ItemSelection, references_only: bool = False) -> SelectionResult:
    """The dataset's summaries a study task gets, in a stable order (document id, summary id), by a selection
    without problems (selection_problems)."""
    summaries = Summary.objects.filter(document__dataset=dataset).select_related("document")
    if references_only:
        summaries = summaries.filter(is_reference=True)
    candidates = list(summaries.order_by("document__external_id", "external_id"))
    notes = []
    if selection.max_sentences is not None:
        kept = [s for s in candidates if len(s.document.sentences) <= selection.max_sentences]
        notes.append(
            f"{len(candidates) - len(kept)} of {len(candidates)} summaries left out: their documents have more "
            f"than {selection.max_sentences} sentences"
        )
        candidates = kept
    if selection.mode == "random":
        assert selection.size is not None, "selection_problems asks a random selection for its size"
        chosen = random.Random(selection.seed).sample(range(len(candidates)), min(selection.size, len(candidates)))
        candidates = [candidates[index] for index in sorted(chosen)]
    elif selection.mode == "controversial":
        ids = [s.pk for s in candidates]
        human = dict(
            HumanScore.objects.filter(summary_id__in=ids, name=selection.human_score).values_list("summary_id", "value")
        )
        metrics = {name: _metric_values(ids, name) for name in selection.metrics}
        ranking = controversy_ranking(human=human, metrics=metrics)
        if len(ranking) < len(candidates):
            notes.append(
                f"{len(candidates) - len(ranking)} of {len(candidates)} summaries left out: they lack the human "
                f"score {selection.human_score!r} or one of the metrics"
            )
        top = {entry.key for entry in ranking[: selection.size]}
        candidates = [s for s in candidates if s.pk in top]
    return SelectionResult(summaries=candidates, notes=notes)


@dataclass(frozen=True)
class SelectionOptions:
    human_scores: list[tuple[str, int]]  # name, summaries that have it
    metrics: list[tuple[str, str, int]]  # value for ItemSelection.metrics, shown name, summaries that have it
    explanations: dict[str, int]  # computed metric -> summaries with an explanation
    summaries: int
    references: int
    primary_human_score: str | None = None  # what the controversial selection starts with


def selection_options(*, dataset: Dataset) -> SelectionOptions:
    """What a researcher can compare when choosing controversial items, and what is scored, in this dataset."""
    scope = {"summary__document__dataset": dataset}
    human = list(HumanScore.objects.filter(**scope).values("name").annotate(n=Count("id")).values_list("name", "n"))
    imported = MetricScore.objects.filter(**scope).values("name").annotate(n=Count("id")).values_list("name", "n")
    computed = dict(
        Explanation.objects.filter(**scope, error="")
        .values("metric")
        .annotate(n=Count("summary_id", distinct=True))
        .values_list("metric", "n")
    )
    metrics = [
        (f"{COMPUTED_PREFIX}{name}", f"{name} (computed by FaithAnno)", n) for name, n in sorted(computed.items())
    ]
    metrics += [(name, f"{name} (imported)", n) for name, n in sorted(imported)]
    counts = Summary.objects.filter(document__dataset=dataset).aggregate(
        n=Count("id"), references=Count("id", filter=Q(is_reference=True))
    )
    return SelectionOptions(
        human_scores=sorted(human),
        metrics=metrics,
        explanations=computed,
        summaries=counts["n"],
        references=counts["references"],
        primary_human_score=primary_human_score(dict(human), dataset.primary_human_score),
    )
