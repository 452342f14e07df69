"""The packed BERT forward gives Hugging Face's hidden states; every model it would not reproduce exactly, and
a torch without its oneDNN kernels, keep Hugging Face's forward, and say why."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import torch

from scoring.encoders import EncoderPass, TokenEncoder, pad_ids
from scoring.packed_encoder import (
    ONEDNN_OPS,
    PackedBertEncoder,
    fallback_reason,
    onednn_unavailable,
    packed_bert_encoder,
    torch_op,
)

CPU = torch.device("cpu")
# Mixed lengths (padding inside attention), and a batch of equal lengths (no mask at all).
MIXED = [[101, 7592, 2088, 102], [101, *range(2000, 2040), 102], [101, 2023, 102]]
EQUAL = [[101, 2000, 2001, 102], [101, 3000, 3001, 102]]
# Shortest first, so EncoderPass's one batch holds them in this order, as the reference forward does: in
# training mode both then draw the same dropout masks.
SORTED = sorted(MIXED, key=len)


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
    torch.manual_seed(2)
    with torch.inference_mode():
        hidden = model(input_ids=ids, attention_mask=mask)[0].float()
    return [hidden[row, : len(sequence)] for row, sequence in enumerate(sequences)]


def encoder_pass_hidden_states(model: Any, sequences: list[list[int]]) -> tuple[EncoderPass, list[torch.Tensor]]:
    """The EncoderPass of `model` and the hidden states it gives, per sequence in input order."""
    encoder_pass = EncoderPass(model, CPU, pad_id=0, batch_tokens=4096)
    result: list[torch.Tensor] = [torch.empty(0)] * len(sequences)
    torch.manual_seed(2)
    with torch.inference_mode():
        for batch, hidden in encoder_pass.batches(sequences):
            for index, rows in zip(batch, hidden.split([len(sequences[i]) for i in batch]), strict=True):
                result[index] = rows
    return encoder_pass, result


@pytest.mark.parametrize(
    "changes",
    [{}, {"layer_norm_eps": 1e-3}, {"attn_implementation": "eager"}, {"output_hidden_states": True}],
    ids=["default", "layer-norm-eps-1e-3", "eager-attention", "all-hidden-states-asked"],
)
@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "torch-linear"])
@pytest.mark.parametrize("sequences", [MIXED, EQUAL], ids=["mixed-lengths", "equal-lengths"])
def test_it_gives_hugging_face_hidden_states_for_the_real_tokens(
    changes: dict[str, Any], onednn: bool, sequences: list[list[int]]
) -> None:
    if onednn and onednn_unavailable():
        pytest.skip(f"this torch cannot run oneDNN's linear kernels: {onednn_unavailable()}")
    model = tiny_bert(**changes)
    if onednn:
        assert fallback_reason(model, CPU) is None  # these models run packed
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


def test_it_records_which_forward_ran_the_encoder(encoder: TokenEncoder) -> None:
    if onednn_unavailable():
        pytest.skip(f"this torch cannot run oneDNN's linear kernels: {onednn_unavailable()}")
    recorded = encoder.model_ids("encoder")
    assert recorded == {"encoder": encoder.model_id, "encoder_forward": "packed"}
    assert encoder.encoder_pass.fallback_reason is None
    pruned = tiny_bert()
    pruned.prune_heads({0: [1]})
    encoder_pass = EncoderPass(pruned, CPU, pad_id=0, batch_tokens=4096)
    assert encoder_pass.forward_description == f"Hugging Face ({encoder_pass.fallback_reason})"
    assert "pruned heads [1]" in encoder_pass.forward_description


# -- models the packed forward would not reproduce: each built from a config here, each keeps HF's forward ----
def pruned_heads() -> Any:
    model = tiny_bert()
    model.prune_heads({1: [0, 2]})
    return model


def in_training_mode() -> Any:
    return tiny_bert().train()


def python_gelu_module() -> Any:
    """hidden_act says "gelu", but the module computes the erf formula in Python (other rounding)."""
    from transformers.activations import GELUActivation

    model = tiny_bert()
    model.encoder.layer[2].intermediate.intermediate_act_fn = GELUActivation(use_gelu_python=True)
    return model


def attention_implementation(name: str) -> Callable[[], Any]:
    def build() -> Any:
        model = tiny_bert()
        model.config._attn_implementation = name
        return model

    return build


def halved_attention() -> Any:
    """A custom self-attention (a subclass of the stock one) in layer 1."""
    from transformers.models.bert.modeling_bert import BertSdpaSelfAttention

    class HalvedAttention(BertSdpaSelfAttention):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            context, weights = super().forward(*args, **kwargs)
            return context * 0.5, weights

    model = tiny_bert()
    layer = model.encoder.layer[1].attention
    custom = HalvedAttention(model.config, layer_idx=1).eval()
    custom.load_state_dict(layer.self.state_dict())
    layer.self = custom
    return model


def low_rank_adapted_projection() -> Any:
    """A linear with a low-rank update beside its weight, as LoRA adapters wrap projections."""

    class LowRankAdapted(torch.nn.Linear):
        def __init__(self, stock: torch.nn.Linear) -> None:
            super().__init__(stock.in_features, stock.out_features)
            self.load_state_dict(stock.state_dict())
            self.down = torch.nn.Parameter(torch.full((2, stock.in_features), 0.05))
            self.up = torch.nn.Parameter(torch.full((stock.out_features, 2), 0.05))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) + x @ self.down.T @ self.up.T

    model = tiny_bert()
    layer = model.encoder.layer[0].intermediate
    layer.dense = LowRankAdapted(layer.dense).eval()
    return model


def hooked_layer() -> Any:
    model = tiny_bert()
    model.encoder.layer[0].output.register_forward_hook(lambda module, inputs, output: output * 1.5)
    return model


def replaced_forward() -> Any:
    """An instance-level forward, as accelerate's device-map hooks install."""
    model = tiny_bert()
    norm = model.encoder.layer[1].output.LayerNorm
    stock = norm.forward
    norm.forward = lambda x: stock(x) + 0.25
    return model


