"""The metrics `score` runs: their names, their configuration from settings, and how to load their models.

`metric_plan` decides the stored metric and its full configuration without loading anything, so the
pipeline can skip finished work for free; `MetricPlan.load` loads the models (raising ModelLoadError
with the role, the id/path and the fix) and returns a ready explainer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from corpus.models import Dataset, Document
from scoring.explainers import (
    abstractiveness,
    bertscore,
    entailment,
    entities,
    qags,
    qags_cloze,
    similarity,
)
from scoring.explainers.base import Explainer
from scoring.metrics import METRICS, display_name

# Options a caller may set; everything else comes from settings. Resolved options are plain JSON, so
# a worker on another machine computes exactly the configuration that was asked for.
OPTION_SETTINGS = {
    "bertscore_model": "FAITHANNO_BERTSCORE_MODEL",
    "layer": "FAITHANNO_BERTSCORE_LAYER",
    "strategy": "FAITHANNO_BERTSCORE_STRATEGY",
    "sentence_model": "FAITHANNO_SENTENCE_MODEL",
    "qg_model": "FAITHANNO_QG_MODEL",
    "qg_format": "FAITHANNO_QG_FORMAT",
    "qa_model": "FAITHANNO_QA_MODEL",
    "nli_model": "FAITHANNO_NLI_MODEL",
    "spacy_model": "FAITHANNO_SPACY_MODEL",
    "k": "FAITHANNO_ENTAILMENT_K",
}
OPTION_DEFAULTS = {"special_tokens": "strip", "idf": False}


def resolved_options(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every option, from settings unless overridden (None means "not given")."""
    options: dict[str, Any] = {key: getattr(settings, name) for key, name in OPTION_SETTINGS.items()}
    options.update(OPTION_DEFAULTS)
    unknown = set(overrides or {}) - set(options)
    if unknown:
        raise ValueError(f"unknown scoring options: {', '.join(sorted(unknown))}")
    options.update({key: value for key, value in (overrides or {}).items() if value is not None})
    return options


@dataclass
class Loaded:
    explainer: Explainer
    model_ids: dict[str, Any]


@dataclass
class MetricPlan:
    requested: str  # what was asked for (--metric)
    metric: str  # what is stored (qags without QG/QA models becomes qags_cloze)
    config: dict[str, Any]  # everything that changes the output; hashed
    load: Callable[[Dataset], Loaded]
    notice: str = ""  # said once per run, e.g. which fallback applies and how to get the real metric
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return display_name(self.metric)


def _device() -> str:
    return settings.FAITHANNO_DEVICE


def _nlp(options: Mapping[str, Any]) -> Any:
    from corpus.nlp import load_spacy

    return load_spacy(options["spacy_model"])


def _embedder(options: Mapping[str, Any]) -> Any:
    from scoring.encoders import load_sentence_embedder

    return load_sentence_embedder(options["sentence_model"], _device(), settings.FAITHANNO_BATCH_TOKENS)


def bertscore_config(options: Mapping[str, Any]) -> bertscore.BertScoreConfig:
    return bertscore.BertScoreConfig(
        model=options["bertscore_model"],
        layer=int(options["layer"]),
        strategy=options["strategy"],
        special_tokens=options["special_tokens"],
        idf=bool(options["idf"]),
    )


def _bertscore_plan(options: dict[str, Any]) -> MetricPlan:
    config = bertscore_config(options)

    def load(dataset: Dataset) -> Loaded:
        from scoring.encoders import load_token_encoder

        encoder = load_token_encoder(config.model, config.layer, _device(), settings.FAITHANNO_BATCH_TOKENS)
        nlp = _nlp(options)
        idf = None
        if config.idf:
            texts = Document.objects.filter(dataset=dataset).values_list("text", flat=True).iterator()
            idf = bertscore.idf_weights(
                (set(encoder.tokenizer(text, verbose=False)["input_ids"]) for text in texts),
                package_formula=config.special_tokens == "package",
            )
        model_ids = {**encoder.model_ids("encoder"), "layer": config.layer, "spacy": options["spacy_model"]}
        return Loaded(bertscore.BertScoreExplainer(encoder, config, idf, nlp), model_ids)

    # Word segmentation and stopword flags come from spaCy, so its pipeline is part of the configuration.
    return MetricPlan("bertscore", bertscore.METRIC, {**config.as_dict(), "spacy": options["spacy_model"]}, load)


def _similarity_plan(options: dict[str, Any]) -> MetricPlan:
    config = similarity.SimilarityConfig(options["sentence_model"])

    def load(dataset: Dataset) -> Loaded:
        embedder = _embedder(options)
        return Loaded(similarity.SentenceSimilarityExplainer(embedder), embedder.model_ids("sentence"))

    return MetricPlan("similarity", similarity.METRIC, config.as_dict(), load)


