"""What the pages, the API and the commands need to know about the metrics, without loading any of them.

Importing this module imports no model code (torch, transformers, spaCy): the web processes and every
command but `score` read metric names here; scoring.registry holds how each metric is configured and
loaded.
"""

from __future__ import annotations

# --metric choices, in the order `--metric all` runs them (cheap ones first).
METRICS = ("bertscore", "similarity", "entities", "abstractiveness", "entailment", "qags")

# What `qags` stores when no question generation or answering model is configured.
QAGS_CLOZE = "qags_cloze"
QAGS_CLOZE_DISPLAY_NAME = "QAGS (cloze fallback)"

DISPLAY_NAMES = {
    "bertscore": "BERTScore",
    "similarity": "Sentence similarity",
    "entities": "Named-entity overlap",
    "abstractiveness": "Abstractiveness",
    "entailment": "Top-k entailment",
    "qags": "QAGS",
    QAGS_CLOZE: QAGS_CLOZE_DISPLAY_NAME,
}

# BERTScore's options: how a long document is cut, and what happens to the special tokens.
STRATEGIES: tuple[str, ...] = ("sentences", "first512", "windows")
SPECIAL_TOKEN_MODES: tuple[str, ...] = ("strip", "package")


def display_name(metric: str) -> str:
    return DISPLAY_NAMES.get(metric, metric)
