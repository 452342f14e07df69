"""Reads for the analyses the published benchmarks use (issue 15): any agreement coefficient overall or per
group (system, or a key of the summary's or document's meta) with a bootstrap interval, alpha_U over
character spans, a metric as one more rater, and balanced accuracy / ROC AUC on binary labels.

The math lives in stats (no Django): agreement.agreement_by_group, unitizing, metaeval;
these functions fetch what it needs with a fixed number of queries and hand it over.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform

from analysis.selectors.analysis import (
    EDIT_AGREEMENT_UNDEFINED,
    FINAL_LABELS,
    MAJORITY_GOLD,
    SPAN_UNITS,
    AnalysisError,
    HumanSide,
    Labelled,
    _newest_configs,
    _numeric_values,
    final_unit_labels,
    human_side,
    metric_names,
    metric_values,
    model_rater_names,
    submitted_assignments,
    submitted_judgements,
    task_labels,
)
from common.validation import finite_number
from corpus.models import Dataset, Summary
from protocols.tasks import TaskDefinition, get_task
from scoring.models import Explanation
from stats import agreement as agr
from stats import metaeval, unitizing
from stats.crowd_quality import MAJORITY, CrowdJudgement, labels_aggregate
from stats.crowd_quality import METHODS as AGGREGATION_METHODS
from stats.spans import ANY_SPAN, FAITHFUL, HALLUCINATED, NO_SPAN
from studies.models import StudyItem, StudyTask
from studies.selectors.participation import ACCEPTED
from studies.selectors.tallies import DONT_KNOW_AS_INCORRECT

BY_SYSTEM = "system"
META_PREFIX = "meta."
ALPHA_U = "alpha_u"
# Every coefficient of the agreement command, page and API: the label coefficients and, for span tasks,
# Krippendorff's alpha for unitized data over the character spans.
AGREEMENT_COEFFICIENTS = (*agr.COEFFICIENTS, ALPHA_U)
WEIGHTS = agr.WEIGHTS
# Summary (or document) meta values read as a binary faithful (1) / unfaithful (0) label.
FAITHFUL_VALUES = frozenset({"1", "true", "yes", "faithful", "consistent", "correct"})
UNFAITHFUL_VALUES = frozenset({"0", "false", "no", "unfaithful", "inconsistent", "incorrect"})
DEFAULT_SPLIT_KEY = "split"
BINARY_PROTOCOLS = ("roc_auc", metaeval.BALANCED_ACCURACY)
# The human reference a metric as rater is compared with: the majority vote, a crowd model's label, or the
# study's final labels (adjudication).
REFERENCES = (*AGGREGATION_METHODS, FINAL_LABELS)
PAIR_BY = "error_type"


# --- groups -----------------------------------------------------------------------------------------


def group_by_checked(by: str) -> str:
    """`system` or `meta.KEY`; anything else is refused with the accepted forms."""
    if by == BY_SYSTEM or (by.startswith(META_PREFIX) and by[len(META_PREFIX) :].strip()):
        return by
    raise AnalysisError(f"group by {by!r}: use 'system' or 'meta.KEY' (a key of the summary's or document's meta)")


def _group_name(value: object) -> str | None:
    """A meta value as a group name: strings as they are, other JSON values as JSON; null is no group."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _meta_values(summaries: QuerySet[Summary], key: str, prefix: str = "") -> dict[int, object]:
    """id -> the value of `key` in the summary's meta, else in its document's meta (absent: not listed)."""
    rows = summaries.annotate(
        own=KeyTransform(key, f"{prefix}meta"), inherited=KeyTransform(key, f"{prefix}document__meta")
    ).values_list("pk", "own", "inherited")
    return {
        pk: own if own is not None else inherited
        for pk, own, inherited in rows.iterator(chunk_size=10000)
        if own is not None or inherited is not None
    }


