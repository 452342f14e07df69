"""A faster CPU forward pass for BERT-architecture encoders (BERT, MiniLM) with Hugging Face's numbers to
float32 rounding. No Django here.

Why it is faster than calling the Hugging Face model:
- The projections run on oneDNN's fp32 GEMM with weights packed once. torch's default fp32 GEMM (MKL)
  runs its AVX2 code on AMD processors; oneDNN uses AVX-512 where the processor has it. On this project's
  2-core AMD EPYC machines that is about twice the GFLOP/s, with the same fp32 arithmetic (no bf16, no TF32).
- Only real tokens go through the projections, GELU and layer norms: a batch is packed into one
  (tokens x hidden) matrix, and padding exists only inside attention, which needs a rectangle.
- Query, key and value are one GEMM, and GELU runs inside the up-projection's GEMM.

`packed_bert_encoder(model, device)` returns None for anything it does not reproduce exactly (other
architectures, relative positions, other activations, weights that are not float32, a GPU); callers then
run the Hugging Face forward.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

# oneDNN keeps a built kernel with its scratch memory for every GEMM shape it has met, up to 1,024 of them.
# Packed batches almost never repeat a shape (their token counts differ), so a large cache only holds memory.
# Eight hold a batch's four GEMM shapes, which every layer reuses.
# oneDNN reads this when it builds its first kernel; a value the user set wins.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8")


def onednn_linear_available() -> bool:
    ops = torch.ops.mkldnn
    return torch.backends.mkldnn.is_available() and all(
        hasattr(ops, name) for name in ("_reorder_linear_weight", "_linear_pointwise")
    )


@dataclass(frozen=True, slots=True)
class Dense:
    """y = x W^T + b, optionally followed by erf-GELU or a residual addition, on oneDNN with a packed weight
    when it can."""

    weight: torch.Tensor
    bias: torch.Tensor
    onednn: bool

    @classmethod
    def of(cls, weight: torch.Tensor, bias: torch.Tensor, *, onednn: bool) -> Dense:
        weight = weight.detach().float().contiguous()
        if onednn:
            weight = torch.ops.mkldnn._reorder_linear_weight(weight)
        return cls(weight, bias.detach().float().contiguous(), onednn)

    def __call__(self, x: torch.Tensor, *, gelu: bool = False, residual: torch.Tensor | None = None) -> torch.Tensor:
        """x W^T + b, then GELU (`gelu`) or the addition of `residual`, inside the GEMM on oneDNN."""
        if self.onednn:
            if residual is not None:
                return torch.ops.mkldnn._linear_pointwise.binary(x, residual, self.weight, self.bias, "add")
            # algorithm "none" is the exact (erf) GELU that BERT's "gelu" means, not the tanh approximation.
            return torch.ops.mkldnn._linear_pointwise(
                x, self.weight, self.bias, "gelu" if gelu else "none", [], "none" if gelu else ""
            )
        y = F.linear(x, self.weight, self.bias)
        if residual is not None:
            return y.add_(residual)
        return F.gelu(y) if gelu else y


@dataclass(frozen=True, slots=True)
class LayerNorm:
    weight: torch.Tensor
    bias: torch.Tensor
    eps: float

    @classmethod
    def of(cls, module: torch.nn.LayerNorm) -> LayerNorm:
        return cls(module.weight.detach().float(), module.bias.detach().float(), float(module.eps))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


@dataclass(frozen=True, slots=True)
class BertLayerWeights:
    query_key_value: Dense
    attention_output: Dense
    attention_norm: LayerNorm
    up: Dense
    down: Dense
    output_norm: LayerNorm


class PackedBertEncoder:
    """Last hidden states of a (possibly layer-cut) BertModel for a batch of token id sequences."""

    def __init__(self, model: Any, *, onednn: bool) -> None:
        config = model.config
        self.heads = int(config.num_attention_heads)
        self.hidden = int(config.hidden_size)
        embeddings = model.embeddings
        self.word_embeddings = embeddings.word_embeddings.weight.detach()
        self.position_embeddings = embeddings.position_embeddings.weight.detach()
        self.token_type = embeddings.token_type_embeddings.weight.detach()[0]  # one segment: type 0
        self.embedding_norm = LayerNorm.of(embeddings.LayerNorm)
        self.layers = []
        for layer in model.encoder.layer:
            attention = layer.attention
            projections = (attention.self.query, attention.self.key, attention.self.value)
            self.layers.append(
                BertLayerWeights(
                    query_key_value=Dense.of(
                        torch.cat([p.weight for p in projections]),
                        torch.cat([p.bias for p in projections]),
                        onednn=onednn,
                    ),
                    attention_output=Dense.of(
                        attention.output.dense.weight, attention.output.dense.bias, onednn=onednn
                    ),
                    attention_norm=LayerNorm.of(attention.output.LayerNorm),
                    up=Dense.of(layer.intermediate.dense.weight, layer.intermediate.dense.bias, onednn=onednn),
                    down=Dense.of(layer.output.dense.weight, layer.output.dense.bias, onednn=onednn),
                    output_norm=LayerNorm.of(layer.output.LayerNorm),
                )
            )

    def __call__(self, sequences: Sequence[Sequence[int]]) -> torch.Tensor:
        """The real tokens' hidden states, sequence after sequence: (sum of lengths) x hidden, float32."""
        lengths = [len(sequence) for sequence in sequences]
        ids = torch.tensor([token for sequence in sequences for token in sequence], dtype=torch.long)
        positions = torch.cat([torch.arange(length) for length in lengths])
        x = self.embedding_norm(self.word_embeddings[ids] + self.token_type + self.position_embeddings[positions])
        rows, width = len(lengths), max(lengths)
        if all(length == width for length in lengths):
            real, key_mask = None, None
        else:
            mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
            real = mask.view(-1).nonzero().squeeze(1)  # positions of real tokens in the padded rectangle
            key_mask = mask[:, None, None, :]  # padding keys are never attended to
        head_size = self.hidden // self.heads
        # Padding rows stay zero in every layer (NaN-free keys for the masked attention), so one buffer serves all.
        padded = x.new_zeros((rows * width, 3 * self.hidden)) if real is not None else None
        for layer in self.layers:
            qkv = layer.query_key_value(x)
            if padded is not None:
                qkv = padded.index_copy_(0, real, qkv)
            query, key, value = qkv.view(rows, width, 3, self.heads, head_size).permute(2, 0, 3, 1, 4).unbind(0)
            context = F.scaled_dot_product_attention(query, key, value, attn_mask=key_mask)
            context = context.transpose(1, 2).reshape(rows * width, self.hidden)
            if real is not None:
                context = context.index_select(0, real)
            x = layer.attention_norm(layer.attention_output(context, residual=x))
            x = layer.output_norm(layer.down(layer.up(x, gelu=True), residual=x))
        return x


def packed_bert_encoder(model: Any, device: torch.device) -> PackedBertEncoder | None:
    """The packed forward for a model it reproduces exactly, else None (run the Hugging Face forward)."""
    config = model.config
    reproducible = (
        device.type == "cpu"
        and type(model).__name__ == "BertModel"
        and model.dtype == torch.float32
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and config.hidden_act == "gelu"
        and not getattr(config, "is_decoder", False)
    )
    if not reproducible:
        return None
    return PackedBertEncoder(model, onednn=onednn_linear_available())
