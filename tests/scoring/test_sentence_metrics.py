"""Sentence similarity, named-entity overlap and top-k entailment explainers (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.explainers.base import DocumentInput, SummaryInput
from scoring.explainers.entailment import EntailmentConfig, TopKEntailmentExplainer
from scoring.explainers.entities import NO_ENTITIES, EntityOverlapExplainer
from scoring.explainers.similarity import SentenceSimilarityExplainer
from scoring.nlp_models import NliModel
from tests.scoring.inputs import explainer_inputs

DOCUMENT = (
    "Emma Morano, the world's oldest person, has died in Italy at the age of 117. "
    "She was born on 29 November 1899 in Piedmont. "
    "Her doctor said she died peacefully at her home in Verbania. "
    "She had lived alone for decades and ate two raw eggs a day. "
    "Aberdeen beat Celtic on Saturday."
)
FAITHFUL = "She was born on 29 November 1899 in Piedmont. Emma Morano ate two raw eggs a day."
HALLUCINATED = "Maria Rossi, the oldest woman in France, died in Paris."


def inputs(nlp: Any, summaries: list[str]) -> tuple[list[DocumentInput], list[list[SummaryInput]]]:
    return explainer_inputs(nlp, DOCUMENT, summaries)


def test_it_aligns_each_summary_sentence_to_its_most_similar_source_sentence(nlp: Any, sentence_embedder: Any) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL, HALLUCINATED, "  "])
    faithful, hallucinated, empty = SentenceSimilarityExplainer(sentence_embedder).explain_batch(documents, summaries)[
        0
    ]
    first, second = faithful.payload["sentences"]
    assert DOCUMENT[first["best"]["start"] : first["best"]["end"]] == "She was born on 29 November 1899 in Piedmont."
    assert first["best"]["similarity"] == pytest.approx(1.0, abs=1e-5)  # copied verbatim
    assert second["best"]["index"] == 3
    assert FAITHFUL[second["start"] : second["end"]] == second["text"]
    # Precision = mean of the best similarities; recall over all five source sentences; F1 of the two.
    assert faithful.scores["precision"] == pytest.approx(
        (first["best"]["similarity"] + second["best"]["similarity"]) / 2, abs=1e-5
    )
    source = faithful.payload["source_sentences"]
    assert len(source) == 5
    assert faithful.scores["recall"] == pytest.approx(sum(s["similarity"] for s in source) / 5, abs=1e-5)
    p, r = faithful.scores["precision"], faithful.scores["recall"]
    assert faithful.scores["f1"] == pytest.approx(2 * p * r / (p + r))
    assert faithful.score == p > hallucinated.score
    assert empty.score is None and empty.error == "the summary is empty"


def test_it_aligns_summary_entities_to_source_entities_of_the_same_label(nlp: Any) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL, HALLUCINATED, "the cat sat on the mat", "😀😀 🎉"])
    faithful, hallucinated, no_entities, emoji = EntityOverlapExplainer(nlp).explain_batch(documents, summaries)[0]
    by_text = {entity["text"]: entity for entity in faithful.payload["entities"]}
    emma = by_text["Emma Morano"]
    assert emma["label"] == "PERSON" and emma["similarity"] == 1.0 and emma["exact"]
    assert DOCUMENT[emma["match"]["start"] : emma["match"]["end"]] == "Emma Morano"
    assert emma["sentence"] == 1 and FAITHFUL[emma["start"] : emma["end"]] == "Emma Morano"
    assert faithful.score == pytest.approx(1.0)
    assert hallucinated.score is not None and hallucinated.score < 0.5
    for entity in hallucinated.payload["entities"]:
        if entity["match"] is not None:
            assert entity["match"]["text"] in DOCUMENT
    for result in (no_entities, emoji):
        assert result.score is None and result.error == NO_ENTITIES  # undefined, not 0
        assert result.payload["source_entity_count"] > 0


def test_it_stores_the_top_k_sentences_without_an_nli_model(nlp: Any, sentence_embedder: Any) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL, ""])
    explainer = TopKEntailmentExplainer(
        sentence_embedder, None, EntailmentConfig("packaged:minilm", "", k=3), no_nli_reason="no NLI model here"
    )
    result, empty = explainer.explain_batch(documents, summaries)[0]
    assert result.score is None and result.error == ""  # the top-k evidence is complete; only E is missing
    assert result.scores == {"s2s": None, "d2s": None, "top2s": None}
    nli = result.payload["nli"]
    assert nli["computed"] is False and nli["reason"] == "no NLI model here" and nli["entailment_index"] is None
    first = result.payload["sentences"][0]
    assert len(first["top"]) == 3
    assert first["top"][0]["index"] == 1  # the copied sentence is the most similar
    similarities = [entry["similarity"] for entry in first["top"]]
    assert similarities == sorted(similarities, reverse=True)
    for entry in first["top"]:
        assert (entry["start"], entry["end"]) == tuple(documents[0].sentences[entry["index"]])
    assert first["entailment"] == {"s2s": None, "d2s": None, "top2s": None} and first["s2s_best"] is None
    assert empty.error == "the summary is empty"


def test_it_computes_s2s_d2s_and_top2s_with_an_nli_model(
    nlp: Any, sentence_embedder: Any, tiny_models: dict[str, str]
) -> None:
    nli = NliModel(tiny_models["nli_random"])
    documents, summaries = inputs(nlp, [FAITHFUL])
    explainer = TopKEntailmentExplainer(sentence_embedder, nli, EntailmentConfig(tiny_models["nli_random"], "x", k=2))
    [[result]] = explainer.explain_batch(documents, summaries)
    document = documents[0]
    source = [DOCUMENT[s:e] for s, e in document.sentences]
    per_variant: dict[str, list[float]] = {"s2s": [], "d2s": [], "top2s": []}
    for sentence in result.payload["sentences"]:
        hypothesis = sentence["text"]
        s2s = [e.probability for e in nli.entailment([(premise, hypothesis) for premise in source])]
        [d2s] = nli.entailment([(DOCUMENT, hypothesis)])
        top = sorted(entry["index"] for entry in sentence["top"])  # eq. 3.7: in document order
        [top2s] = nli.entailment([(" ".join(source[i] for i in top), hypothesis)])
        assert sentence["entailment"]["s2s"] == pytest.approx(max(s2s), abs=1e-6)
        assert sentence["s2s_best"] == s2s.index(max(s2s))
        assert sentence["entailment"]["d2s"] == pytest.approx(d2s.probability, abs=1e-6)
        assert sentence["entailment"]["top2s"] == pytest.approx(top2s.probability, abs=1e-6)
        for variant in per_variant:
            per_variant[variant].append(sentence["entailment"][variant])
    for variant, values in per_variant.items():
        assert result.scores[variant] == pytest.approx(sum(values) / len(values), abs=1e-6)
    assert result.score == result.scores["top2s"]
    assert result.payload["k"] == 2 and result.payload["nli"]["computed"] is True
    assert result.payload["nli"]["entailment_index"] == 2


def test_it_flags_a_document_cut_to_fit_the_nli_model(
    nlp: Any, sentence_embedder: Any, tiny_models: dict[str, str]
) -> None:
    long_document = " ".join([DOCUMENT] * 40)  # about 3,000 wordpieces, the tiny NLI model takes 512
    documents, summaries = explainer_inputs(nlp, long_document, [FAITHFUL])
    explainer = TopKEntailmentExplainer(
        sentence_embedder, NliModel(tiny_models["nli"]), EntailmentConfig("packaged:minilm", "x")
    )
    [[result]] = explainer.explain_batch(documents, summaries)
    assert result.payload["nli"]["d2s_truncated"] is True
    assert result.score == pytest.approx(0.98, abs=0.01)