def _entities_plan(options: dict[str, Any]) -> MetricPlan:
    def load(dataset: Dataset) -> Loaded:
        return Loaded(entities.EntityOverlapExplainer(_nlp(options)), {"spacy": options["spacy_model"]})

    config = {**entities.EntitiesConfig().as_dict(), "spacy": options["spacy_model"]}
    return MetricPlan("entities", entities.METRIC, config, load)


def _abstractiveness_plan(options: dict[str, Any]) -> MetricPlan:
    def load(dataset: Dataset) -> Loaded:
        return Loaded(abstractiveness.AbstractivenessExplainer(_nlp(options)), {"spacy": options["spacy_model"]})

    config = {**abstractiveness.AbstractivenessConfig().as_dict(), "spacy": options["spacy_model"]}
    return MetricPlan("abstractiveness", abstractiveness.METRIC, config, load)


NO_NLI = (
    "no NLI model is configured, so entailment probabilities are not computed (the top-k sentences are); "
    "set FAITHANNO_NLI_MODEL to a Hugging Face id or local directory of an MNLI model, or use "
    "FAITHANNO_MODEL_PROFILE=thesis"
)


def _entailment_plan(options: dict[str, Any]) -> MetricPlan:
    config = entailment.EntailmentConfig(options["sentence_model"], options["nli_model"], int(options["k"]))

    def load(dataset: Dataset) -> Loaded:
        embedder = _embedder(options)
        nli = None
        if config.nli_model:
            from scoring.nlp_models import load_nli_model

            nli = load_nli_model(config.nli_model, _device(), settings.FAITHANNO_BATCH_TOKENS)
        explainer = entailment.TopKEntailmentExplainer(embedder, nli, config, no_nli_reason=NO_NLI)
        return Loaded(explainer, {**embedder.model_ids("sentence"), "nli": nli.model_id if nli else ""})

    notice = "" if config.nli_model else NO_NLI
    return MetricPlan("entailment", entailment.METRIC, config.as_dict(), load, notice=notice)


def _qags_plan(options: dict[str, Any]) -> MetricPlan:
    missing = [role for role in ("qg_model", "qa_model") if not options[role]]
    if missing:
        return _cloze_plan(options, missing)
    config = qags.QagsConfig(options["qg_model"], options["qa_model"], qg_format=options["qg_format"])

    def load(dataset: Dataset) -> Loaded:
        from scoring.nlp_models import load_question_answerer, load_question_generator

        qg = load_question_generator(config.qg_model, _device())
        qa = load_question_answerer(config.qa_model, _device(), settings.FAITHANNO_BATCH_TOKENS)
        model_ids = {"qg": qg.model_id, "qa": qa.model_id, "spacy": options["spacy_model"]}
        return Loaded(qags.QagsExplainer(qg, qa, _nlp(options), config), model_ids)

    return MetricPlan("qags", qags.METRIC, {**config.as_dict(), "spacy": options["spacy_model"]}, load)


def _cloze_plan(options: dict[str, Any], missing: list[str]) -> MetricPlan:
    config = qags_cloze.ClozeConfig(options["sentence_model"])
    names = {
        "qg_model": "question generation (FAITHANNO_QG_MODEL)",
        "qa_model": "question answering (FAITHANNO_QA_MODEL)",
    }
    notice = (
        f"no {' and no '.join(names[role] for role in missing)} model is configured, so QAGS cannot run; "
        f"computing {qags_cloze.DISPLAY_NAME} instead, stored as '{qags_cloze.METRIC}'. For QAGS set both "
        "models or use FAITHANNO_MODEL_PROFILE=thesis"
    )

    def load(dataset: Dataset) -> Loaded:
        embedder = _embedder(options)
        explainer = qags_cloze.ClozeQagsExplainer(embedder, _nlp(options), config)
        return Loaded(explainer, {**embedder.model_ids("sentence"), "spacy": options["spacy_model"]})

    stored = {**config.as_dict(), "spacy": options["spacy_model"]}
    return MetricPlan("qags", qags_cloze.METRIC, stored, load, notice=notice)


PLANS: dict[str, Callable[[dict[str, Any]], MetricPlan]] = {
    "bertscore": _bertscore_plan,
    "similarity": _similarity_plan,
    "entities": _entities_plan,
    "abstractiveness": _abstractiveness_plan,
    "entailment": _entailment_plan,
    "qags": _qags_plan,
}


def metric_plan(metric: str, overrides: Mapping[str, Any] | None = None) -> MetricPlan:
    """The stored metric and configuration `metric` computes with these options (nothing is loaded)."""
    if metric not in PLANS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    options = resolved_options(overrides)
    plan = PLANS[metric](options)
    plan.options = options
    return plan
