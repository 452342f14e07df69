"""Randomly initialised QG, QA and NLI models built from a config and saved to a directory (no download).

They share the packaged MiniLM's WordPiece tokenizer files, so `AutoTokenizer`/`AutoModel...` load them
exactly as they would load a real checkpoint, and the product's real loading, batching and decoding
code runs on them. Sizes default to tiny (tests); the speed benchmark passes the thesis checkpoints'
dimensions to time those architectures. Their outputs are meaningless unless a test shapes them (the
QG model is trained for a few steps to always ask one question; heads can be zeroed or biased).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
TINY: dict[str, int] = {"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64}


def _copy_tokenizer(target: Path) -> None:
    from scoring.encoders import resolve_model_path

    source = Path(resolve_model_path("packaged:minilm"))
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, target / name)


def _bert_config(num_labels: int | None = None, **sizes: int) -> Any:
    from transformers import BertConfig

    size = {**TINY, **sizes}
    extra: dict[str, Any] = {}
    if num_labels is not None:
        extra["num_labels"] = num_labels
    return BertConfig(
        vocab_size=30522,
        hidden_size=size["hidden"],
        num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"],
        intermediate_size=size["intermediate"],
        max_position_embeddings=512,
        **extra,
    )


def save_nli_model(
    target: Path,
    *,
    label2id: dict[str, int] | None = None,
    favour: int | None = None,
    seed: int = 0,
    **sizes: int,
) -> Path:
    """An NLI-style sequence classifier. `favour` zeroes the head and biases it towards that output index,
    so every input gets the same, known distribution."""
    from transformers import BertForSequenceClassification

    label2id = label2id or {"contradiction": 0, "neutral": 1, "entailment": 2}
    torch.manual_seed(seed)
    config = _bert_config(num_labels=len(label2id), **sizes)
    config.label2id = dict(label2id)
    config.id2label = {index: label for label, index in label2id.items()}
    model = BertForSequenceClassification(config).eval()
    if favour is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.zero_()
            model.classifier.bias[favour] = 5.0
    model.save_pretrained(target)
    _copy_tokenizer(target)
    return target


def save_qa_model(target: Path, *, zero_head: bool = True, seed: int = 0, **sizes: int) -> Path:
    """An extractive QA model. With a zeroed head every span scores 0, so the answer is the first context
    token whenever the null threshold lets spans win (ties go to the span), and unanswerable otherwise."""
    from transformers import BertForQuestionAnswering

    torch.manual_seed(seed)
    model = BertForQuestionAnswering(_bert_config(**sizes)).eval()
    if zero_head:
        with torch.no_grad():
            model.qa_outputs.weight.zero_()
            model.qa_outputs.bias.zero_()
    model.save_pretrained(target)
    _copy_tokenizer(target)
    return target


def t5_config(**sizes: int) -> Any:
    from transformers import T5Config

    size = {**TINY, **sizes}
    return T5Config(
        vocab_size=30522,
        d_model=size["hidden"],
        d_ff=size["intermediate"],
        d_kv=size["hidden"] // size["heads"],
        num_layers=size["layers"],
        num_decoder_layers=size["layers"],
        num_heads=size["heads"],
        pad_token_id=0,  # [PAD]
        eos_token_id=102,  # [SEP]
        decoder_start_token_id=0,
    )


def save_qg_model(target: Path, *, question: str | None = None, seed: int = 0, steps: int = 40, **sizes: int) -> Path:
    """A seq2seq QG model. With `question` it is trained (a few seconds) to ask that question whatever it
    reads, so tests can follow a question through the filters and the answering."""
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    _copy_tokenizer(target)
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(t5_config(**sizes))
    if question is not None:
        tokenizer = AutoTokenizer.from_pretrained(target)
        labels = torch.tensor([tokenizer(question)["input_ids"][1:]])  # drop [CLS]; ends with [SEP] = eos
        inputs = tokenizer(
            [f"generate question: text number {i} <hl> answer {i} <hl> about something" for i in range(2)],
            return_tensors="pt",
            padding=True,
        )
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        model.train()
        for _ in range(steps):
            loss = model(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                labels=labels.repeat(len(inputs["input_ids"]), 1),
            ).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval().save_pretrained(target)
    return target
