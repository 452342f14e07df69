"""Browsing a dataset's summaries: filters, sorting and the choices a filter form offers.

`summaries_browse` turns query parameters (a web form's or the API's, the same names for both) into one
queryset. Scores, gaps and disagreement are SQL expressions, so the database filters, sorts and pages
100,000 summaries without loading them, and a page costs the same number of queries whatever its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db.models import Count, Exists, F, FloatField, Max, OuterRef, Q, QuerySet
from django.db.models.expressions import ExpressionWrapper, OrderBy, RawSQL

from analysis.selectors.analysis import (
    AnalysisError,
    human_names,
    metric_names,
    summaries_with_human_score,
    summaries_with_metric_score,
)
from common.validation import MAX_ID, InputError, bounded_int, finite_number
from corpus.importers.frank import ERROR_CATEGORIES as FRANK_ERROR_CATEGORIES
from corpus.models import Dataset, HumanScore, MetricScore, Summary
from protocols.tasks import TASKS
from scoring.models import Explanation
from studies.models import Assignment, Participation
from studies.selectors.access import studies_readable

# Sort keys a request may name ("-" in front sorts descending); scores sort with missing values last.
SORTS = ("document", "system", "metric", "human", "gap", "disagreement")
FLOAT_PARAMETERS = ("metric_min", "metric_max", "human_min", "human_max", "gap_min", "gap_max", "disagreement_min")
PARAMETERS = (
    "document",
    "system",
    "reference",
    "q",
    "metric",
    "human",
    "error_type",
    "sort",
    *FLOAT_PARAMETERS,
)
# The annotation each score-like sort key and range parameter reads.
SCORE_COLUMNS = {"metric": "metric_value", "human": "human_value", "gap": "gap", "disagreement": "disagreement"}

# Per summary, the share of its judged units on which the annotators who judged them did not all agree.
# A unit is one (study item, unit index) of a labelled task, or, for span tasks, the item itself with
# "marked any span or not" as the label; units judged by a single annotator cannot disagree and are left out.
# Only the studies the user may read count ({studies}: a subquery of their ids), and only accepted work
# ({accepted}: the raw-SQL form of studies.selectors.participation.counted, excluded annotators left out).
_UNITS_SQL = """
    SELECT i.summary_id, COUNT(DISTINCT j.label) AS labels
    FROM annotations_judgement j
    JOIN annotations_assignment a ON a.id = j.assignment_id
    JOIN annotations_studyitem i ON i.id = a.item_id
    JOIN annotations_studytask t ON t.id = i.study_task_id
    WHERE {summary} a.status = %s AND t.task NOT IN ({span_tasks}) AND t.study_id IN ({studies}) {accepted}
    GROUP BY i.summary_id, i.id, j.unit_index
    HAVING COUNT(*) > 1
    UNION ALL
    SELECT i.summary_id, COUNT(DISTINCT CASE WHEN EXISTS (
        SELECT 1 FROM annotations_judgement s WHERE s.assignment_id = a.id AND s.start IS NOT NULL
    ) THEN 1 ELSE 0 END) AS labels
    FROM annotations_assignment a
    JOIN annotations_studyitem i ON i.id = a.item_id
    JOIN annotations_studytask t ON t.id = i.study_task_id
    WHERE {summary} a.status = %s AND t.task IN ({span_tasks}) AND t.study_id IN ({studies}) {accepted}
    GROUP BY i.summary_id, i.id
    HAVING COUNT(*) > 1
"""
_SHARE_SQL = "AVG(CASE WHEN units.labels > 1 THEN 1.0 ELSE 0.0 END)"
SPAN_TASKS = tuple(key for key, task in TASKS.items() if task.spans)
FACETS_CACHE_SECONDS = 300


@dataclass(frozen=True)
class BrowseQuery:
    """The parsed, checked parameters of one browse request."""

    document: int | None = None
    systems: tuple[str, ...] = ()
    reference: bool | None = None
    text: str = ""
    metric: str = ""
    human: str = ""
    error_type: str = ""
    bounds: Mapping[str, float] = field(default_factory=dict)
    sort: str = "document"

    @property
    def has_gap(self) -> bool:
        return bool(self.metric and self.human)


def _units_sql(summary_condition: str, dataset: Dataset, user: User | None) -> tuple[str, tuple[Any, ...]]:
    span_tasks = ", ".join(["%s"] * len(SPAN_TASKS))
    studies, study_params = studies_readable(user=user).filter(dataset=dataset).values("pk").query.sql_with_params()
    status = Assignment.Status.SUBMITTED
    accepted = (
        f"AND NOT EXISTS (SELECT 1 FROM {Participation._meta.db_table} p "
        "WHERE p.study_id = t.study_id AND p.annotator_id = a.annotator_id AND p.excluded)"
    )
    sql = _UNITS_SQL.format(summary=summary_condition, span_tasks=span_tasks, studies=studies, accepted=accepted)
    return sql, (status, *SPAN_TASKS, *study_params, status, *SPAN_TASKS, *study_params)


def disagreement_expression(*, dataset: Dataset, user: User | None) -> RawSQL:
    """The disagreement of the summary in the row (for the rows a page shows), over the judgements of the
    dataset's studies the user may read."""
    units, params = _units_sql("i.summary_id = annotations_summary.id AND", dataset, user)
    return RawSQL(f"SELECT {_SHARE_SQL} FROM ({units}) units", params, output_field=FloatField())