def summary_groups(summaries: QuerySet[Summary], by: str) -> dict[int, str]:
    """summary id -> its group (`system`, or `meta.KEY`: the summary's meta, else its document's). Summaries
    without the key are left out; a key no summary has is an error naming it."""
    by = group_by_checked(by)
    if by == BY_SYSTEM:
        return dict(summaries.values_list("pk", "system"))
    key = by[len(META_PREFIX) :]
    groups = {pk: name for pk, value in _meta_values(summaries, key).items() if (name := _group_name(value))}
    if not groups:
        raise AnalysisError(f"no summary (or its document) has the meta key {key!r} to group by")
    return groups


def item_groups(*, study_task: StudyTask, by: str) -> dict[int, str]:
    """study item id -> the group of its summary."""
    items_of_task = StudyItem.objects.filter(study_task=study_task)
    items = dict(items_of_task.values_list("pk", "summary_id"))
    groups = summary_groups(Summary.objects.filter(pk__in=items_of_task.values("summary_id")), by)
    return {item: groups[summary] for item, summary in items.items() if summary in groups}


def _item_of(unit: Hashable) -> int:
    """Units are (item id, unit or word index), or the item id itself (span tasks per summary)."""
    # Unit keys are item ids, or tuples that start with one (see the docstring).
    return unit[0] if isinstance(unit, tuple) else unit  # type: ignore[return-value]


# --- agreement: every coefficient, per group, with an interval -------------------------------------


def _categories(task: TaskDefinition, labelled: Labelled, span_unit: str, dont_know_as_incorrect: bool) -> list[str]:
    """The scale's categories (Gwet's and Brennan-Prediger's q): the task's choices, or for span tasks the
    two word or summary labels; a label in the data outside them is added rather than refused."""
    if task.spans:
        base = [FAITHFUL, HALLUCINATED] if span_unit == "word" else [NO_SPAN, ANY_SPAN]
    else:
        mapped = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else {}
        base = [value for value in task.values if value not in mapped]
    seen = {label for labels in labelled.values() for label in labels.values() if label is not None}
    return [*base, *sorted(seen - set(base))]


def _ratings(
    task: TaskDefinition, labelled: Labelled, spec: agr.Coefficient, span_unit: str, dont_know_as_incorrect: bool
) -> tuple[dict[Hashable, list[Any]], list[Any] | None]:
    """The ratings and categories the coefficient reads: labels, or their numbers for the numeric levels and
    weights."""
    numeric_level = spec.name == "krippendorff" and spec.level != "nominal"
    numeric_weights = spec.name in ("gwet", "brennan_prediger") and spec.weights != "identity"
    if task.spans and (numeric_level or numeric_weights):
        what = f"the {spec.level} level" if numeric_level else f"{spec.weights} weights"
        raise AnalysisError(f"span tasks have nominal labels (hallucinated or not): {what} does not apply")
    if numeric_level or numeric_weights:
        ratings = _numeric_values(task, labelled, spec.level if numeric_level else f"{spec.weights} weights")
        numbers = sorted({choice.numeric for choice in task.choices if choice.numeric is not None})
        return ratings, numbers
    labels_by_unit = {unit: list(labels.values()) for unit, labels in labelled.items()}
    return labels_by_unit, _categories(task, labelled, span_unit, dont_know_as_incorrect)


def typed_span_markings(
    *, study_task: StudyTask, judgements: str = ACCEPTED
) -> dict[int, tuple[str, dict[str, list[tuple[int, int, str]]]]]:
    """item id -> (summary text, annotator -> [(start, end, type)]) from submitted assignments; an annotator
    who marked nothing has []."""
    items: dict[int, tuple[str, dict[str, list[tuple[int, int, str]]]]] = {}
    submitted = submitted_assignments(study_task=study_task, judgements=judgements)
    for item_id, annotator, text in submitted.values_list("item_id", "annotator__username", "item__summary__text"):
        items.setdefault(item_id, (text, {}))[1][annotator] = []
    spans = (
        submitted_judgements(study_task=study_task, judgements=judgements)
        .filter(start__isnull=False, end__isnull=False)
        .values_list("assignment__item_id", "assignment__annotator__username", "start", "end", "label")
    )
    # start and end are filtered non-null.
    rows = cast("Iterator[tuple[int, str, int, int, str]]", spans.iterator(chunk_size=10000))
    for item_id, annotator, start, end, label in rows:
        items[item_id][1][annotator].append((start, end, label))
    return items


