"""One MetricSpec per metric (scoring/metrics.py): the lists derived from it agree with the code that computes,
loads, shows and asks for each metric."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.conf import settings
from django.template.loader import get_template

from corpus.models import Dataset
from inspector.selectors.inspect import PANEL_DATA
from protocols.tasks import STUDY_TASKS, get_task
from scoring.metrics import METRIC_ORDER, METRIC_SPECS, METRICS, SPECS, display_name
from scoring.models import Explanation

EXPLAINERS = Path(settings.BASE_DIR) / "scoring" / "explainers"


def test_it_derives_the_lists_from_the_records() -> None:
    assert METRICS == ("bertscore", "similarity", "entities", "abstractiveness", "entailment", "qags")
    assert METRIC_ORDER == (
        "bertscore", "qags", "qags_cloze", "entailment", "similarity", "entities", "abstractiveness",
    )  # fmt: skip
    assert display_name("qags_cloze") == "QAGS (cloze fallback)" and display_name("unknown") == "unknown"
    assert len(SPECS) == len(METRIC_SPECS)
    for spec in METRIC_SPECS:
        assert spec.score_field in spec.score_fields, spec.name


def test_it_knows_how_to_run_show_and_ask_for_every_metric() -> None:
    from scoring.registry import PLANS

    assert set(PLANS) == set(METRICS)
    stored = set()
    for module in sorted(path.stem for path in EXPLAINERS.glob("*.py")):
        metric = getattr(importlib.import_module(f"scoring.explainers.{module}"), "METRIC", None)
        if metric is not None:
            stored.add(metric)
    assert stored == set(SPECS), "every explainer's METRIC has a MetricSpec, and every MetricSpec an explainer"
    for spec in METRIC_SPECS:
        assert spec.panel in PANEL_DATA, spec.name
        if spec.panel != "bertscore":  # drawn over the summary's words by inspect/summary.html
            get_template(spec.panel_template)
    shown = {metric for key in STUDY_TASKS for metric in get_task(key).explanation_metrics}
    assert shown <= set(SPECS)
    assert {spec.name: spec.tasks for spec in METRIC_SPECS if spec.tasks} == {
        "bertscore": ("bertscore",),
        "qags": ("qgqa",),
        "qags_cloze": ("qgqa",),
        "entailment": ("entailment",),
    }


@pytest.mark.django_db
def test_it_stores_the_score_fields_its_record_names(explained_dataset: Dataset) -> None:
    rows = list(Explanation.objects.filter(summary__document__dataset=explained_dataset))
    assert {row.metric for row in rows} == set(SPECS) - {"qags"}, "the offline profile stores QAGS as its fallback"
    for row in rows:
        spec = SPECS[row.metric]
        if not row.error:
            assert set(row.scores) == set(spec.score_fields), row.metric
            assert row.score == row.scores[spec.score_field], row.metric
