"""Researcher pages for the analyses: datasets (correlations, meta-evaluation, highlighter, agreement of
imported labels), studies (agreement, disagreements, human-enhanced metrics), one item's labels, and
the per-summary and judgement downloads. Plots are inline SVG drawn from stats.plots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from analysis.selectors import analysis as selectors
from analysis.selectors import analysis_groups
from analysis.selectors import conditions as condition_selectors
from analysis.selectors.analysis import FINAL_LABELS
from analysis.views.browse import dataset_or_404
from analysis.views.downloads import judgements_download, summaries_download
from common.exports import EXPORT_FORMATS
from common.roles import signed_in_user
from common.validation import InputError, finite_number
from common.views import researcher_required
from corpus.models import Dataset
from ingest.views.imports import datasets_page
from protocols.tasks import get_task
from stats import plots
from stats.agreement import LEVELS as AGREEMENT_LEVELS
from stats.conditions import RANDOMIZED_UNITS, ConditionContrast, ConditionSummary
from stats.correlation import LEVELS, METHODS
from stats.crowd_quality import MAJORITY, MAX_REQUEST_JUDGEMENTS
from stats.crowd_quality import METHODS as CROWD_METHODS
from stats.enhanced import AGGREGATIONS
from stats.metaeval import BALANCED_ACCURACY
from stats.spans import THRESHOLDS
from studies.models import Study, StudyItem, StudyTask
from studies.selectors.access import studies_for_user
from studies.selectors.participation import excluded_annotator_ids, judgement_set_from
from studies.selectors.studies import study_task_progress
from studies.selectors.tasks import dataset_imported_study, dataset_imported_tasks, study_item_readable, study_tasks

# The page draws its intervals from fewer resamples than the command's default, to answer quickly.
PAGE_BOOTSTRAP = 200
# The page offers the references that answer quickly (the crowd models: the API and the agreement command).
PAGE_REFERENCES = (MAJORITY, FINAL_LABELS)


def _visible_study(request: HttpRequest, study_id: int) -> Study:
    return get_object_or_404(studies_for_user(user=signed_in_user(request)), pk=study_id)


def _choice(request: HttpRequest, key: str, allowed: list[str] | tuple[str, ...], default: str | None) -> str | None:
    value = request.GET.get(key)
    return value if value in allowed else default


def _agreement_form(request: HttpRequest, metrics: list[str]) -> dict[str, Any]:
    """The agreement section's choices: a coefficient (per group with `by`), metrics as raters."""
    return {
        "coefficient": _choice(request, "coefficient", analysis_groups.AGREEMENT_COEFFICIENTS, None),
        "level": _choice(request, "level", AGREEMENT_LEVELS, "nominal"),
        "weights": _choice(request, "weights", analysis_groups.WEIGHTS, "identity"),
        "by": request.GET.get("by", "").strip(),
        "typed": request.GET.get("typed") == "1",
        "interval": request.GET.get("interval") == "1",
        "metric_rater": _choice(request, "metric_rater", metrics, None),
        # The human reference of a metric as rater: the majority vote or the study's final labels.
        "reference": _choice(request, "reference", PAGE_REFERENCES, MAJORITY),
        "references": PAGE_REFERENCES,
        "thresholds": request.GET.get("thresholds", "").strip(),
        "coefficients": analysis_groups.AGREEMENT_COEFFICIENTS,
        "levels": AGREEMENT_LEVELS,
        "weight_choices": analysis_groups.WEIGHTS,
        "metrics": metrics,
    }


@dataclass
class AgreementPanel:
    """One task's card: its overview (whose fields it answers for) and the analysis the form asked for, or
    why it could not be computed."""

    overview: selectors.AgreementOverview
    analysis: dict[str, Any] | None = None
    analysis_error: str = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.overview, name)