def _value_error(exc: ValueError) -> AnalysisError:
    return AnalysisError(str(exc))


def agreement_analysis(
    *,
    study_task: StudyTask,
    coefficient: str = "fleiss",
    level: str = "nominal",
    weights: str = "identity",
    by: str | None = None,
    typed: bool = False,
    dont_know_as_incorrect: bool = False,
    span_unit: str = "word",
    bootstrap: int = 0,
    seed: int = 0,
    judgements: str = ACCEPTED,
) -> dict[str, object]:
    """One coefficient over the task's judgements: overall, or with `by` within each group and the mean over
    the groups where it is defined. `bootstrap` > 0 adds a seeded percentile interval (items, or summaries
    for alpha_U, resampled), for each group its own."""
    if coefficient not in AGREEMENT_COEFFICIENTS:
        raise AnalysisError(f"coefficient must be one of {', '.join(AGREEMENT_COEFFICIENTS)}")
    if span_unit not in SPAN_UNITS:
        raise AnalysisError(f"span unit must be one of {', '.join(SPAN_UNITS)}")
    task = get_task(study_task.task)
    base: dict[str, object] = {
        "study": study_task.study_id,
        "dataset": study_task.study.dataset.name,
        "task": study_task.task,
        "judgements": judgements,
        "dont_know_as_incorrect": dont_know_as_incorrect,
        "span_unit": span_unit if task.spans and coefficient != ALPHA_U else None,
    }
    if task.edit:  # no two annotators rate the same thing: no coefficient, whatever was asked (as the pages)
        return {**base, "coefficient": coefficient, "value": None, "n_items": 0, "n_dropped": 0,
                "reason": EDIT_AGREEMENT_UNDEFINED}  # fmt: skip
    groups = item_groups(study_task=study_task, by=by) if by else None
    if coefficient == ALPHA_U:
        if not task.spans:
            raise AnalysisError(f"alpha_u compares character spans; task {task.key!r} has labels, not spans")
        return {**base, "typed": typed, **_alpha_u(study_task, typed, groups, by, bootstrap, seed, judgements)}
    try:
        spec = agr.Coefficient(coefficient, level, weights)
    except ValueError as exc:
        raise _value_error(exc) from exc
    _, labels = task_labels(
        study_task=study_task,
        dont_know_as_incorrect=dont_know_as_incorrect,
        span_units=[span_unit],
        judgements=judgements,
    )
    labelled = next(iter(labels.values()))
    ratings, categories = _ratings(task, labelled, spec, span_unit, dont_know_as_incorrect)
    spec = agr.Coefficient(coefficient, level, weights, categories)
    try:
        if groups is None:
            table = spec.table(ratings)
            result = spec.rows(table, agr.all_rows(table.n_items))[0]
            data: dict[str, object] = {**base, **result.as_dict()}
            if coefficient == "krippendorff":
                data["level"] = level
            if bootstrap > 0:
                data["interval"] = agr.agreement_interval(
                    ratings,
                    coefficient,
                    level=level,
                    weights=weights,
                    categories=categories,
                    resamples=bootstrap,
                    seed=seed,
                ).as_dict()
            return data
        grouped_ratings = {unit: values for unit, values in ratings.items() if _item_of(unit) in groups}
        unit_groups = {unit: groups[_item_of(unit)] for unit in grouped_ratings}
        grouped = agr.agreement_by_group(
            grouped_ratings, unit_groups, coefficient, level=level, weights=weights, categories=categories
        )
        data = {**base, "by": by, **grouped.as_dict(), "n_ungrouped": len(ratings) - len(grouped_ratings)}
        if bootstrap > 0:
            _group_intervals(
                data,
                grouped_ratings,
                unit_groups,
                lambda part: agr.agreement_interval(
                    part,
                    coefficient,
                    level=level,
                    weights=weights,
                    categories=categories,
                    resamples=bootstrap,
                    seed=seed,
                ),
            )
    except ValueError as exc:
        raise _value_error(exc) from exc
    return data


