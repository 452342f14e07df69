"""A faster CPU forward pass for BERT-architecture encoders (BERT, MiniLM) with Hugging Face's numbers to
float32 rounding. No Django here.

Why it is faster than calling the Hugging Face model:
- The projections run on oneDNN's fp32 GEMM with weights packed once. torch's default fp32 GEMM (MKL)
  runs its AVX2 code on AMD processors; oneDNN uses AVX-512 where the processor has it. On this project's
  2-core AMD EPYC machines that is about twice the GFLOP/s, with the same fp32 arithmetic (no bf16, no TF32).
- Only real tokens go through the projections, GELU and layer norms: a batch is packed into one
  (tokens x hidden) matrix, and padding exists only inside attention, which needs a rectangle.
- Query, key and value are one GEMM, and GELU runs inside the up-projection's GEMM.

When it would not be exact, Hugging Face's forward runs instead. `fallback_reason(model, device)` is the one
place that decides: it checks every assumption `PackedBertEncoder` makes and names the first that fails
(another architecture or a subclass, a GPU, training mode, weights that are not float32, pruned heads, a
decoder, relative positions, an activation other than the exact GELU, chunked feed-forward, attentions
asked for in the config, replaced or hooked modules, a torch without the oneDNN kernels ...).
`packed_bert_encoder(model, device)` logs that reason once per process and returns it with no encoder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import Any

import torch
import torch.nn.functional as F

logger = logging.getLogger(__name__)

# oneDNN keeps a built kernel with its scratch memory for every GEMM shape it has met, up to 1,024 of them.
# Packed batches almost never repeat a shape (their token counts differ), so a large cache only holds memory.
# Eight hold a batch's four GEMM shapes, which every layer reuses.
# oneDNN reads this when it builds its first kernel; a value the user set wins.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8")

# The private oneDNN ops the packed forward calls (torch.ops.<namespace>.<name>.<overload>). They are not
# torch's public API and may go in any release, so they are looked up before anything uses them.
ONEDNN_OPS = (
    "mkldnn._reorder_linear_weight.default",
    "mkldnn._linear_pointwise.default",
    "mkldnn._linear_pointwise.binary",
)


class OneDNNUnavailable(RuntimeError):
    """The installed torch cannot run the packed forward's oneDNN kernels."""


def torch_op(qualified_name: str) -> Any | None:
    """torch.ops.<namespace>.<name>.<overload> (e.g. "mkldnn._linear_pointwise.binary") if the installed
    torch has it, else None."""
    namespace, name, overload = qualified_name.split(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload)
    except (AttributeError, RuntimeError):
        return None


@cache
def onednn_unavailable(ops: tuple[str, ...] = ONEDNN_OPS) -> str | None:
    """Why the installed torch cannot run oneDNN's linear kernels (`ops`), or None when it can.

    Existing is not enough: the kernels also run once on a small product through `Dense` and must give
    torch's public linear, so an op whose arguments or meaning changed in a torch upgrade stops here, not in
    the middle of a scoring run. Checked once per process."""
    version = torch.__version__
    if not torch.backends.mkldnn.is_available():
        return f"torch {version} is built without oneDNN (mkldnn)"
    missing = [name for name in ops if torch_op(name) is None]
    if missing:
        return f"torch {version} has no {', '.join(f'torch.ops.{name}' for name in missing)}"
    try:
        wrong = _onednn_disagreements()
    except Exception as exc:  # whatever a private op raises, the answer is: do not use it
        return f"oneDNN's linear kernels fail in torch {version} ({type(exc).__name__}: {exc})"
    if wrong:
        return f"oneDNN's linear kernels in torch {version} do not give torch's linear for: {', '.join(wrong)}"
    return None


def _onednn_disagreements() -> list[str]:
    """The operations where oneDNN's Dense differs from torch's on a small fixed product (no random numbers:
    the probe must not move the caller's random state)."""
    x = torch.linspace(-2, 2, 24).view(3, 8)
    weight, bias = torch.linspace(-1, 1, 32).view(4, 8), torch.linspace(-0.5, 0.5, 4)
    residual = torch.linspace(1, -1, 12).view(3, 4)
    with torch.no_grad():
        onednn, plain = Dense.unchecked(weight, bias, onednn=True), Dense.unchecked(weight, bias, onednn=False)
        pairs = {
            "linear": (onednn(x), plain(x)),
            "linear with GELU": (onednn(x, gelu=True), plain(x, gelu=True)),
            "linear with a residual": (onednn(x, residual=residual), plain(x, residual=residual)),
        }
    return [
        name
        for name, (got, want) in pairs.items()
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    ]


