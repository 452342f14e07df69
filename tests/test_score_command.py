from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset, Summary
from protocols.tasks import bertscore_units
from scoring import services
from scoring.models import Explanation

pytestmark = pytest.mark.django_db


def score(dataset: Dataset, *args: str) -> str:
    out = io.StringIO()
    call_command("score", "--dataset", dataset.name, "--metric", "bertscore", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_stores_an_explanation_per_summary_with_model_and_config(small_dataset: Dataset) -> None:
    output = score(small_dataset)
    assert "7 summaries, 0 already computed" in output and "6 computed now, 1 without a score" in output
    explanation = Explanation.objects.get(summary__system="ModelA", summary__document__external_id="oldest")
    assert explanation.metric == "bertscore"
    assert explanation.config["strategy"] == "sentences" and explanation.config["layer"] == 4
    assert explanation.config["special_tokens"] == "strip"
    assert explanation.model_ids["encoder"].startswith("packaged:minilm")
    assert explanation.code_version
    assert explanation.score == pytest.approx(explanation.scores["precision"])
    assert set(explanation.scores) == {"precision", "recall", "f1"}
    summary = explanation.summary
    document = summary.document.text
    for token in explanation.payload["tokens"]:
        assert summary.text[token["start"] : token["end"]] == token["text"]
        start, end = token["aligned"]
        assert document[start:end] == token["aligned_text"]
        assert isinstance(token["similarity"], float)
    words = [unit.text for unit in bertscore_units(explanation.payload)]
    assert "oldest" in words and "The" not in words and "." not in words


def test_it_stores_an_empty_summary_as_an_explained_error(small_dataset: Dataset) -> None:
    score(small_dataset)
    explanation = Explanation.objects.get(summary__system="Empty")
    assert explanation.score is None
    assert explanation.error == "the summary is empty"


def test_it_does_no_work_when_run_again(small_dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    score(small_dataset)
    created = list(Explanation.objects.order_by("pk").values_list("pk", "created_at"))

    def no_model(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a finished run must not load the model again")

    monkeypatch.setattr("scoring.encoders.load_token_encoder", no_model)
    monkeypatch.setattr("corpus.nlp.load_spacy", no_model)
    output = score(small_dataset)
    assert "7 already computed" in output and "0 computed now" in output
    assert list(Explanation.objects.order_by("pk").values_list("pk", "created_at")) == created


def test_it_computes_again_when_the_configuration_changes(small_dataset: Dataset) -> None:
    score(small_dataset)
    score(small_dataset, "--strategy", "first512", "--special-tokens", "package")
    assert Explanation.objects.count() == 14
    assert Explanation.objects.values("config_hash").distinct().count() == 2


def test_it_resumes_after_an_interruption(small_dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    real = services._explain_chunk
    calls = {"n": 0}

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "_explain_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        services.explanations_compute(dataset=small_dataset, documents_per_batch=1)
    done_before = Explanation.objects.count()
    assert 0 < done_before < 7  # the first document's summaries were committed

    monkeypatch.setattr(services, "_explain_chunk", real)
    report = services.explanations_compute(dataset=small_dataset, documents_per_batch=1)
    assert report.already_done == done_before
    assert Explanation.objects.count() == 7
    assert Explanation.objects.values("summary").distinct().count() == Summary.objects.count()


def test_it_names_a_model_path_that_does_not_exist(small_dataset: Dataset) -> None:
    with pytest.raises(CommandError) as raised:
        score(small_dataset, "--model", "/nonexistent/model-dir")
    message = str(raised.value)
    assert "BERTScore encoder" in message and "/nonexistent/model-dir" in message and "To fix" in message


def test_it_reports_an_unknown_dataset(db: None) -> None:
    with pytest.raises(CommandError, match="No dataset named 'nope'"):
        call_command("score", "--dataset", "nope", "--metric", "bertscore")