Key = TypeVar("Key", bound=Hashable)  # an item's key (its id)


def _group_intervals(
    data: dict[str, Any], entries: Mapping[Key, Any], group_of: Mapping[Key, str], interval: Any
) -> None:
    """Each group's bootstrap interval (its own items resampled), added to its row of `data["groups"]`."""
    members: dict[str, dict[Key, Any]] = {}
    for key, value in entries.items():
        members.setdefault(group_of[key], {})[key] = value
    for row in data["groups"]:
        row["interval"] = interval(members.get(row["group"], {})).as_dict()


def _alpha_u(
    study_task: StudyTask,
    typed: bool,
    groups: dict[int, str] | None,
    by: str | None,
    bootstrap: int,
    seed: int,
    judgements: str,
) -> dict[str, object]:
    summaries = typed_span_markings(study_task=study_task, judgements=judgements)
    try:
        if groups is None:
            # Mapping's key type is invariant: these int-keyed dicts are what the Hashable-keyed parameters read.
            data = unitizing.unitizing_alpha(summaries, typed=typed).as_dict()  # type: ignore[arg-type]
            if bootstrap > 0:
                data["interval"] = unitizing.unitizing_alpha_interval(
                    summaries,  # type: ignore[arg-type]
                    typed=typed,
                    resamples=bootstrap,
                    seed=seed,
                ).as_dict()
            return data
        grouped = {item: marked for item, marked in summaries.items() if item in groups}
        # Mapping's key type is invariant: these int-keyed dicts are what the Hashable-keyed parameters read.
        result = unitizing.unitizing_alpha_by_group(grouped, groups, typed=typed)  # type: ignore[arg-type]
        data = {"by": by, **result.as_dict(), "n_ungrouped": len(summaries) - len(grouped)}
        if bootstrap > 0:
            _group_intervals(
                data,
                grouped,
                groups,
                lambda part: unitizing.unitizing_alpha_interval(part, typed=typed, resamples=bootstrap, seed=seed),
            )
    except ValueError as exc:
        raise _value_error(exc) from exc
    return data


# --- a metric as one more rater ---------------------------------------------------------------------


TUNED = "tuned"


def threshold_list(text: str, *, field: str) -> list[float] | None:
    """Cut points such as "0.3,0.7" as finite numbers, or None for "tuned"; anything else is an InputError
    naming `field`."""
    if text.strip() == TUNED:
        return None
    return [finite_number(part, field=field) for part in text.split(",")]


def ordered_labels(task: TaskDefinition) -> list[str]:
    """The task's labels from the least to the most faithful (by their numbers), the bins of a metric."""
    numbered = sorted((choice.numeric, choice.value) for choice in task.choices if choice.numeric is not None)
    if len(numbered) < 2:
        raise AnalysisError(
            f"a metric can join the raters of a task whose labels are ordered by a number; task {task.key!r} "
            f"has {', '.join(task.values)}"
        )
    return [value for _, value in numbered]


def bertscore_spans(
    *, dataset: Dataset, summary_ids: Iterable[int], threshold: float
) -> dict[int, list[tuple[int, int]]]:
    """summary id -> the character spans of the BERTScore tokens below `threshold` (newest configuration)."""
    configs = _newest_configs(dataset)
    if "bertscore" not in configs:
        raise AnalysisError(
            f"dataset {dataset.name!r} has no BERTScore explanations; "
            f'run: python manage.py score --dataset "{dataset.name}"'
        )
    rows = Explanation.objects.filter(
        summary_id__in=list(summary_ids), metric="bertscore", config_hash=configs["bertscore"]
    ).values_list("summary_id", "summary__text", "payload")
    spans = {}
    for summary_id, text, payload in rows.iterator(chunk_size=500):
        tokens = [
            (token["start"], token["end"], token["similarity"])
            for token in (payload or {}).get("tokens", [])
            if token.get("similarity") is not None
        ]
        if tokens:
            spans[summary_id] = unitizing.flagged_spans(text, tokens, threshold)
    return spans