def summaries_disagreeing_at_least(share: float, *, dataset: Dataset, user: User | None) -> RawSQL:
    """The ids of the summaries whose disagreement (over the studies the user may read) is at least `share`,
    grouped in one pass over the judgements (the per-row expression would run once for every judged
    summary of the dataset)."""
    units, params = _units_sql("", dataset, user)
    sql = f"SELECT units.summary_id FROM ({units}) units GROUP BY units.summary_id HAVING {_SHARE_SQL} >= %s"
    return RawSQL(sql, (*params, share))


def _float(params: Mapping[str, str], name: str) -> float | None:
    raw = (params.get(name) or "").strip()
    return finite_number(raw, field=name) if raw else None


def browse_query_parse(params: Mapping[str, str]) -> BrowseQuery:
    """Check the form of every parameter; the first malformed one raises InputError naming it.
    Whether a named score exists in the dataset is checked when the query runs (summaries_for_query)."""
    getlist = getattr(params, "getlist", None)
    systems = getlist("system") if getlist else [params["system"]] if params.get("system") else []
    document_raw = (params.get("document") or "").strip()
    document = bounded_int(document_raw, field="document", minimum=1, maximum=MAX_ID) if document_raw else None
    reference_raw = (params.get("reference") or "").strip().lower()
    if reference_raw not in ("", "true", "false", "1", "0", "yes", "no"):
        raise InputError("reference", "reference must be true or false")
    bounds = {name: value for name in FLOAT_PARAMETERS if (value := _float(params, name)) is not None}
    metric = (params.get("metric") or "").strip()
    human = (params.get("human") or "").strip()
    for low, high in (("metric_min", "metric_max"), ("human_min", "human_max"), ("gap_min", "gap_max")):
        if low in bounds and high in bounds and bounds[low] > bounds[high]:
            raise InputError(low, f"{low} ({bounds[low]:g}) is above {high} ({bounds[high]:g})")
    for prefix, chosen in (("metric", metric), ("human", human)):
        if not chosen and (f"{prefix}_min" in bounds or f"{prefix}_max" in bounds):
            raise InputError(f"{prefix}_min", f"a {prefix} score range needs `{prefix}` (which score)")
    if ("gap_min" in bounds or "gap_max" in bounds) and not (metric and human):
        raise InputError("gap_min", "the gap is metric minus human score: give both `metric` and `human`")
    sort = (params.get("sort") or "document").strip()
    if sort.removeprefix("-") not in SORTS:
        raise InputError("sort", f"sort {sort!r} is not one of {', '.join(SORTS)} (prefix - for descending)")
    needs = {"metric": metric, "human": human, "gap": metric and human}
    if not needs.get(sort.removeprefix("-"), True):
        raise InputError("sort", f"sorting by {sort.removeprefix('-')} needs the score(s) it compares")
    return BrowseQuery(
        document=document,
        systems=tuple(s for s in systems if s),
        reference=None if not reference_raw else reference_raw in ("true", "1", "yes"),
        text=(params.get("q") or "").strip(),
        metric=metric,
        human=human,
        error_type=(params.get("error_type") or "").strip(),
        bounds=bounds,
        sort=sort,
    )


def summaries_browse(*, dataset: Dataset, params: Mapping[str, str], user: User | None) -> QuerySet[Summary]:
    """The dataset's summaries matching `params`, sorted, each annotated with `metric_value`, `human_value`,
    `gap` (metric minus human) when those scores are chosen, and `disagreement` (0-1, null when no unit was
    judged by two annotators in a study the user may read)."""
    return summaries_for_query(dataset=dataset, query=browse_query_parse(params), user=user)


