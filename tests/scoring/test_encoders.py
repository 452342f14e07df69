"""Model loading: the sentence embedder, devices, and the errors for models that cannot be loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from common.errors import ModelLoadError
from scoring.encoders import SentenceEmbedder, TokenEncoder, resolve_device, resolve_model_path
from scoring.nlp_models import ExtractiveQA, NliModel, QuestionGenerator

SENTENCES = [
    "Emma Morano, the world's oldest person, has died in Italy at the age of 117.",
    "Aberdeen beat Celtic 2-1.",
    "  ",
    "😀😀😀",
    "Der älteste Mensch der Welt ist in Italien gestorben.",
]


def test_it_embeds_sentences_exactly_like_sentence_transformers(sentence_embedder: SentenceEmbedder) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(resolve_model_path("packaged:minilm"), device="cpu")
    long_text = " ".join(["word"] * 400)  # beyond MiniLM's 256-token limit: both must cut it the same way
    texts = [*SENTENCES, long_text]
    expected = torch.tensor(reference.encode(texts, normalize_embeddings=True))
    got = sentence_embedder.embed(texts)
    assert got.shape == expected.shape == (len(texts), 384)
    assert torch.allclose(got, expected, atol=1e-5)
    assert sentence_embedder.embed([]).shape == (0, 384)


def test_it_uses_the_gpu_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize(
    ("load", "role"),
    [
        (lambda path: TokenEncoder(path, 4), "BERTScore encoder"),
        (lambda path: SentenceEmbedder(path), "sentence embedder"),
        (lambda path: QuestionGenerator(path), "question generation (QG)"),
        (lambda path: ExtractiveQA(path), "question answering (QA)"),
        (lambda path: NliModel(path), "NLI (entailment)"),
    ],
)
def test_it_names_role_path_and_fix_for_a_model_path_that_does_not_exist(load: Any, role: str) -> None:
    with pytest.raises(ModelLoadError) as raised:
        load("/nonexistent/model-dir")
    message = str(raised.value)
    assert f"Cannot load the {role} model '/nonexistent/model-dir'" in message
    assert "To fix: point the setting at an existing local model directory" in message


def test_it_refuses_a_layer_the_encoder_does_not_have() -> None:
    with pytest.raises(ModelLoadError, match="choose a layer between 0 and 6"):
        TokenEncoder("packaged:minilm", 9)


def test_it_refuses_a_classifier_without_an_entailment_label(tiny_models: dict[str, str]) -> None:
    with pytest.raises(ModelLoadError) as raised:
        NliModel(tiny_models["not_nli"])
    assert "no 'entailment' label" in str(raised.value) and "LABEL_0" in str(raised.value)


def test_it_refuses_a_qg_model_that_is_not_sequence_to_sequence(tiny_models: dict[str, str]) -> None:
    with pytest.raises(ModelLoadError, match="question generation"):
        QuestionGenerator(tiny_models["qa"])


def test_it_reads_the_entailment_index_from_the_model_config(tiny_models: dict[str, str]) -> None:
    # Both heads put 99% on output 2; only the label names differ.
    standard = NliModel(tiny_models["nli"])
    reordered = NliModel(tiny_models["nli_entailment_first"])
    assert (standard.entailment_index, reordered.entailment_index) == (2, 0)
    [high] = standard.entailment([("Emma Morano died.", "She died.")])
    [low] = reordered.entailment([("Emma Morano died.", "She died.")])
    assert high.probability > 0.98 and low.probability < 0.01


def test_it_answers_questions_with_offsets_or_unanswerable(tiny_models: dict[str, str]) -> None:
    qa = ExtractiveQA(tiny_models["qa"])
    context = "  Emma Morano died in Italy at the age of 117."
    long_context = " ".join(f"word{i}" for i in range(3000))  # many windows
    answers = qa.answer([("Who died?", context), ("Who died?", long_context)])
    for answer, text in zip(answers, [context, long_context], strict=True):
        assert not answer.unanswerable
        assert text[answer.start : answer.end] == answer.text and answer.text.strip() == answer.text
    # The zeroed head scores every span 0 = the null score: a threshold below 0 makes "no answer" win.
    [unanswerable] = qa.answer([("Who died?", context)], null_threshold=-1.0)
    assert unanswerable.unanswerable and unanswerable.start is None and unanswerable.text == ""


def test_it_generates_questions_about_an_answer(tiny_models: dict[str, str]) -> None:
    qg = QuestionGenerator(tiny_models["qg"])
    context = "Emma Morano died in Italy."
    [[question], [other]] = qg.generate([(context, 0, 11), (context, 20, 25)], input_format="prefix")
    assert question.text == other.text == "what happened to the person?"
    assert question.score <= 0.0
    [two] = qg.generate([(context, 0, 11)], num_beams=3, questions_per_answer=2)
    assert len(two) == 2
    with pytest.raises(ValueError, match="QG input format"):
        qg.generate([(context, 0, 11)], input_format="other")  # type: ignore[arg-type]


def test_it_loads_a_model_directory_given_as_a_relative_path(
    tiny_models: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(tiny_models["qa"])
    monkeypatch.chdir(path.parent)
    assert ExtractiveQA(f"./{path.name}").model_id == f"./{path.name}"