def metric_rater_analysis(
    *,
    study_task: StudyTask,
    metrics: Sequence[str],
    thresholds: Sequence[Sequence[float] | None],
    coefficient: str = "krippendorff",
    level: str = "nominal",
    weights: str = "identity",
    dont_know_as_incorrect: bool = False,
    seed: int = 0,
    aggregation: str = MAJORITY,
    max_modelled_judgements: int | None = None,
    judgements: str = ACCEPTED,
) -> list[dict[str, object]]:
    """Per metric: the coefficient among the humans, with the metric as one more rater, and the metric's
    agreement with the human reference label and with each annotator. Label tasks: the metric's score per
    summary binned into the task's ordered labels by `thresholds` (one list for every metric, or one per
    metric; None: tuned, see _tuned_threshold); span tasks: BERTScore's flagged tokens below the threshold
    against the human spans on alpha_U's scale. Summaries without a score are counted (`n_missing`) and left
    out. The reference label (the row `majority`) is the majority vote, or the label `aggregation` names
    (stats.crowd_quality: Dawid-Skene, MACE, ...; label tasks only), over at most `max_modelled_judgements`,
    or each unit's final label ("final": adjudication; units without one, or unresolved, are left out)."""
    if aggregation not in REFERENCES:
        raise AnalysisError(f"aggregation must be one of {', '.join(REFERENCES)}")
    if len(thresholds) not in (1, len(metrics)):
        raise AnalysisError(f"give one list of thresholds for every metric, or one per metric ({len(metrics)})")
    task = get_task(study_task.task)
    dataset = study_task.study.dataset
    summary_of = dict(StudyItem.objects.filter(study_task=study_task).values_list("pk", "summary_id"))
    per_metric = thresholds if len(thresholds) == len(metrics) else [thresholds[0]] * len(metrics)
    if task.spans:
        if any(cuts is None for cuts in per_metric):
            raise AnalysisError("on span tasks give BERTScore's similarity threshold; it is not tuned")
        if aggregation != MAJORITY:
            raise AnalysisError("span tasks compare spans with each annotator's spans; aggregation applies to labels")
        # Span tasks give every metric its thresholds (checked above), so no entry of per_metric is None.
        return _span_metric_raters(study_task, dataset, summary_of, metrics, per_metric, judgements)  # type: ignore[arg-type]
    if coefficient == ALPHA_U:
        raise AnalysisError(f"alpha_u compares character spans; task {task.key!r} has labels, not spans")
    labels = ordered_labels(task)
    _, fetched = task_labels(
        study_task=study_task, dont_know_as_incorrect=dont_know_as_incorrect, judgements=judgements
    )
    labelled = fetched["unit"]
    units_per_item: dict[int, int] = {}
    for unit in labelled:
        units_per_item[_item_of(unit)] = units_per_item.get(_item_of(unit), 0) + 1
    if any(count > 1 for count in units_per_item.values()):
        raise AnalysisError(
            f"a metric scores whole summaries; task {task.key!r} judges several units per summary, so its "
            "labels cannot be compared with one score per summary"
        )
    known = metric_names(dataset=dataset)
    n_judgements = sum(len(by_annotator) for by_annotator in labelled.values())
    modelled = aggregation not in (MAJORITY, FINAL_LABELS)
    if modelled and max_modelled_judgements is not None and n_judgements > max_modelled_judgements:
        raise AnalysisError(
            f"aggregation {aggregation!r} over {n_judgements} judgements takes too long for a request (at most "
            f"{max_modelled_judgements}): run `manage.py agreement --aggregation {aggregation}`"
        )
    # An LLM judge (judges app) is compared with the metric like each annotator, but the human reference label
    # is the people's alone.
    models = model_rater_names(study_task=study_task)
    if aggregation == FINAL_LABELS:
        label_map = DONT_KNOW_AS_INCORRECT if dont_know_as_incorrect else None
        finals = final_unit_labels(study_task=study_task, label_map=label_map)
        if not finals:
            raise AnalysisError(
                f"task {task.key!r} has no final labels yet: compute them on the study's adjudication page"
            )
        reference = {unit: finals.get(unit) for unit in labelled}
    else:
        people = {unit: {a: label for a, label in by.items() if a not in models} for unit, by in labelled.items()}
        reference = human_reference(people, aggregation, seed)
    rows = []
    for name, cuts in zip(metrics, per_metric, strict=True):
        if name not in known:
            raise AnalysisError(
                f"no metric {name!r} in dataset {dataset.name!r} (metrics: {', '.join(known) or 'none'})"
            )
        scores = metric_values(dataset=dataset, name=name, summary_ids=set(summary_of.values()))
        by_unit = {unit: scores.get(summary_of[_item_of(unit)]) for unit in labelled}
        tuning = None
        if cuts is None:
            cuts, tuning = _tuned_threshold(labels, reference, by_unit, summary_of, seed)
        try:
            binned, _ = agr.bin_scores(by_unit, list(cuts), labels)
            humans, metric, categories, numbered_reference = _numbered(
                task, labelled, binned, coefficient, level, weights, reference
            )
            result = agr.metric_as_rater(
                humans,
                metric,
                coefficient,
                metric=name,
                level=level,
                weights=weights,
                categories=categories,
                # The majority of the labels as the coefficient reads them (numbers leave "Don't know" out).
                # With model raters the majority is the people's (human_reference above), not the stats' own.
                reference=None if aggregation == MAJORITY and not models else numbered_reference,
                reference_name=aggregation,
            )
        except ValueError as exc:
            raise AnalysisError(f"metric {name!r}: {exc}") from exc
        row = {
            "thresholds": list(cuts),
            "labels": labels,
            "tuning": tuning,
            "aggregation": aggregation,
            "judgements": judgements,
        }
        rows.append({**row, **result.as_dict(), "model_raters": list(models)})
    return rows


