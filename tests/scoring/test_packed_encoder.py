"""The packed BERT forward gives Hugging Face's hidden states; other models keep Hugging Face's forward."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from scoring.encoders import TokenEncoder, pad_ids
from scoring.packed_encoder import PackedBertEncoder, onednn_linear_available, packed_bert_encoder

# Mixed lengths (padding inside attention), and a batch of equal lengths (no mask at all).
MIXED = [[101, 7592, 2088, 102], [101, *range(2000, 2040), 102], [101, 2023, 102]]
EQUAL = [[101, 2000, 2001, 102], [101, 3000, 3001, 102]]


def tiny_bert(**changes: Any) -> Any:
    from transformers import BertConfig, BertModel

    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=128,
        **changes,
    )
    model = BertModel(config).eval()
    with torch.no_grad():  # non-trivial layer norms, so a mixed-up weight cannot go unnoticed
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0, 0.1)
    return model


def hugging_face_hidden_states(model: Any, sequences: list[list[int]]) -> list[torch.Tensor]:
    ids, mask = pad_ids(sequences, 0)
    with torch.inference_mode():
        hidden = model(input_ids=ids, attention_mask=mask)[0]
    return [hidden[row, : len(sequence)] for row, sequence in enumerate(sequences)]


@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "torch-linear"])
@pytest.mark.parametrize("sequences", [MIXED, EQUAL], ids=["mixed-lengths", "equal-lengths"])
def test_it_gives_hugging_face_hidden_states_for_the_real_tokens(onednn: bool, sequences: list[list[int]]) -> None:
    if onednn and not onednn_linear_available():
        pytest.skip("this torch build has no oneDNN linear kernels")
    model = tiny_bert()
    packed = PackedBertEncoder(model, onednn=onednn)
    with torch.inference_mode():
        got = packed(sequences)
    expected = hugging_face_hidden_states(model, sequences)
    assert got.shape == (sum(len(s) for s in sequences), 64)
    for rows, want in zip(got.split([len(s) for s in sequences]), expected, strict=True):
        assert torch.allclose(rows, want, atol=1e-5), float((rows - want).abs().max())


def test_it_runs_the_packaged_minilm_cut_at_layer_4_like_hugging_face(encoder: TokenEncoder) -> None:
    assert encoder.encoder_pass.packed is not None
    texts = ["Emma Morano died.", "The world's oldest person was born in 1899 in Italy.", "word " * 700]
    inputs = encoder.tokenize_many(texts)
    got = encoder.embed(inputs)
    expected = hugging_face_hidden_states(encoder.model, [item.input_ids for item in inputs])
    assert [len(rows) for rows in got] == [len(item.input_ids) for item in inputs] and len(got[2]) == 512
    for rows, want in zip(got, expected, strict=True):
        assert torch.allclose(rows, torch.nn.functional.normalize(want, dim=-1), atol=1e-5)


def test_it_keeps_hugging_face_forward_for_models_it_does_not_reproduce() -> None:
    cpu = torch.device("cpu")
    assert packed_bert_encoder(tiny_bert(), cpu) is not None
    assert packed_bert_encoder(tiny_bert(hidden_act="relu"), cpu) is None
    assert packed_bert_encoder(tiny_bert(position_embedding_type="relative_key"), cpu) is None
    assert packed_bert_encoder(tiny_bert(), torch.device("cuda")) is None
    assert packed_bert_encoder(tiny_bert().to(torch.bfloat16), cpu) is None

    from transformers import RobertaConfig, RobertaModel

    config = RobertaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    roberta = RobertaModel(config)
    assert packed_bert_encoder(roberta, cpu) is None


def test_it_gives_the_same_embeddings_through_the_hugging_face_forward(encoder: TokenEncoder) -> None:
    inputs = encoder.tokenize_many(["Aberdeen beat Celtic 2-1.", "A longer summary of a football match, " * 9])
    packed = encoder.embed(inputs)
    fast = encoder.encoder_pass.packed
    encoder.encoder_pass.packed = None
    try:
        plain = encoder.embed(inputs)
    finally:
        encoder.encoder_pass.packed = fast
    for a, b in zip(packed, plain, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