def _agreement_rows(
    overviews: list[selectors.AgreementOverview], form: dict[str, Any], dont_know: bool, judgements: str
) -> tuple[list[AgreementPanel], bool]:
    """Each task's overview with the analysis the form asks for (or the reason it cannot be computed), and
    whether any request failed (the page then answers 400)."""
    asked = form["coefficient"] or form["by"] or form["metric_rater"] or form["interval"]
    rows, failed = [], False
    for overview in overviews:
        row = AgreementPanel(overview)
        task = overview.study_task
        coefficient = form["coefficient"] or "fleiss"
        if asked and not (coefficient == analysis_groups.ALPHA_U and not overview.definition.spans):
            try:
                analysis = analysis_groups.agreement_analysis(
                    study_task=task,
                    coefficient=coefficient,
                    level=form["level"],
                    weights=form["weights"],
                    by=form["by"] or None,
                    typed=form["typed"],
                    dont_know_as_incorrect=dont_know,
                    bootstrap=PAGE_BOOTSTRAP if form["interval"] else 0,
                    judgements=judgements,
                )
                if form["metric_rater"]:
                    thresholds = analysis_groups.threshold_list(form["thresholds"], field="thresholds")
                    analysis["metric_raters"] = analysis_groups.metric_rater_analysis(
                        study_task=task,
                        metrics=[form["metric_rater"]],
                        thresholds=[thresholds],
                        coefficient=coefficient,
                        level=form["level"],
                        weights=form["weights"],
                        dont_know_as_incorrect=dont_know,
                        judgements=judgements,
                        aggregation=form["reference"],
                    )
                row.analysis = analysis
            except (selectors.AnalysisError, InputError) as exc:
                row.analysis_error, failed = str(exc), True
        rows.append(row)
    return rows, failed


def _binary_form(request: HttpRequest, humans: list[str]) -> dict[str, Any]:
    return {
        "label_key": request.GET.get("label_key", "").strip(),
        "human": _choice(request, "binary_human", humans, None),
        "gold": _choice(request, "binary_gold", selectors.GOLDS, selectors.MAJORITY_GOLD),
        "threshold": request.GET.get("human_threshold", "").strip(),
        "split_key": request.GET.get("split_key", "").strip() or analysis_groups.DEFAULT_SPLIT_KEY,
        "by": request.GET.get("binary_by", "").strip(),
    }


def _binary_rows(dataset: Dataset, form: dict[str, Any], user: User) -> list[dict[str, Any]]:
    """Balanced accuracy and ROC AUC of every metric on the binary labels the form names."""
    label_key, human, threshold = form["label_key"] or None, None, None
    if label_key is None:
        if not form["human"] or not form["threshold"]:
            raise selectors.AnalysisError("binary labels need a label key, or a human score and a threshold")
        human, threshold = form["human"], finite_number(form["threshold"], field="human threshold")
    common: dict[str, Any] = {
        "dataset": dataset,
        "label_key": label_key,
        "human": human,
        "human_threshold": threshold,
        "by": form["by"] or None,
        "gold": form["gold"],
        "user": user,
    }
    accuracy = analysis_groups.binary_evaluation(
        protocol=BALANCED_ACCURACY, split_key=form["split_key"], bootstrap=PAGE_BOOTSTRAP, **common
    )
    auc = analysis_groups.binary_evaluation(protocol="roc_auc", **common)
    return [{**row, "auc": other} for row, other in zip(accuracy, auc, strict=True)]


@researcher_required
@require_GET
def datasets(request: HttpRequest) -> HttpResponse:
    # The page also holds the upload form and the researcher's import jobs (annotations/views/imports.py).
    return datasets_page(request)


# Why "partial, controlling for the system" is refused at the other levels (said, never silently unticked).
PARTIAL_UNAVAILABLE = {
    "system": "Partial correlation controlling for the system is not available at the system level: each system is "
    "one point there, so once the system is controlled for nothing is left to correlate. It was left out.",
    "document": "Partial correlation controlling for the system is not available at the document level, which "
    "already correlates within each document. It was left out.",
}