@dataclass(frozen=True, slots=True)
class Dense:
    """y = x W^T + b, optionally followed by erf-GELU or a residual addition, on oneDNN with a packed weight
    when it can."""

    weight: torch.Tensor
    bias: torch.Tensor
    onednn: bool

    @classmethod
    def of(cls, weight: torch.Tensor, bias: torch.Tensor, *, onednn: bool) -> Dense:
        """The layer on oneDNN (`onednn`; OneDNNUnavailable if this torch cannot) or on torch's linear."""
        if onednn and (reason := onednn_unavailable()) is not None:
            raise OneDNNUnavailable(reason)
        return cls.unchecked(weight, bias, onednn=onednn)

    @classmethod
    def unchecked(cls, weight: torch.Tensor, bias: torch.Tensor, *, onednn: bool) -> Dense:
        """`of` without the availability check: only for the check itself."""
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
    """Last hidden states of a (possibly layer-cut) BertModel for a batch of token id sequences.

    Exact only for the models `fallback_reason` accepts: build it through `packed_bert_encoder`."""

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
            if padded is not None and real is not None:  # padded exists exactly when real does
                qkv = padded.index_copy_(0, real, qkv)
            query, key, value = qkv.view(rows, width, 3, self.heads, head_size).permute(2, 0, 3, 1, 4).unbind(0)
            context = F.scaled_dot_product_attention(query, key, value, attn_mask=key_mask)
            context = context.transpose(1, 2).reshape(rows * width, self.hidden)
            if real is not None:
                context = context.index_select(0, real)
            x = layer.attention_norm(layer.attention_output(context, residual=x))
            x = layer.output_norm(layer.down(layer.up(x, gelu=True), residual=x))
        return x


# What the packed forward is written against: transformers' BERT modules (looked up by name, so a release
# that renames or drops one falls back instead of failing) and torch's building blocks. Anything else in the
# model (a subclass, LoRA or quantised linears, a parametrisation, a custom attention) runs other arithmetic.
BERT_MODULES = (
    "BertModel",
    "BertEmbeddings",
    "BertEncoder",
    "BertLayer",
    "BertAttention",
    "BertSelfAttention",
    "BertSdpaSelfAttention",
    "BertSelfOutput",
    "BertIntermediate",
    "BertOutput",
    "BertPooler",
)
TORCH_MODULES = (
    torch.nn.Linear,
    torch.nn.LayerNorm,
    torch.nn.Embedding,
    torch.nn.Dropout,
    torch.nn.ModuleList,
    torch.nn.Tanh,
)
# Both compute softmax(QK^T / sqrt(d) + mask) V: sdpa through the same kernel as the packed forward, eager to
# float32 rounding (7e-7 in the tests).
ATTENTION_IMPLEMENTATIONS = ("sdpa", "eager")


def fallback_reason(model: Any, device: torch.device, *, onednn_ops: tuple[str, ...] = ONEDNN_OPS) -> str | None:
    """Why the packed forward would not give `model`'s Hugging Face hidden states on `device` (the first
    broken assumption), or None when it would. The one place that decides.

    The packed forward takes token ids only and returns the last hidden states: no token types but 0, no
    position ids but 0..n-1, no head mask, no attentions; EncoderPass asks for nothing else. It is decided
    when the encoder is built; the packed weights are a copy, so a model changed afterwards is not followed.
    `onednn_ops` are the private ops looked up (the default: those the packed forward calls)."""
    if device.type != "cpu":
        return f"the device is {device}; the packed forward runs on the CPU only"
    try:
        reason = next(_broken_assumptions(model), None)
    except AttributeError as exc:  # modules shaped unlike the BERT the checks know (another transformers)
        reason = f"the model's modules are not laid out as the packed forward expects ({exc})"
    return reason if reason is not None else onednn_unavailable(onednn_ops)