def summaries_for_query(*, dataset: Dataset, query: BrowseQuery, user: User | None) -> QuerySet[Summary]:
    summaries = Summary.objects.filter(document__dataset=dataset).select_related("document")
    if query.document is not None:
        summaries = summaries.filter(document_id=query.document)
    if query.systems:
        summaries = summaries.filter(system__in=query.systems)
    if query.reference is not None:
        summaries = summaries.filter(is_reference=query.reference)
    if query.text:
        summaries = summaries.filter(Q(text__icontains=query.text) | Q(document__external_id=query.text))
    if query.error_type:
        # BUMP stores the error type a pair was edited for; FRANK gives each error category as a human score
        # (the share of annotators who saw that error).
        category = HumanScore.objects.filter(summary=OuterRef("pk"), name=query.error_type, value__gt=0)
        summaries = summaries.filter(Q(meta__error_type=query.error_type) | Exists(category))
    for parameter, name, annotate in (
        ("metric", query.metric, summaries_with_metric_score),
        ("human", query.human, summaries_with_human_score),
    ):
        if name:
            try:
                summaries = annotate(summaries, dataset=dataset, name=name, alias=f"{parameter}_value")
            except AnalysisError as error:
                raise InputError(parameter, str(error)) from None
    if query.has_gap:
        summaries = summaries.annotate(gap=ExpressionWrapper(F("metric_value") - F("human_value"), FloatField()))
    if "disagreement_min" in query.bounds:
        share = query.bounds["disagreement_min"]
        summaries = summaries.filter(pk__in=summaries_disagreeing_at_least(share, dataset=dataset, user=user))
    summaries = summaries.annotate(disagreement=disagreement_expression(dataset=dataset, user=user))
    for name, value in query.bounds.items():
        if name == "disagreement_min":
            continue
        prefix, _, side = name.rpartition("_")
        lookup = "gte" if side == "min" else "lte"
        summaries = summaries.filter(**{f"{SCORE_COLUMNS[prefix]}__{lookup}": value})
    return summaries.order_by(*_ordering(query.sort))


def _ordering(sort: str) -> list[str | OrderBy]:
    descending = sort.startswith("-")
    key = sort.removeprefix("-")
    if key == "document":
        fields: list[str | OrderBy] = ["document__external_id", "external_id"]
        return [f"-{name}" for name in fields] if descending else fields
    if key == "system":
        return [F("system").desc() if descending else F("system").asc(), "document__external_id", "external_id"]
    column = SCORE_COLUMNS[key]
    expression = F(column).desc(nulls_last=True) if descending else F(column).asc(nulls_last=True)
    return [expression, "document__external_id", "external_id"]


@dataclass(frozen=True)
class BrowseFacets:
    """What the filter form of a dataset offers."""

    systems: list[tuple[str, int]]  # system, summaries
    metrics: list[str]
    humans: list[str]
    error_types: list[str]
    has_judgements: bool = False  # submitted work in a study the user may read


def browse_facets(*, dataset: Dataset, user: User | None) -> BrowseFacets:
    """The filter choices, cached: listing the score names scans every score of the dataset (a third of a
    second at 100,000 summaries), and they change only when data is added. The key holds the newest row id
    of each table they come from; the timeout bounds how long a deletion can go unnoticed. Whether there
    are judgements depends on who asks (the studies they may read), so that one is not cached."""
    key = f"browse-facets:{dataset.pk}:" + ":".join(str(newest) for newest in _newest_ids())
    # The cached facets, or those just computed and cached.
    facets = cast(BrowseFacets, cache.get_or_set(key, lambda: _browse_facets(dataset), FACETS_CACHE_SECONDS))
    judged = Assignment.objects.filter(
        item__study_task__study__in=studies_readable(user=user).filter(dataset=dataset),
        status=Assignment.Status.SUBMITTED,
    )
    return replace(facets, has_judgements=judged.exists())


def _newest_ids() -> list[int | None]:
    return [
        model.objects.aggregate(newest=Max("pk"))["newest"] for model in (Summary, HumanScore, MetricScore, Explanation)
    ]


def _browse_facets(dataset: Dataset) -> BrowseFacets:
    summaries = Summary.objects.filter(document__dataset=dataset)
    systems = list(summaries.values("system").annotate(n=Count("id")).order_by("system").values_list("system", "n"))
    humans = human_names(dataset=dataset)
    edited_for = summaries.filter(meta__has_key="error_type").values_list("meta__error_type", flat=True).distinct()
    categories = {name for name in humans if name in FRANK_ERROR_CATEGORIES}
    error_types = sorted({str(value) for value in edited_for if value} | categories)
    return BrowseFacets(systems=systems, metrics=metric_names(dataset=dataset), humans=humans, error_types=error_types)
