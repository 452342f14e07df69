"""Computing and storing explanations. The `score` command, and later workers and the API, call these."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from annotations.models import Dataset, Document, Summary
from scoring.explainers import bertscore
from scoring.models import Explanation
from scoring.text import load_spacy, word_spans

ProgressFactory = Callable[[int, str], "Progress"]


class Progress:
    """What the compute loop needs from a progress display (tqdm satisfies it)."""

    def update(self, n: int = 1) -> None: ...

    def close(self) -> None: ...


def _silent(total: int, description: str) -> Progress:
    return Progress()


METRICS = ("bertscore",)


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:32]


def bertscore_config(**overrides: Any) -> bertscore.BertScoreConfig:
    """The BERTScore configuration from settings, with explicit overrides (e.g. strategy="first512")."""
    values: dict[str, Any] = {
        "model": settings.FAITHANNO_BERTSCORE_MODEL,
        "layer": settings.FAITHANNO_BERTSCORE_LAYER,
        "strategy": settings.FAITHANNO_BERTSCORE_STRATEGY,
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    return bertscore.BertScoreConfig(**values)


def bertscore_stored_config(config: bertscore.BertScoreConfig) -> dict[str, Any]:
    # Word segmentation and stopword flags come from spaCy, so its pipeline is part of the configuration.
    return {**config.as_dict(), "spacy": settings.FAITHANNO_SPACY_MODEL}


@dataclass
class ScoreReport:
    metric: str
    config_hash: str
    total: int
    already_done: int
    computed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"{self.metric}: {self.total} summaries, {self.already_done} already computed with this "
            f"configuration ({self.config_hash}), {self.computed} computed now, {self.failed} without a score",
            *self.failures[:20],
        ]


def _load_encoder(config: bertscore.BertScoreConfig) -> Any:
    from scoring.encoders import load_token_encoder  # imports torch: only when there is work

    return load_token_encoder(config.model, config.layer, settings.FAITHANNO_DEVICE, settings.FAITHANNO_BATCH_TOKENS)


def _pending_by_document(dataset: Dataset, metric: str, digest: str) -> tuple[int, dict[int, list[Summary]]]:
    summaries = Summary.objects.filter(document__dataset=dataset)
    done = set(
        Explanation.objects.filter(summary__document__dataset=dataset, metric=metric, config_hash=digest).values_list(
            "summary_id", flat=True
        )
    )
    pending: dict[int, list[Summary]] = defaultdict(list)
    total = 0
    for summary in summaries.order_by("document_id", "pk").only("id", "document_id", "text"):
        total += 1
        if summary.pk not in done:
            pending[summary.document_id].append(summary)
    return total, pending


def explanations_compute(
    *,
    dataset: Dataset,
    config: bertscore.BertScoreConfig | None = None,
    progress: ProgressFactory = _silent,
    documents_per_batch: int = 16,
) -> ScoreReport:
    """Compute BERTScore explanations for every summary of the dataset not yet done with this configuration.

    Work is committed one batch of documents at a time, so an interrupted run resumes where it
    stopped; a finished run re-run finds nothing to do and loads no model.
    """
    config = config or bertscore_config()
    stored = bertscore_stored_config(config)
    digest = config_hash(stored)
    total, pending = _pending_by_document(dataset, bertscore.METRIC, digest)
    report = ScoreReport(bertscore.METRIC, digest, total, total - sum(len(v) for v in pending.values()))
    if not pending:
        return report

    encoder = _load_encoder(config)
    nlp = load_spacy(settings.FAITHANNO_SPACY_MODEL)
    idf = None
    if config.idf:
        texts = Document.objects.filter(dataset=dataset).values_list("text", flat=True).iterator()
        idf = bertscore.idf_weights(
            (set(encoder.tokenizer(text, verbose=False)["input_ids"]) for text in texts),
            package_formula=config.special_tokens == "package",
        )
    explainer = bertscore.BertScoreExplainer(encoder, config, idf)
    model_ids = {"encoder": encoder.model_id, "layer": config.layer, "spacy": settings.FAITHANNO_SPACY_MODEL}

    bar = progress(report.total - report.already_done, "bertscore")
    document_ids = sorted(pending)
    try:
        for begin in range(0, len(document_ids), documents_per_batch):
            chunk = document_ids[begin : begin + documents_per_batch]
            documents = Document.objects.in_bulk(chunk)
            rows = _explain_chunk(explainer, nlp, [documents[i] for i in chunk], pending, stored, digest, model_ids)
            with transaction.atomic():
                Explanation.objects.bulk_create(rows, ignore_conflicts=True)
            for row in rows:
                if row.error:
                    report.failed += 1
                    report.failures.append(f"summary {row.summary_id}: {row.error}")
                else:
                    report.computed += 1
            bar.update(len(rows))
    finally:
        bar.close()
    return report


def _explain_chunk(
    explainer: bertscore.BertScoreExplainer,
    nlp: Any,
    documents: list[Document],
    pending: dict[int, list[Summary]],
    stored: dict[str, Any],
    digest: str,
    model_ids: dict[str, Any],
) -> list[Explanation]:
    sources = explainer.embed_sources(
        [bertscore.SourceText(d.text, [tuple(s) for s in d.sentences]) for d in documents]
    )
    summaries = [summary for document in documents for summary in pending[document.pk]]
    words = word_spans(nlp, [summary.text for summary in summaries])
    by_document = {document.pk: source for document, source in zip(documents, sources, strict=True)}
    results = explainer.explain(
        [
            (by_document[summary.document_id], bertscore.SummaryText(summary.text, summary_words))
            for summary, summary_words in zip(summaries, words, strict=True)
        ]
    )
    rows = []
    for summary, result in zip(summaries, results, strict=True):
        row = Explanation(
            summary=summary,
            metric=bertscore.METRIC,
            config=stored,
            config_hash=digest,
            model_ids=model_ids,
            code_version=bertscore.CODE_VERSION,
        )
        if isinstance(result, bertscore.BertScoreFailure):
            row.error = result.reason
        else:
            row.score = result.precision
            row.scores = result.scores
            row.payload = result.payload()
        rows.append(row)
    return rows
