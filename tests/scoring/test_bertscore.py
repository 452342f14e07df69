"""BERTScore explainer: plain Python, no database."""

from __future__ import annotations

from typing import Any

import bert_score
import pytest
import torch

from corpus.nlp import sentence_spans, word_spans
from scoring.encoders import resolve_model_path
from scoring.explainers.bertscore import (
    BertScoreConfig,
    BertScoreExplainer,
    BertScoreFailure,
    BertScoreResult,
    SourceText,
    SummaryText,
    idf_weights,
)

DOCUMENT = (
    "Emma Morano, the world's oldest person, has died in Italy at the age of 117. "
    "She was born on 29 November 1899 in Piedmont. Her doctor said she died peacefully at her home "
    "in Verbania. She had lived alone for decades and ate two raw eggs a day."
)
SUMMARIES = [
    "The world's oldest person, Emma Morano, has died in Italy aged 117.",
    "The world's oldest person died on March 5, 1898 in Piedmont.",
    "  Emma Morano ate two raw eggs a day.  ",
]
OTHER_DOCUMENT = "Aberdeen beat Celtic 2-1 at Pittodrie on Saturday. Adam Rooney scored the winner late on."


def explain(encoder: Any, nlp: Any, config: BertScoreConfig, document: str, summaries: list[str]) -> list[Any]:
    explainer = BertScoreExplainer(encoder, config)
    [source] = explainer.embed_sources([SourceText(document, sentence_spans(nlp, [document])[0])])
    words = word_spans(nlp, summaries)
    return explainer.explain([(source, SummaryText(text, w)) for text, w in zip(summaries, words, strict=True)])


def test_it_equals_the_bert_score_package_in_package_compatible_mode(encoder: Any, nlp: Any) -> None:
    documents = [DOCUMENT, DOCUMENT, DOCUMENT, OTHER_DOCUMENT]
    summaries = [*SUMMARIES, "Celtic lost to Aberdeen at home."]
    config = BertScoreConfig.package_compatible("packaged:minilm", 4)
    explainer = BertScoreExplainer(encoder, config)
    sources = explainer.embed_sources([SourceText(d) for d in documents])
    ours = explainer.explain([(s, SummaryText(t)) for s, t in zip(sources, summaries, strict=True)])
    precision, recall, f1 = bert_score.score(
        summaries, documents, model_type=resolve_model_path("packaged:minilm"), num_layers=4
    )
    expected = torch.stack([precision, recall, f1], dim=1)
    got = torch.tensor([[r.precision, r.recall, r.f1] for r in ours])
    assert torch.allclose(got, expected, atol=1e-5), (got, expected)


def test_it_equals_the_package_with_idf_when_given_the_package_idf(encoder: Any) -> None:
    documents = [DOCUMENT, OTHER_DOCUMENT]
    summaries = [SUMMARIES[1], "Celtic lost to Aberdeen at home."]
    # bert_score computes idf over the references it is given.
    idf = idf_weights((set(encoder.tokenizer(d)["input_ids"]) for d in documents), package_formula=True)
    config = BertScoreConfig.package_compatible("packaged:minilm", 4, idf=True)
    explainer = BertScoreExplainer(encoder, config, idf)
    sources = explainer.embed_sources([SourceText(d) for d in documents])
    ours = explainer.explain([(s, SummaryText(t)) for s, t in zip(sources, summaries, strict=True)])
    precision, recall, f1 = bert_score.score(
        summaries, documents, model_type=resolve_model_path("packaged:minilm"), num_layers=4, idf=True
    )
    expected = torch.stack([precision, recall, f1], dim=1)
    got = torch.tensor([[r.precision, r.recall, r.f1] for r in ours])
    assert torch.allclose(got, expected, atol=1e-5), (got, expected)


def test_it_aligns_every_summary_token_to_a_source_token_with_offsets(encoder: Any, nlp: Any) -> None:
    [result, *_] = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), DOCUMENT, SUMMARIES)
    assert isinstance(result, BertScoreResult)
    summary = SUMMARIES[0]
    # Token texts are cut from the summary by offsets, so they keep the case the uncased model ignores.
    assert [t.text for t in result.tokens][:3] == ["The", "world", "'"]
    for token in result.tokens:
        assert summary[token.start : token.end].lower() == token.text.lower()
        assert token.aligned_start is not None  # strip mode never aligns to [CLS]/[SEP]
        assert DOCUMENT[token.aligned_start : token.aligned_end] == token.aligned_text
        assert -1.0 <= token.similarity <= 1.0 + 1e-6
    # A word copied from the source aligns to that same word.
    italy = next(t for t in result.tokens if t.text == "Italy")
    assert italy.aligned_text == "Italy"
    assert italy.similarity > 0.8