def max_norm_embeddings() -> Any:
    model = tiny_bert()
    table = torch.nn.Embedding(30522, 64, max_norm=0.1)  # below the rows' norms: looking up rescales
    table.load_state_dict(model.embeddings.word_embeddings.state_dict())
    model.embeddings.word_embeddings = table
    return model


def shifted_position_ids() -> Any:
    model = tiny_bert()
    model.embeddings.position_ids.add_(1)
    return model


def token_type_one() -> Any:
    model = tiny_bert()
    model.embeddings.token_type_ids.fill_(1)
    return model


def layer_norm_without_affine() -> Any:
    model = tiny_bert()
    model.encoder.layer[1].output.LayerNorm = torch.nn.LayerNorm(64, eps=1e-12, elementwise_affine=False)
    return model


def projection_without_bias() -> Any:
    model = tiny_bert()
    layer = model.encoder.layer[0].attention.output
    dense = torch.nn.Linear(64, 64, bias=False)
    with torch.no_grad():
        dense.weight.copy_(layer.dense.weight)
    layer.dense = dense
    return model


def roberta() -> Any:
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(1)
    config = RobertaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    return RobertaModel(config).eval()


def bert_subclass() -> Any:
    """A subclass that even bears the name BertModel, with arithmetic of its own."""
    from transformers import BertModel as HuggingFaceBert

    class BertModel(HuggingFaceBert):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return (super().forward(*args, **kwargs)[0] * 2,)

    stock = tiny_bert()
    model = BertModel(stock.config).eval()
    model.load_state_dict(stock.state_dict())
    return model


FALLBACKS: dict[str, tuple[Callable[[], Any], str]] = {
    "pruned-heads": (pruned_heads, "layer 1 has pruned heads [0, 2]"),
    "training-mode": (in_training_mode, "training mode"),
    "relative-key-positions": (lambda: tiny_bert(position_embedding_type="relative_key"), "relative_key"),
    "relative-key-query-positions": (
        lambda: tiny_bert(position_embedding_type="relative_key_query"),
        "relative_key_query",
    ),
    "relu": (lambda: tiny_bert(hidden_act="relu"), "'relu'"),
    "tanh-gelu": (lambda: tiny_bert(hidden_act="gelu_new"), "'gelu_new'"),
    "pytorch-tanh-gelu": (lambda: tiny_bert(hidden_act="gelu_pytorch_tanh"), "'gelu_pytorch_tanh'"),
    "python-gelu": (lambda: tiny_bert(hidden_act="gelu_python"), "'gelu_python'"),
    "callable-activation": (lambda: tiny_bert(hidden_act=torch.nn.functional.silu), "silu"),
    "python-gelu-module": (python_gelu_module, "layer 2's activation is not the exact (erf) GELU"),
    "decoder": (lambda: tiny_bert(is_decoder=True), "decoder"),
    "cross-attention": (lambda: tiny_bert(is_decoder=True, add_cross_attention=True), "decoder"),
    "chunked-feed-forward": (lambda: tiny_bert(chunk_size_feed_forward=2), "chunk_size_feed_forward=2"),
    "output-attentions": (lambda: tiny_bert(output_attentions=True), "asks for attentions"),
    "flex-attention": (attention_implementation("flex_attention"), "attention implementation"),
    "custom-attention-module": (halved_attention, "encoder.layer.1.attention.self is a "),
    "low-rank-adapter": (low_rank_adapted_projection, "encoder.layer.0.intermediate.dense is a "),
    "forward-hook": (hooked_layer, "encoder.layer.0.output has forward hooks"),
    "replaced-forward": (replaced_forward, "encoder.layer.1.output.LayerNorm has its forward replaced"),
    "bfloat16": (lambda: tiny_bert().to(torch.bfloat16), "torch.bfloat16"),
    "float64": (lambda: tiny_bert().double(), "torch.float64"),
    "embedding-max-norm": (max_norm_embeddings, "max_norm"),
    "shifted-position-ids": (shifted_position_ids, "position ids"),
    "token-type-one": (token_type_one, "token type ids"),
    "layer-norm-without-affine": (layer_norm_without_affine, "layer norm has no weight or bias"),
    "projection-without-bias": (projection_without_bias, "layer 0 has a projection without a bias"),
    "roberta": (roberta, "RobertaModel is not transformers' BertModel"),
    "bert-subclass": (bert_subclass, "BertModel is not transformers' BertModel"),
}