def human_reference(labelled: Labelled, aggregation: str, seed: int = 0) -> dict[Hashable, str | None]:
    """unit -> the human reference label: the majority vote (None on a tie) or a crowd model's label."""
    judgements = [
        CrowdJudgement(annotator, unit, label)
        for unit, by_annotator in labelled.items()
        for annotator, label in by_annotator.items()
        if label is not None
    ]
    return labels_aggregate(judgements=judgements, method=aggregation, seed=seed).labels


def _tuned_threshold(
    labels: list[str],
    reference: Mapping[Hashable, str | None],
    scores: dict[Hashable, float | None],
    summary_of: dict[int, int],
    seed: int,
) -> tuple[list[float], dict[str, object]]:
    """The metric threshold of the balanced-accuracy protocol (metaeval.balanced_accuracy), with the human
    reference label as the truth (the upper label faithful; ties have no label): tuned on the summaries whose
    meta `split` is `val` when some summary has a split, else by seeded cross-validation."""
    if len(labels) != 2:
        raise AnalysisError(
            f"a tuned threshold needs a task with two ordered labels; this one has {len(labels)}: give thresholds"
        )
    units = list(reference)
    truth = [None if reference[unit] is None else int(reference[unit] == labels[1]) for unit in units]
    split_values = _meta_values(Summary.objects.filter(pk__in=set(summary_of.values())), DEFAULT_SPLIT_KEY)
    splits = [_group_name(split_values.get(summary_of[_item_of(unit)])) for unit in units] if split_values else None
    try:
        result = metaeval.balanced_accuracy(
            truth, [scores[unit] for unit in units], splits=splits, bootstrap=0, seed=seed
        )
    except ValueError as exc:
        raise AnalysisError(f"tuning the threshold: {exc}") from exc
    if result.threshold is None:
        raise AnalysisError(f"no threshold could be tuned: {result.reason}")
    return [result.threshold], result.as_dict()


