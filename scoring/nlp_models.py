"""Question generation, extractive question answering and NLI models behind QAGS and entailment. No Django.

Each wrapper loads a Hugging Face id or a local directory (the role names it in every loading error),
batches its inputs by a padded-token budget and returns plain dataclasses with character offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import torch

from common.errors import ModelLoadError
from scoring.encoders import (
    input_limit,
    load_fast_tokenizer,
    load_pretrained,
    model_description,
    pad_ids,
    padded_batches,
    resolve_device,
)

QgFormat = Literal["highlight", "prefix"]
QG_FORMATS: tuple[str, ...] = ("highlight", "prefix")


# -- question generation ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GeneratedQuestion:
    text: str
    score: float  # the beam's length-normalised log-probability


def qg_input(context: str, start: int, end: int, input_format: QgFormat) -> str:
    """The text an answer-conditional QG model reads.

    "highlight": the context with the answer between <hl> markers after a task prefix (the T5 QG models
    of the thesis); "prefix": "answer: ... context: ..." (other answer-aware T5/BART QG models).
    """
    if input_format == "highlight":
        return f"generate question: {context[:start]}<hl> {context[start:end]} <hl>{context[end:]}"
    return f"answer: {context[start:end]} context: {context}"


class QuestionGenerator:
    """An answer-conditional seq2seq QG model decoded with beam search and trigram blocking (as in QAGS)."""

    def __init__(self, model_spec: str, *, device: str = "auto", batch_size: int = 16) -> None:
        from transformers import AutoModelForSeq2SeqLM

        role = "question generation (QG)"
        self.model_spec = model_spec
        self.device = resolve_device(device)
        self.tokenizer = load_fast_tokenizer(role, model_spec)
        model = load_pretrained(role, model_spec, AutoModelForSeq2SeqLM.from_pretrained)
        if not getattr(model.config, "is_encoder_decoder", False):
            raise ModelLoadError(role=role, spec=model_spec, hint="use a sequence-to-sequence model (T5, BART)")
        self.model = model.to(self.device).eval()
        self.max_length = input_limit(self.tokenizer, model.config)
        self.batch_size = batch_size

    @property
    def model_id(self) -> str:
        return model_description(self.model_spec)

    @torch.inference_mode()
    def generate(
        self,
        requests: Sequence[tuple[str, int, int]],
        *,
        input_format: QgFormat = "highlight",
        num_beams: int = 4,
        questions_per_answer: int = 1,
        max_question_tokens: int = 64,
    ) -> list[list[GeneratedQuestion]]:
        """Questions for each (context, answer start, answer end), most probable first."""
        if input_format not in QG_FORMATS:
            raise ValueError(f"QG input format must be one of {', '.join(QG_FORMATS)}, got {input_format!r}")
        texts = [qg_input(context, start, end, input_format) for context, start, end in requests]
        encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length, verbose=False)["input_ids"]
        result: list[list[GeneratedQuestion]] = [[] for _ in requests]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        pad_id = self.tokenizer.pad_token_id or 0
        for begin in range(0, len(order), self.batch_size):
            batch = order[begin : begin + self.batch_size]
            ids, mask = pad_ids([encoded[i] for i in batch], pad_id)
            output = self.model.generate(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                num_beams=max(num_beams, questions_per_answer),
                num_return_sequences=questions_per_answer,
                max_new_tokens=max_question_tokens,
                no_repeat_ngram_size=3,  # QAGS: trigram blocking
                length_penalty=1.0,
                early_stopping=True,
                output_scores=True,
                return_dict_in_generate=True,
            )
            decoded = self.tokenizer.batch_decode(output.sequences, skip_special_tokens=True)
            scores = output.sequences_scores.tolist() if output.sequences_scores is not None else [0.0] * len(decoded)
            for row, index in enumerate(batch):
                for number in range(questions_per_answer):
                    flat = row * questions_per_answer + number
                    result[index].append(GeneratedQuestion(decoded[flat].strip(), float(scores[flat])))
        return result


# -- extractive question answering ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Answer:
    start: int | None  # character offsets into the context; None when unanswerable
    end: int | None
    text: str
    unanswerable: bool
    score: float  # start + end logit of the best span (-inf when the context has no span at all)
    null_score: float  # start + end logit of the "no answer" position


def best_span(
    start_logits: Sequence[float],
    end_logits: Sequence[float],
    context: Sequence[bool],
    *,
    max_answer_tokens: int,
    top_n: int = 20,
) -> tuple[int, int, float] | None:
    """The highest-scoring (start, end) token span inside the context, or None when there is none.

    As in the SQuAD reference decoding: only the top_n start and end positions are considered, the end
    may not precede the start, and a span has at most max_answer_tokens tokens.
    """
    positions = [i for i, inside in enumerate(context) if inside]
    if not positions:
        return None
    starts = sorted(positions, key=lambda i: -start_logits[i])[:top_n]
    ends = sorted(positions, key=lambda i: -end_logits[i])[:top_n]
    best: tuple[int, int, float] | None = None
    for start in starts:
        for end in ends:
            if end < start or end - start + 1 > max_answer_tokens:
                continue
            score = float(start_logits[start] + end_logits[end])
            if best is None or score > best[2]:
                best = (start, end, score)
    return best


class ExtractiveQA:
    """SQuAD 2.0-style extractive QA: a span of the context, or "unanswerable" when the null score wins.

    Contexts longer than the model's input are read in overlapping windows (doc_stride tokens of overlap);
    the best span over all windows competes with the lowest null score over them, as the Hugging Face
    question-answering pipeline does. A question is unanswerable when null score - best span score
    exceeds `null_threshold` (SQuAD 2.0's tunable threshold; 0 by default).
    """

    def __init__(self, model_spec: str, *, device: str = "auto", batch_tokens: int = 8192) -> None:
        from transformers import AutoModelForQuestionAnswering

        role = "question answering (QA)"
        self.model_spec = model_spec
        self.device = resolve_device(device)
        self.tokenizer = load_fast_tokenizer(role, model_spec)
        model = load_pretrained(role, model_spec, AutoModelForQuestionAnswering.from_pretrained)
        self.model = model.to(self.device).eval()
        self.input_limit = input_limit(self.tokenizer, model.config)
        self.batch_tokens = batch_tokens
        self.question_first = self.tokenizer.padding_side == "right"

    @property
    def model_id(self) -> str:
        return model_description(self.model_spec)

    @torch.inference_mode()
    def answer(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        max_length: int = 384,
        doc_stride: int = 128,
        max_answer_tokens: int = 30,
        null_threshold: float = 0.0,
    ) -> list[Answer]:
        """Answer each (question, context) pair."""
        if not pairs:
            return []
        max_length = min(max_length, self.input_limit)
        doc_stride = min(doc_stride, max_length // 2)
        questions = [question.strip() for question, _ in pairs]
        contexts = [context for _, context in pairs]
        first, second = (questions, contexts) if self.question_first else (contexts, questions)
        features = self.tokenizer(
            first,
            second,
            truncation="only_second" if self.question_first else "only_first",
            max_length=max_length,
            stride=doc_stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            verbose=False,
        )
        context_id = 1 if self.question_first else 0
        ids: list[list[int]] = features["input_ids"]
        logits: list[tuple[list[float], list[float]]] = [([], [])] * len(ids)
        pad_id = self.tokenizer.pad_token_id or 0
        for batch in padded_batches([len(sequence) for sequence in ids], self.batch_tokens):
            batch_ids, mask = pad_ids([ids[i] for i in batch], pad_id)
            output = self.model(input_ids=batch_ids.to(self.device), attention_mask=mask.to(self.device))
            starts = output.start_logits.float().cpu().tolist()
            ends = output.end_logits.float().cpu().tolist()
            for row, index in enumerate(batch):
                logits[index] = (starts[row][: len(ids[index])], ends[row][: len(ids[index])])

        best: list[tuple[float, int, int] | None] = [None] * len(pairs)
        null: list[float] = [float("inf")] * len(pairs)
        cls_id = self.tokenizer.cls_token_id
        for feature, sample in enumerate(features["overflow_to_sample_mapping"]):
            start_logits, end_logits = logits[feature]
            sequence_ids = features.sequence_ids(feature)
            offsets = features["offset_mapping"][feature]
            context = [sid == context_id for sid in sequence_ids]
            cls_position = ids[feature].index(cls_id) if cls_id in ids[feature] else 0
            null[sample] = min(null[sample], start_logits[cls_position] + end_logits[cls_position])
            span = best_span(start_logits, end_logits, context, max_answer_tokens=max_answer_tokens)
            if span is not None and (best[sample] is None or span[2] > best[sample][0]):
                best[sample] = (span[2], offsets[span[0]][0], offsets[span[1]][1])

        answers = []
        for sample, context_text in enumerate(contexts):
            chosen = best[sample]
            if chosen is None or null[sample] - chosen[0] > null_threshold:
                score = chosen[0] if chosen else float("-inf")
                answers.append(Answer(None, None, "", True, score, null[sample]))
                continue
            start, end = _trim(context_text, chosen[1], chosen[2])
            if start >= end:
                answers.append(Answer(None, None, "", True, chosen[0], null[sample]))
                continue
            answers.append(Answer(start, end, context_text[start:end], False, chosen[0], null[sample]))
        return answers


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# -- natural language inference ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Entailment:
    probability: float
    premise_truncated: bool


def entailment_index(label2id: dict[str, int]) -> int:
    """The output index of the entailment class, from the model's own config (models order labels differently)."""
    for label, index in label2id.items():
        if label.strip().lower().startswith("entail"):
            return int(index)
    raise KeyError(f"config.label2id has no 'entailment' label (labels: {', '.join(sorted(label2id))})")


class NliModel:
    """P(hypothesis is entailed by premise) from a sequence-classification NLI model (e.g. MNLI)."""

    def __init__(self, model_spec: str, *, device: str = "auto", batch_tokens: int = 8192) -> None:
        from transformers import AutoModelForSequenceClassification

        role = "NLI (entailment)"
        self.model_spec = model_spec
        self.device = resolve_device(device)
        self.tokenizer = load_fast_tokenizer(role, model_spec)
        model = load_pretrained(role, model_spec, AutoModelForSequenceClassification.from_pretrained)
        try:
            self.entailment_index = entailment_index(dict(model.config.label2id))
        except KeyError as exc:
            raise ModelLoadError(
                role=role, spec=model_spec, hint="use a model fine-tuned for NLI (e.g. on MNLI)", cause=exc
            ) from exc
        self.model = model.to(self.device).eval()
        self.max_length = input_limit(self.tokenizer, model.config)
        self.batch_tokens = batch_tokens

    @property
    def model_id(self) -> str:
        return model_description(self.model_spec)

    @torch.inference_mode()
    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[Entailment]:
        """For each (premise, hypothesis): the entailment probability; a long premise is cut to fit."""
        if not pairs:
            return []
        premises = [premise for premise, _ in pairs]
        hypotheses = [hypothesis for _, hypothesis in pairs]
        full = self.tokenizer(premises, hypotheses, truncation=False, verbose=False)["input_ids"]
        cut = self.tokenizer(premises, hypotheses, truncation="longest_first", max_length=self.max_length)
        ids: list[list[int]] = cut["input_ids"]
        token_types: list[list[int]] | None = cut.get("token_type_ids")
        probabilities = [0.0] * len(pairs)
        pad_id = self.tokenizer.pad_token_id or 0
        for batch in padded_batches([len(sequence) for sequence in ids], self.batch_tokens):
            batch_ids, mask = pad_ids([ids[i] for i in batch], pad_id)
            inputs: dict[str, Any] = {"input_ids": batch_ids.to(self.device), "attention_mask": mask.to(self.device)}
            if token_types is not None:
                inputs["token_type_ids"] = pad_ids([token_types[i] for i in batch], 0)[0].to(self.device)
            logits = self.model(**inputs).logits.float()
            probs = torch.softmax(logits, dim=-1)[:, self.entailment_index].cpu().tolist()
            for row, index in enumerate(batch):
                probabilities[index] = float(probs[row])
        return [Entailment(probability, len(full[i]) > len(ids[i])) for i, probability in enumerate(probabilities)]


@lru_cache(maxsize=2)
def load_question_generator(model_spec: str, device: str = "auto") -> QuestionGenerator:
    return QuestionGenerator(model_spec, device=device)


@lru_cache(maxsize=2)
def load_question_answerer(model_spec: str, device: str = "auto", batch_tokens: int = 8192) -> ExtractiveQA:
    return ExtractiveQA(model_spec, device=device, batch_tokens=batch_tokens)


@lru_cache(maxsize=2)
def load_nli_model(model_spec: str, device: str = "auto", batch_tokens: int = 8192) -> NliModel:
    return NliModel(model_spec, device=device, batch_tokens=batch_tokens)