def test_it_flags_stopwords_and_punctuation_on_words(encoder: Any, nlp: Any) -> None:
    [result, *_] = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), DOCUMENT, SUMMARIES)
    words = {w.text: w for w in result.words}
    assert words["The"].stopword and not words["The"].punct
    assert words[","].punct
    assert not words["oldest"].stopword and words["oldest"].tokens
    # Every token belongs to the word that contains it.
    for index, word in enumerate(result.words):
        for token_index in word.tokens:
            assert result.tokens[token_index].word == index
            assert word.start <= result.tokens[token_index].start < word.end


def test_it_reports_precision_recall_and_f1(encoder: Any, nlp: Any) -> None:
    results = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), DOCUMENT, SUMMARIES)
    for result in results:
        assert 0 < result.precision <= 1 and 0 < result.recall <= 1
        assert result.f1 == pytest.approx(2 * result.precision * result.recall / (result.precision + result.recall))
        assert result.precision == pytest.approx(sum(t.similarity for t in result.tokens) / len(result.tokens))
    # Summaries are short, the document is long: precision exceeds recall.
    assert all(r.precision > r.recall for r in results)
    # The copied sentence scores higher precision than the hallucinated date.
    assert results[2].precision > results[1].precision


def test_it_keeps_offsets_of_a_summary_with_surrounding_whitespace(encoder: Any, nlp: Any) -> None:
    result = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), DOCUMENT, SUMMARIES)[2]
    first = result.tokens[0]
    assert SUMMARIES[2][first.start : first.end] == "Emma"


def test_it_explains_an_empty_summary_as_a_failure(encoder: Any, nlp: Any) -> None:
    results = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), DOCUMENT, ["", "   ", SUMMARIES[0]])
    assert results[0] == BertScoreFailure("the summary is empty")
    assert results[1] == BertScoreFailure("the summary is empty")
    assert isinstance(results[2], BertScoreResult)


def test_it_explains_an_empty_source_as_a_failure(encoder: Any, nlp: Any) -> None:
    [result] = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), "", [SUMMARIES[0]])
    assert result == BertScoreFailure("the source document is empty")


def test_it_embeds_long_documents_by_strategy(encoder: Any, nlp: Any) -> None:
    long_document = " ".join([DOCUMENT] * 12)  # about 800 wordpieces: over the 512 limit
    summary = SUMMARIES[1]
    first = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4, strategy="first512"), long_document, [summary])[
        0
    ]
    sentences = explain(encoder, nlp, BertScoreConfig("packaged:minilm", 4), long_document, [summary])[0]
    windows = explain(
        encoder, nlp, BertScoreConfig("packaged:minilm", 4, strategy="windows"), long_document, [summary]
    )[0]
    full_length = len(encoder.tokenizer(long_document, add_special_tokens=False)["input_ids"])
    assert first.source_truncated and first.source_token_count == encoder.max_length - 2
    assert not sentences.source_truncated and sentences.source_token_count == full_length
    assert not windows.source_truncated and windows.source_token_count == full_length
    assert all(t.aligned_end <= len(long_document) for t in windows.tokens)


def test_it_keeps_each_token_once_in_sliding_windows(encoder: Any) -> None:
    text = " ".join(f"word{i}" for i in range(900))
    windows, keep = encoder.tokenize_windows(text, overlap=128)
    ids = encoder.tokenizer(text, add_special_tokens=False)["input_ids"]
    kept = []
    for window, (low, high) in zip(windows, keep, strict=True):
        content = [i for i, flag in zip(window.input_ids, window.special, strict=True) if not flag]
        assert len(window.input_ids) <= encoder.max_length
        kept.extend(content[low:high])
    assert kept == ids
    assert len(windows) > 2


def test_it_computes_idf_like_the_thesis_and_like_the_package() -> None:
    documents = [{1, 2}, {1, 3}, {1}, {4}]
    thesis = idf_weights(documents, package_formula=False)
    package = idf_weights(documents, package_formula=True)
    assert thesis.get(1) == pytest.approx(0.2876820724)  # log 4 - log 3
    assert thesis.get(4) == pytest.approx(1.3862943611)  # log 4 - log 1
    assert thesis.get(99) == pytest.approx(1.3862943611)  # unseen: as if seen once
    assert package.get(1) == pytest.approx(0.2231435513)  # log(5 / 4)
    assert package.get(99) == pytest.approx(1.6094379124)  # log(5)


def test_it_refuses_unknown_strategies() -> None:
    with pytest.raises(ValueError, match="strategy must be one of"):
        BertScoreConfig("packaged:minilm", 4, strategy="everything")  # type: ignore[arg-type]