def _numbered(
    task: TaskDefinition,
    labelled: Labelled,
    binned: dict[Hashable, Any],
    coefficient: str,
    level: str,
    weights: str,
    reference: Mapping[Hashable, str | None],
) -> tuple[dict[Hashable, dict[str, Any]], dict[Hashable, Any], list[Any] | None, dict[Hashable, Any]]:
    """Labels (the metric's binned labels, the human reference labels) as the coefficient reads them: numbers
    for the numeric levels and weights, labels otherwise."""
    numeric = (coefficient == "krippendorff" and level != "nominal") or (
        coefficient in ("gwet", "brennan_prediger") and weights != "identity"
    )
    if not numeric:
        categories = [*task.values] if coefficient in ("gwet", "brennan_prediger") else None
        if categories is not None:
            seen = {label for labels in labelled.values() for label in labels.values()}
            categories += sorted(seen - set(categories))
        return labelled, binned, categories, dict(reference)
    as_number = {
        unit: {name: task.numeric(label) for name, label in labels.items()} for unit, labels in labelled.items()
    }
    numbers = sorted({choice.numeric for choice in task.choices if choice.numeric is not None})
    numbered_reference = {unit: None if label is None else task.numeric(label) for unit, label in reference.items()}
    return as_number, {unit: task.numeric(label) for unit, label in binned.items()}, numbers, numbered_reference


def _span_metric_raters(
    study_task: StudyTask,
    dataset: Dataset,
    summary_of: dict[int, int],
    metrics: Sequence[str],
    thresholds: Sequence[Sequence[float]],
    judgements: str,
) -> list[dict[str, object]]:
    summaries = {
        item: (text, {name: [(s, e) for s, e, _ in spans] for name, spans in marked.items()})
        for item, (text, marked) in typed_span_markings(study_task=study_task, judgements=judgements).items()
    }
    rows = []
    for name, cuts in zip(metrics, thresholds, strict=True):
        if name != "bertscore":
            raise AnalysisError(
                f"on span tasks the metric rater is BERTScore's flagged tokens (--metric-rater bertscore), not {name!r}"
            )
        if len(cuts) != 1 or not math.isfinite(cuts[0]):
            raise AnalysisError("BERTScore's flagged tokens need one finite similarity threshold, e.g. 0.9")
        flagged = bertscore_spans(dataset=dataset, summary_ids=set(summary_of.values()), threshold=cuts[0])
        by_item = {item: flagged[summary_of[item]] for item in summaries if summary_of.get(item) in flagged}
        try:
            # Mapping's key type is invariant: these int-keyed dicts are what the Hashable-keyed parameters read.
            result = unitizing.metric_span_agreement(summaries, by_item, metric=name)  # type: ignore[arg-type]
        except ValueError as exc:
            raise AnalysisError(f"metric {name!r}: {exc}") from exc
        rows.append({"thresholds": list(cuts), "labels": ["flagged"], "judgements": judgements, **result.as_dict()})
    return rows


# --- binary labels: ROC AUC and balanced accuracy --------------------------------------------------


def _binary(value: object, summary_id: int, key: str) -> int | None:
    if value is None:
        return None
    text = str(value).strip().lower() if not isinstance(value, bool) else str(value).lower()
    if isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1):
        text = str(int(value))
    if text in FAITHFUL_VALUES:
        return metaeval.FAITHFUL
    if text in UNFAITHFUL_VALUES:
        return metaeval.UNFAITHFUL
    raise AnalysisError(
        f"summary {summary_id}: meta {key!r} is {value!r}, not a binary label "
        f"(faithful: 1, true, faithful, consistent, correct; unfaithful: 0, false, unfaithful, inconsistent, "
        "incorrect)"
    )


def binary_labels_of(
    *,
    dataset: Dataset,
    summary_ids: Sequence[int],
    label_key: str | None,
    human: str | None,
    threshold: float | None,
    gold: str = MAJORITY_GOLD,
    user: User | None = None,
) -> tuple[list[int | None], HumanSide]:
    """Per summary of the dataset (`summary_ids`) 1 (faithful), 0 (unfaithful) or None: from the meta
    `label_key` (summary, else document), or from the human score `human` (imported, or a study's judgements
    by their majority or final labels, `gold`: analysis.human_side): faithful when it is at least
    `threshold`. With the human side the labels came from (empty for a meta key)."""
    if label_key:
        values = _meta_values(Summary.objects.filter(document__dataset=dataset), label_key)
        if not values:
            raise AnalysisError(
                f"no summary (or its document) of dataset {dataset.name!r} has the meta key {label_key!r}"
            )
        return [_binary(values.get(i), i, label_key) for i in summary_ids], HumanSide({})
    if human is None or threshold is None:
        raise AnalysisError("binary labels need a label key, or a human score and a threshold")
    side = human_side(dataset=dataset, name=human, gold=gold, user=user)
    try:
        return metaeval.binary_labels([side.values.get(i) for i in summary_ids], threshold), side
    except ValueError as exc:
        raise AnalysisError(str(exc)) from exc