def _broken_assumptions(model: Any) -> Iterator[str]:
    """Every assumption of PackedBertEncoder that `model` breaks, in the order checked (the caller takes the
    first, so a later check may rely on the earlier ones having passed)."""
    import transformers
    from transformers import activations
    from transformers.models.bert import modeling_bert

    missing = [name for name in BERT_MODULES if not hasattr(modeling_bert, name)]
    activation = getattr(activations, "GELUActivation", None)
    if missing or activation is None:
        absent = [*missing, *([] if activation else ["GELUActivation"])]
        yield f"transformers {transformers.__version__} has no {', '.join(absent)}, which the packed forward copies"
        return
    bert = {name: getattr(modeling_bert, name) for name in BERT_MODULES}
    if type(model) is not bert["BertModel"]:
        yield f"{type(model).__module__}.{type(model).__qualname__} is not transformers' BertModel"
        return

    # The configuration: what HF's forward does beyond an absolute-position, erf-GELU encoder.
    config = model.config
    if config.is_decoder or config.add_cross_attention:
        yield "the config makes it a decoder (causal attention or cross-attention)"
    positions = {
        getattr(owner, "position_embedding_type", "absolute")
        for owner in (config, model, model.embeddings, *(layer.attention.self for layer in model.encoder.layer))
    }
    if positions != {"absolute"}:
        yield f"position embeddings {sorted(positions)}; the packed forward adds absolute ones only"
    implementations = {config._attn_implementation, getattr(model, "attn_implementation", "sdpa")}
    if not implementations <= set(ATTENTION_IMPLEMENTATIONS):
        yield f"attention implementation {sorted(implementations)}; the packed forward reproduces sdpa and eager"
    if config.hidden_act != "gelu":
        yield f"the activation is {config.hidden_act!r}; the packed forward fuses the exact (erf) GELU only"
    # Asking for attentions turns HF's sdpa attention into its eager one. (Asking for all hidden states changes
    # nothing in the last one, which is all EncoderPass reads.)
    if config.output_attentions:
        yield "the config asks for attentions, which the packed forward does not compute"

    # Modules and hooks: only the stock ones run, as they are.
    stock = {*bert.values(), *TORCH_MODULES, activation}
    for name, module in model.named_modules():
        where = name or "the model"
        if type(module) not in stock:
            yield f"{where} is a {type(module).__module__}.{type(module).__qualname__}, not a stock BERT module"
        if getattr(module, "_forward_hooks", None) or getattr(module, "_forward_pre_hooks", None):
            yield f"{where} has forward hooks, which the packed forward would skip"
        if "forward" in vars(module):
            yield f"{where} has its forward replaced (as accelerate's offloading does), which would be skipped"

    # Mode and tensors. Training mode switches on dropout (the dropout modules', and attention's own) and
    # gradient checkpointing; the other building blocks ignore it (pruning heads leaves new linears in
    # training mode inside an evaluated model).
    mode_free = (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Embedding, torch.nn.ModuleList, torch.nn.Tanh)
    if any(module.training for module in model.modules() if not isinstance(module, (*mode_free, activation))):
        yield "the model is in training mode (dropout)"
    for name, tensor in chain(model.named_parameters(), model.named_buffers()):
        if tensor.device.type != "cpu":
            yield f"{name} is on {tensor.device}; the packed forward runs on the CPU only"
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            yield f"{name} is {tensor.dtype}; the packed forward reproduces float32 weights only"
    # Embeddings: rows looked up as they are, token type 0, positions 0..n-1.
    hidden = int(config.hidden_size)
    embeddings = model.embeddings
    tables = (embeddings.word_embeddings, embeddings.position_embeddings, embeddings.token_type_embeddings)
    if any(table.max_norm is not None or table.embedding_dim != hidden for table in tables):
        yield f"an embedding table has max_norm set or is not {hidden} wide"
    position_ids = getattr(embeddings, "position_ids", None)
    if position_ids is not None and not torch.equal(position_ids.view(-1), torch.arange(position_ids.numel())):
        yield "the position ids buffer is not 0, 1, 2, ..."
    token_type_ids = getattr(embeddings, "token_type_ids", None)
    if token_type_ids is not None and bool(token_type_ids.any()):
        yield "the token type ids buffer is not all 0"

    # Layers: full heads, biases, the module's GELU, no chunking, layer norms over the hidden size.
    heads = int(config.num_attention_heads)
    if config.chunk_size_feed_forward:
        yield f"chunked feed-forward (chunk_size_feed_forward={config.chunk_size_feed_forward})"
    for index, layer in enumerate(model.encoder.layer):
        attention = layer.attention.self
        if layer.attention.pruned_heads:
            yield f"layer {index} has pruned heads {sorted(layer.attention.pruned_heads)}"
        width = attention.num_attention_heads * attention.attention_head_size
        if attention.num_attention_heads != heads or width != hidden or attention.all_head_size != hidden:
            yield f"layer {index}'s attention is not {heads} heads over {hidden} dimensions"
        if layer.chunk_size_feed_forward:
            yield f"layer {index} chunks its feed-forward ({layer.chunk_size_feed_forward})"
        act = layer.intermediate.intermediate_act_fn
        if type(act) is not activation or act.act is not F.gelu:
            yield f"layer {index}'s activation is not the exact (erf) GELU"
        linears = (
            attention.query,
            attention.key,
            attention.value,
            layer.attention.output.dense,
            layer.intermediate.dense,
            layer.output.dense,
        )
        if any(linear.bias is None for linear in linears):
            yield f"layer {index} has a projection without a bias"
    norms = [embeddings.LayerNorm]
    norms += [
        norm for layer in model.encoder.layer for norm in (layer.attention.output.LayerNorm, layer.output.LayerNorm)
    ]
    if any(norm.weight is None or norm.bias is None or tuple(norm.normalized_shape) != (hidden,) for norm in norms):
        yield f"a layer norm has no weight or bias, or does not normalise over the {hidden} hidden dimensions"


# Reasons already logged by this process.
_logged: set[str] = set()


def packed_bert_encoder(
    model: Any, device: torch.device, *, onednn_ops: tuple[str, ...] = ONEDNN_OPS
) -> tuple[PackedBertEncoder | None, str | None]:
    """The packed forward for `model` on `device` and None, or None and why Hugging Face's forward runs.

    Each reason is logged once per process: as a warning when the installed torch cannot run the oneDNN
    kernels (a torch upgrade removed or changed a private op: scoring goes on, slower), else as information
    (another architecture or a GPU is not a fault)."""
    reason = fallback_reason(model, device, onednn_ops=onednn_ops)
    if reason is None:
        return PackedBertEncoder(model, onednn=True), None
    if reason not in _logged:
        _logged.add(reason)
        level = logging.WARNING if reason == onednn_unavailable(onednn_ops) else logging.INFO
        logger.log(level, "Hugging Face's forward runs instead of the packed one: %s", reason)
    return None, reason
