"""What the pages, the API and the commands know about the metrics, without loading any of them: one
`MetricSpec` per stored metric, from which every other list (the `--metric` choices, the display names, the
inspector's panel order) is derived.

Importing this module imports no model code (torch, transformers, spaCy): the web processes and every
command but `score` read metric names here; scoring.registry holds how each metric is configured and
loaded (`PLANS`, one per metric that runs), scoring/explainers/ how it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.tasks import STUDY_TASKS, get_task


@dataclass(frozen=True)
class MetricSpec:
    """One metric as stored in `Explanation.metric`."""

    name: str
    display_name: str
    score_fields: tuple[str, ...]  # the keys of Explanation.scores (docs/EXPLANATIONS.md)
    score_field: str  # the one of them that is Explanation.score
    # The inspector's panel: inspector.selectors.inspect.PANEL_DATA[panel] cuts its rows from the payload and
    # templates/annotations/inspect/_panel_<panel>.html lays them out (BERTScore's is drawn over the
    # summary's words by inspect/summary.html instead).
    panel: str
    # Position in `score --metric all` (cheap ones first); None: never asked for, stored as another's fallback.
    run_order: int | None

    @property
    def panel_template(self) -> str:
        return f"annotations/inspect/_panel_{self.panel}.html"

    @property
    def tasks(self) -> tuple[str, ...]:
        """The study tasks whose items show this metric's explanation (protocols.tasks says which)."""
        return tuple(key for key in STUDY_TASKS if self.name in get_task(key).explanation_metrics)


# What `qags` stores when no question generation or answering model is configured.
QAGS_CLOZE = "qags_cloze"

# In the inspector's order: panels line up the same metric when two summaries are compared.
METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("bertscore", "BERTScore", ("precision", "recall", "f1"), "precision", "bertscore", 0),
    MetricSpec("qags", "QAGS", ("f1",), "f1", "qags", 5),
    MetricSpec(QAGS_CLOZE, "QAGS (cloze fallback)", ("f1",), "f1", "qags", None),
    MetricSpec("entailment", "Top-k entailment", ("s2s", "d2s", "top2s"), "top2s", "entailment", 4),
    MetricSpec("similarity", "Sentence similarity", ("precision", "recall", "f1"), "precision", "similarity", 1),
    MetricSpec("entities", "Named-entity overlap", ("precision", "exact"), "precision", "entities", 2),
    MetricSpec(
        "abstractiveness", "Abstractiveness", ("novel_1", "novel_2", "novel_3"), "novel_3", "abstractiveness", 3
    ),
)
SPECS: dict[str, MetricSpec] = {spec.name: spec for spec in METRIC_SPECS}

# --metric choices, in the order `--metric all` runs them.
METRICS: tuple[str, ...] = tuple(
    spec.name for spec in sorted(METRIC_SPECS, key=lambda spec: spec.run_order or 0) if spec.run_order is not None
)
# The inspector's panel order.
METRIC_ORDER: tuple[str, ...] = tuple(spec.name for spec in METRIC_SPECS)
DISPLAY_NAMES: dict[str, str] = {spec.name: spec.display_name for spec in METRIC_SPECS}
QAGS_CLOZE_DISPLAY_NAME = DISPLAY_NAMES[QAGS_CLOZE]

# BERTScore's options: how a long document is cut, and what happens to the special tokens.
STRATEGIES: tuple[str, ...] = ("sentences", "first512", "windows")
SPECIAL_TOKEN_MODES: tuple[str, ...] = ("strip", "package")


def metric_spec(metric: str) -> MetricSpec | None:
    return SPECS.get(metric)


def display_name(metric: str) -> str:
    return DISPLAY_NAMES.get(metric, metric)