@researcher_required
@require_GET
def dataset_analysis(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = dataset_or_404(dataset_id)
    human_choices = selectors.human_score_choices(dataset=dataset)
    user = signed_in_user(request)
    # The imported human scores, then the studies' judgements (human_side: by majority or final labels).
    humans = human_choices.names + selectors.study_human_names(dataset=dataset, user=user)
    metrics = selectors.metric_names(dataset=dataset)
    human = _choice(request, "human", humans, human_choices.primary)
    gold = _choice(request, "gold", selectors.GOLDS, selectors.MAJORITY_GOLD) or selectors.MAJORITY_GOLD
    metric = _choice(request, "metric", metrics, metrics[0] if metrics else None)
    method = _choice(request, "method", METHODS, "pearson") or "pearson"
    level = _choice(request, "level", LEVELS, "summary") or "summary"
    partial_asked = request.GET.get("partial") == "system"
    partial = partial_asked and level == "summary"
    context: dict[str, Any] = {
        "partial_unavailable": PARTIAL_UNAVAILABLE.get(level, "") if partial_asked else "",
        "dataset": dataset,
        "humans": humans,
        "metrics": metrics,
        "human": human,
        "gold": gold,
        "golds": selectors.GOLDS,
        "study_human": bool(human and human.startswith(selectors.STUDY_HUMAN_PREFIX)),
        "metric": metric,
        "method": method,
        "methods": METHODS,
        "level": level,
        "levels": LEVELS,
        "partial": partial,
        "bootstrap": PAGE_BOOTSTRAP,
        "export_formats": sorted(EXPORT_FORMATS),
        "errors": [],
    }
    if human and metrics:
        context["correlations"] = selectors.dataset_correlations(
            dataset=dataset,
            human=human,
            metrics=metrics,
            methods=[method],
            level=level,
            partial_by="system" if partial else None,
            bootstrap=PAGE_BOOTSTRAP,
            gold=gold,
            user=user,
        )
        context["correlations"].sort(key=lambda row: -abs(row["r"]) if row["r"] is not None else 1.0)
    if human and metric:
        pairs = selectors.score_pairs(dataset=dataset, metric=metric, human=human, gold=gold, user=user)
        context["scatter"] = plots.scatter(pairs.metric, pairs.human, pairs.titles, x_label=metric, y_label=human)
        context["histogram"] = plots.histogram(
            [m - h for m, h in zip(pairs.metric, pairs.human, strict=True)], x_label=f"{metric} - {human}"
        )
        context["over"] = sum(m > h for m, h in zip(pairs.metric, pairs.human, strict=True))
        context["n_pairs"] = len(pairs.metric)
    if selectors.dataset_pairs(dataset=dataset):
        context["metaeval"] = _metaeval_rows(dataset)
    try:
        highlighter = selectors.dataset_highlighter(dataset=dataset, user=signed_in_user(request))
    except selectors.AnalysisError as exc:
        context["highlighter_missing"] = str(exc)
    else:
        context["highlighter"] = highlighter
        context["threshold_chart"] = plots.lines(
            list(THRESHOLDS),
            [(name, [row[name] for row in highlighter]) for name in ("precision", "recall", "f1", "accuracy")],
            x_label="threshold",
            y_label="score",
        )
    status = 200
    binary = _binary_form(request, humans)
    context["binary_form"] = binary
    if binary["label_key"] or binary["human"]:
        try:
            context["binary"] = _binary_rows(dataset, binary, user)
        except (selectors.AnalysisError, InputError) as exc:
            context["binary_error"], status = str(exc), 400
    dont_know = request.GET.get("dont_know") == "incorrect"
    imported = dataset_imported_tasks(dataset=dataset)
    form = _agreement_form(request, metrics)
    # Imported judgements have no exclusions (nobody runs them here): all of them.
    context["agreements"], failed = _agreement_rows(
        [
            selectors.agreement_overview(study_task=study_task, dont_know_as_incorrect=dont_know)
            for study_task in imported
        ],
        form,
        dont_know,
        judgement_set_from(None),
    )
    context["agreement_form"] = form
    context["dont_know_as_incorrect"] = dont_know
    context["has_imported"] = bool(context["agreements"])
    return render(request, "annotations/analysis/dataset.html", context, status=400 if failed else status)


def _metaeval_rows(dataset: Dataset) -> list[dict[str, Any]]:
    consistency = selectors.dataset_meta_evaluation(dataset=dataset, protocol="consistency")
    auc = {row["metric"]: row for row in selectors.dataset_meta_evaluation(dataset=dataset, protocol="roc_auc")}
    rows = [{"metric": row["metric"], "consistency": row, "roc_auc": auc[row["metric"]]} for row in consistency]
    return sorted(rows, key=lambda row: -(row["roc_auc"]["value"] or 0.0))


@researcher_required
@require_GET
def study_analysis(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _visible_study(request, study_id)
    dont_know = request.GET.get("dont_know") == "incorrect"
    judgements = judgement_set_from(request.GET.get("judgements"))
    human_choices = selectors.human_score_choices(dataset=study.dataset)
    humans = human_choices.names
    human = _choice(request, "human", humans, human_choices.primary)
    context: dict[str, Any] = {
        "study": study,
        "judgements": judgements,
        "n_excluded": excluded_annotator_ids(study=study).count(),
        "humans": humans,
        "human": human,
        "dont_know_as_incorrect": dont_know,
        "export_formats": sorted(EXPORT_FORMATS),
        "bootstrap": PAGE_BOOTSTRAP,
    }
    form = _agreement_form(request, selectors.metric_names(dataset=study.dataset))
    tasks = list(study_tasks(study=study))
    context["agreements"], failed = _agreement_rows(
        [
            selectors.agreement_overview(study_task=task, dont_know_as_incorrect=dont_know, judgements=judgements)
            for task in tasks
        ],
        form,
        dont_know,
        judgements,
    )
    context["agreement_form"] = form
    context["conditions"] = _condition_tables(study, tasks, judgements, dont_know)
    # A crowd model's labels can replace the vote (issue 14), chosen here; the majority is a variant already.
    context["crowd_models"] = [method for method in CROWD_METHODS if method != MAJORITY]
    crowd_model = context["crowd_model"] = _choice(request, "crowd_model", context["crowd_models"], None)
    if human:
        try:
            table = selectors.study_enhanced_table(
                study=study,
                human=human,
                bootstrap=PAGE_BOOTSTRAP,
                judgements=judgements,
                crowd_model=crowd_model,
                max_modelled_judgements=MAX_REQUEST_JUDGEMENTS,
            )
        except selectors.AnalysisError as exc:
            context["enhanced_error"] = str(exc)
            table = selectors.study_enhanced_table(
                study=study, human=human, bootstrap=PAGE_BOOTSTRAP, judgements=judgements
            )
        context["enhanced"] = table
        if table:
            scores = selectors.study_enhanced_scores(study=study, judgements=judgements)
            gold = selectors.human_values(dataset=study.dataset, name=human)
            charts = []
            for task, aggregation in sorted(scores):
                if aggregation != AGGREGATIONS[1]:
                    continue
                ids = sorted(i for i, v in scores[(task, aggregation)].items() if v is not None and i in gold)
                charts.append(
                    plots.scatter(
                        [scores[(task, aggregation)][i] for i in ids],
                        [gold[i] for i in ids],
                        [f"summary {i}" for i in ids],
                        x_label=f"{task} enhanced ({aggregation} vote)",
                        y_label=human,
                    )
                )
            context["enhanced_charts"] = charts
    return render(request, "annotations/analysis/study.html", context, status=400 if failed else 200)


@dataclass(frozen=True)
class ConditionRow:
    """One condition in a task's table, and its contrast with the reference (None for the reference)."""

    summary: ConditionSummary
    contrast: ConditionContrast | None


def _condition_tables(study: Study, tasks: list[StudyTask], judgements: str, dont_know: bool) -> dict[str, Any] | None:
    """The conditions section: each task's comparison of the study's conditions (None: fewer than two)."""
    conditions = condition_selectors.study_conditions(study=study)
    if len(conditions) < 2:
        return None
    compared = condition_selectors.conditions_compare_cached(
        study=study,
        study_tasks=tasks,
        conditions=conditions,
        progress=study_task_progress(study=study, study_tasks=tasks),
        excluded=excluded_annotator_ids(study=study),
        judgements=judgements,
        dont_know_as_incorrect=dont_know,
    )
    names = {task.pk: get_task(task.task).name for task in tasks}
    panels = []
    for result in compared:
        rows = []
        if result.comparison is not None:
            contrasts = [None, *result.comparison.contrasts]
            rows = [ConditionRow(*pair) for pair in zip(result.comparison.conditions, contrasts, strict=True)]
        panels.append({"result": result, "name": names[result.study_task_id], "rows": rows})
    return {
        "conditions": conditions,
        "reference": conditions[0],
        "design": study.get_condition_design_display(),
        "randomized": RANDOMIZED_UNITS[study.condition_design],
        "resamples": condition_selectors.CONDITION_RESAMPLES,
        "seed": condition_selectors.CONDITION_SEED,
        "tasks": panels,
    }


@researcher_required
@require_GET
def analysis_item(request: HttpRequest, item_id: int) -> HttpResponse:
    """One item: the summary, its document and every annotator's label of every unit."""
    try:
        item = study_item_readable(item_id=item_id, user=signed_in_user(request))
    except StudyItem.DoesNotExist:
        raise Http404("No such item.") from None
    study = item.study_task.study
    task = get_task(item.study_task.task)
    judgements = judgement_set_from(request.GET.get("judgements"))
    labelled = selectors.item_labels(item=item, judgements=judgements)
    annotators = sorted({name for labels in labelled.values() for name in labels})
    rows = [
        {"unit": unit, "labels": [labels.get(name, "") for name in annotators]} for unit, labels in labelled.items()
    ]
    return render(
        request,
        "annotations/analysis/item.html",
        {
            "item": item,
            "study": study,
            "task": task,
            "annotators": annotators,
            "rows": rows,
            "judgements": judgements,
            "n_excluded": excluded_annotator_ids(study=study).count(),
        },
    )


@researcher_required
@require_GET
def dataset_summaries_export(request: HttpRequest, dataset_id: int, format_name: str) -> StreamingHttpResponse:
    dataset = dataset_or_404(dataset_id)
    return summaries_download(dataset=dataset, study=None, user=signed_in_user(request), format_name=format_name)


@researcher_required
@require_GET
def study_summaries_export(request: HttpRequest, study_id: int, format_name: str) -> StreamingHttpResponse:
    study = _visible_study(request, study_id)
    return summaries_download(
        dataset=study.dataset,
        study=study,
        user=signed_in_user(request),
        format_name=format_name,
        judgements=judgement_set_from(request.GET.get("judgements")),
    )


@researcher_required
@require_GET
def dataset_judgements_export(request: HttpRequest, dataset_id: int, format_name: str) -> StreamingHttpResponse:
    """The dataset's imported judgements (crowd labels), in the same layout as a study's."""
    try:
        study = dataset_imported_study(dataset_id=dataset_id)
    except Study.DoesNotExist:
        raise Http404("The dataset has no imported judgements.") from None
    return judgements_download(study=study, format_name=format_name, filename=f"dataset-{dataset_id}-judgements")