@pytest.mark.parametrize(("build", "reason"), FALLBACKS.values(), ids=FALLBACKS.keys())
def test_it_keeps_hugging_face_forward_for_a_model_it_would_not_reproduce(
    build: Callable[[], Any], reason: str
) -> None:
    model = build()
    encoder_pass, got = encoder_pass_hidden_states(model, SORTED)
    assert encoder_pass.packed is None
    assert encoder_pass.fallback_reason is not None and reason in encoder_pass.fallback_reason
    assert encoder_pass.fallback_reason == fallback_reason(model, CPU)
    expected = hugging_face_hidden_states(model, SORTED)
    for rows, want in zip(got, expected, strict=True):
        assert torch.equal(rows, want), float((rows - want).abs().max())


def test_it_keeps_hugging_face_forward_without_the_bert_modules_it_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transformers release that renames a BERT module: the packed forward falls back, HF's still runs."""
    import transformers
    from transformers.models.bert import modeling_bert

    model = tiny_bert()
    monkeypatch.delattr(modeling_bert, "BertSdpaSelfAttention")  # undone after this test
    encoder_pass, got = encoder_pass_hidden_states(model, SORTED)
    assert encoder_pass.packed is None
    assert encoder_pass.fallback_reason == f"transformers {transformers.__version__} has no BertSdpaSelfAttention, " + (
        "which the packed forward copies"
    )
    for rows, want in zip(got, hugging_face_hidden_states(model, SORTED), strict=True):
        assert torch.equal(rows, want)


def test_it_keeps_hugging_face_forward_on_another_device() -> None:
    # No GPU here to run either forward on: the decision is what can be checked.
    assert fallback_reason(tiny_bert(), torch.device("cuda")) == (
        "the device is cuda; the packed forward runs on the CPU only"
    )
    on_meta = tiny_bert().to("meta")
    assert "is on meta" in (fallback_reason(on_meta, CPU) or "")


def test_it_looks_private_ops_up_before_using_them() -> None:
    assert torch_op("mkldnn._faithanno_no_such_op.default") is None
    assert torch_op("mkldnn._linear_pointwise.no_such_overload") is None
    assert torch_op("faithanno_no_such_namespace._linear_pointwise.default") is None
    assert torch_op("aten.add.Tensor") is torch.ops.aten.add.Tensor
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN")
    assert all(torch_op(name) is not None for name in ONEDNN_OPS)
    assert onednn_unavailable() is None  # this torch has the kernels and they give torch's linear


def test_it_falls_back_with_one_warning_when_torch_lacks_a_onednn_op(caplog: pytest.LogCaptureFixture) -> None:
    """What a torch upgrade that drops one of the private ops does: no failure, HF's forward, one log line."""
    absent = (*ONEDNN_OPS, "mkldnn._faithanno_absent_linear.default")
    model = tiny_bert()
    caplog.set_level(logging.INFO, logger="scoring.packed_encoder")
    first = packed_bert_encoder(model, CPU, onednn_ops=absent)
    second = packed_bert_encoder(tiny_bert(), CPU, onednn_ops=absent)
    assert first == second == (None, onednn_unavailable(absent))
    reason = first[1]
    assert reason == f"torch {torch.__version__} has no torch.ops.mkldnn._faithanno_absent_linear.default"
    lines = [record for record in caplog.records if record.name == "scoring.packed_encoder"]
    assert [(line.levelno, line.getMessage()) for line in lines] == [
        (logging.WARNING, f"Hugging Face's forward runs instead of the packed one: {reason}")
    ]
    assert fallback_reason(model, CPU, onednn_ops=absent) == reason