def binary_evaluation(
    *,
    dataset: Dataset,
    protocol: str,
    metrics: Sequence[str] | None = None,
    label_key: str | None = None,
    human: str | None = None,
    human_threshold: float | None = None,
    split_key: str = DEFAULT_SPLIT_KEY,
    validation: str = "val",
    test: str = "test",
    folds: int = 5,
    seed: int = 0,
    bootstrap: int = 1000,
    by: str | None = None,
    gold: str = MAJORITY_GOLD,
    user: User | None = None,
) -> list[dict[str, object]]:
    """ROC AUC or balanced accuracy of each metric against a binary label per summary, overall and per group
    (`by`); each row names the gold of a study's judgements and the units without one (left out). Balanced
    accuracy tunes the threshold on the summaries whose meta `split_key` is `validation` and scores the `test`
    ones; when no summary has `split_key`, by seeded stratified cross-validation."""
    if protocol not in BINARY_PROTOCOLS:
        raise AnalysisError(f"binary labels support the protocols {', '.join(BINARY_PROTOCOLS)}")
    summaries = Summary.objects.filter(document__dataset=dataset)
    ids = list(summaries.order_by("pk").values_list("pk", flat=True))
    labels, side = binary_labels_of(
        dataset=dataset,
        summary_ids=ids,
        label_key=label_key,
        human=human,
        threshold=human_threshold,
        gold=gold,
        user=user,
    )
    split_values = _meta_values(summaries, split_key) if protocol == metaeval.BALANCED_ACCURACY else {}
    splits = [_group_name(split_values.get(i)) for i in ids] if split_values else None
    groups = summary_groups(summaries, by) if by else {}
    selections: list[tuple[str, list[int]]] = [(metaeval.OVERALL, list(range(len(ids))))]
    for name in sorted(set(groups.values())):
        selections.append((name, [index for index, i in enumerate(ids) if groups.get(i) == name]))
    known = metric_names(dataset=dataset)
    rows = []
    for metric in metrics or known:
        if metric not in known:
            raise AnalysisError(
                f"no metric {metric!r} in dataset {dataset.name!r} (metrics: {', '.join(known) or 'none'})"
            )
        values = metric_values(dataset=dataset, name=metric)
        scores = [values.get(i) for i in ids]
        for group, chosen in selections:
            group_labels = [labels[k] for k in chosen]
            group_scores = [scores[k] for k in chosen]
            try:
                if protocol == "roc_auc":
                    result: Any = metaeval.binary_roc_auc(group_labels, group_scores, group)
                else:
                    result = metaeval.balanced_accuracy(
                        group_labels,
                        group_scores,
                        splits=[splits[k] for k in chosen] if splits else None,
                        validation=validation,
                        test=test,
                        folds=folds,
                        seed=seed,
                        bootstrap=bootstrap,
                        group=group,
                    )
            except ValueError as exc:
                if group == metaeval.OVERALL:
                    raise AnalysisError(f"{exc}; split key {split_key!r}") from exc
                # One group lacking a split leaves that group undefined, not the whole request.
                result = metaeval.BalancedAccuracy(
                    "split", None, None, 0, 0, len(chosen), group=group, reason=f"{exc}; split key {split_key!r}"
                )
            row = {"metric": metric, "gold": side.gold, "n_left_out": side.n_left_out, **result.as_dict()}
            if protocol == metaeval.BALANCED_ACCURACY:
                row["split_key"] = split_key if splits else None
            rows.append(row)
    return rows
