"""An LLM as a rater: the prompt built from a task's own guidelines, and what its answer means (no Django, no
HTTP).

The prompt holds the task's description and steps, the study's guidelines, the document, the summary and
every unit with its choices; the model answers one JSON object, `{"judgements": [{"unit": N, "label": V,
"note": "..."}]}`. `answer_parse` turns the answer into a `Submission` and checks it with the task's own
`clean` (the check every human submission passes), so a label outside the label set is refused with the
task's own message. Span and edit tasks are not judged by a model (their answers are not a label per unit).

The wire format is OpenAI's chat completions (`POST .../chat/completions`), which vLLM, Ollama, llama.cpp's
server and the hosted APIs speak: `chat_body` builds the request, `chat_reply_parse` reads the response.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocols.tasks import MAX_NOTE_CHARS, Submission, SubmissionError, TaskDefinition, Unit

# Part of every prompt hash: a changed template never answers from the cache of the old one.
PROMPT_FORMAT = 1
# The document and the summary are cut at this many characters (a prompt is no place for a book).
MAX_DOCUMENT_CHARS = 20_000
MAX_GUIDELINES_CHARS = 20_000
MAX_TEMPERATURE = 2.0
MAX_COMPLETION_TOKENS = 8192
MAX_MODEL_CHARS = 200
SYSTEM_PROMPT = (
    "You are one annotator of a study that judges whether summaries are faithful to their source document. "
    "Follow the task's guidelines exactly. Answer with one JSON object and nothing else."
)
ANSWER_FORMAT = (
    'Answer with one JSON object: {"judgements": [{"unit": <unit number>, "label": "<one label of that '
    'unit>", "note": "<one short sentence: why>"}, ...]} with one entry per unit listed above'
)


class AnswerError(ValueError):
    """An answer that is no valid submission; the message says why (it is recorded as the failure's reason)."""


class EndpointError(Exception):
    """The endpoint did not answer usefully. `retryable`: another try may succeed (time-out, 429, 5xx, a
    malformed body); otherwise every further request would fail the same way (401, 404) and the run stops."""

    def __init__(self, reason: str, *, retryable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


def judgeable(task: TaskDefinition) -> bool:
    """Whether a model can judge this task: a label per unit (not spans to mark, not an edit to write)."""
    return not (task.spans or task.edit)


@dataclass(frozen=True, slots=True)
class ChatParams:
    """The sampling parameters sent with every request (and part of the prompt hash)."""

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}


def chat_params(raw: Mapping[str, Any]) -> ChatParams:
    """ChatParams from client input; ValueError naming the field for anything else."""
    unknown = sorted(set(raw) - {"temperature", "max_tokens", "seed"})
    if unknown:
        raise ValueError(f"parameters: unknown {', '.join(map(repr, unknown))} (temperature, max_tokens, seed)")
    temperature = raw.get("temperature", 0.0)
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number, got {temperature!r}")
    if not 0 <= temperature <= MAX_TEMPERATURE:
        raise ValueError(f"temperature must be between 0 and {MAX_TEMPERATURE:g}, got {temperature:g}")
    max_tokens = raw.get("max_tokens", 1024)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= MAX_COMPLETION_TOKENS:
        raise ValueError(f"max_tokens must be a whole number between 1 and {MAX_COMPLETION_TOKENS}, got {max_tokens!r}")
    seed = raw.get("seed", 0)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31):
        raise ValueError(f"seed must be a whole number between 0 and {2**31 - 1} (or empty), got {seed!r}")
    return ChatParams(float(temperature), max_tokens, seed)


# --- the prompt ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """The chat messages of one item, exactly as sent."""

    messages: tuple[Mapping[str, str], ...]

    def as_list(self) -> list[dict[str, str]]:
        return [dict(message) for message in self.messages]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def _answer_text(span: Any) -> str:
    if isinstance(span, Mapping):
        return str(span.get("text") or "") or "(unanswerable)"
    return ""


def _unit_context(task: TaskDefinition, unit: Unit, document_text: str) -> list[str]:
    """What the annotator's view shows beside the unit: BERTScore's aligned source word, QGQA's two
    answers, the entailment task's most similar source sentences."""
    extra = unit.extra
    if task.key == "bertscore":
        return [f"Aligned source word(s): {extra.get('aligned_text', '')!s}"]
    if task.key == "qgqa":
        return [
            f"Answer from the summary: {_answer_text(extra.get('summary_answer'))}",
            f"Answer from the source: {_answer_text(extra.get('source_answer'))}",
        ]
    if task.key == "entailment":
        lines = []
        for top in extra.get("top") or []:
            if isinstance(top, Mapping) and isinstance(top.get("start"), int) and isinstance(top.get("end"), int):
                lines.append(f"Highlighted source sentence: {document_text[top['start'] : top['end']]}")
        return lines
    return []


def prompt_build(
    task: TaskDefinition, *, guidelines: str, document_text: str, summary_text: str, units: Sequence[Unit]
) -> JudgePrompt:
    """The messages that ask a model to judge one item of `task`, as a human annotator is asked."""
    if not judgeable(task):
        raise ValueError(f"task {task.key!r} is not judged per unit ({task.unit_name}s); a model cannot judge it")
    lines = [f"Task: {task.name}", task.description, ""]
    if task.steps:
        lines += ["Steps:", *(f"{number}. {step}" for number, step in enumerate(task.steps, start=1)), ""]
    lines += ["Guidelines:", _cut(guidelines.strip(), MAX_GUIDELINES_CHARS) or "(none beyond the steps)", ""]
    lines += ["Source document:", "<<<", _cut(document_text, MAX_DOCUMENT_CHARS), ">>>", ""]
    lines += ["Summary:", "<<<", _cut(summary_text, MAX_DOCUMENT_CHARS), ">>>", ""]
    lines.append(f"Judge every {task.unit_name} below.")
    for unit in units:
        lines.append("")
        lines.append(f"Unit {unit.index}: {unit.text}")
        if unit.prompt:
            lines.append(f"Question: {unit.prompt}")
        if unit.requires is not None:
            parent, triggers = unit.requires
            lines.append(f"Answer only if unit {parent} is {' or '.join(triggers)}; otherwise leave it out.")
        lines += _unit_context(task, unit, document_text)
        choices = task.choices_for(unit)
        lines.append("Labels: " + ", ".join(f"{choice.value} ({choice.label})" for choice in choices))
    lines += ["", ANSWER_FORMAT + (", each with a note." if task.note_required else ".")]
    return JudgePrompt(({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}))


def prompt_hash(*, endpoint: str, model: str, messages: Sequence[Mapping[str, str]], params: ChatParams) -> str:
    """The cache key: the same endpoint, model, messages and parameters give the same answer (as far as the
    model is deterministic; the cache makes it so)."""
    key = {
        "format": PROMPT_FORMAT,
        "endpoint": endpoint,
        "model": model,
        "messages": [dict(message) for message in messages],
        "params": params.as_dict(),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# --- the wire format ---------------------------------------------------------------------------------------


def chat_body(*, model: str, messages: Sequence[Mapping[str, str]], params: ChatParams) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(message) for message in messages],
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "stream": False,
    }
    if params.seed is not None:
        body["seed"] = params.seed
    return body


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


def chat_reply_parse(body: bytes) -> ChatReply:
    """The first choice's message text and the token usage of a chat.completions response; EndpointError
    (retryable) for a body that is not one."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise EndpointError(f"the response is not JSON ({len(body)} bytes)") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise EndpointError("the response holds no choices[0].message.content text")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return ChatReply(content, _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"))


# --- the answer --------------------------------------------------------------------------------------------


def _json_object(content: str) -> Any:
    """The JSON object of an answer; models like to wrap it in a ``` fence or a sentence."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end < start:
        raise AnswerError(f"the answer holds no JSON object: {content[:200]!r}")
    try:
        return json.loads(content[start : end + 1])
    except (ValueError, RecursionError):
        raise AnswerError(f"the answer's JSON does not parse: {content[start : start + 200]!r}") from None


def _unit_number(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


def answer_parse(task: TaskDefinition, *, units: Sequence[Unit], summary_text: str, content: str) -> Submission:
    """The submission a model's answer makes, checked by the task as a human submission is; AnswerError
    says what is wrong (a label outside the label set, a unit left out, no JSON)."""
    data = _json_object(content)
    entries = data.get("judgements") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise AnswerError('the answer has no "judgements" list')
    labels: dict[int, str] = {}
    notes: dict[int, str] = {}
    problems = []
    for number, entry in enumerate(entries, start=1):
        index = _unit_number(entry.get("unit")) if isinstance(entry, dict) else None
        if index is None:
            problems.append(f"judgement {number} names no unit number")
            continue
        label = entry.get("label")
        labels[index] = label.strip() if isinstance(label, str) else label
        note = entry.get("note")
        if isinstance(note, str) and note.strip():
            notes[index] = note.strip()[:MAX_NOTE_CHARS]
    if problems:
        raise AnswerError("; ".join(problems))
    # A follow-up the model answered although its trigger did not apply is dropped, as a human's view hides it.
    asked = {unit.index for unit in task.applicable(units, labels)}
    known = {unit.index for unit in units}
    labels = {index: label for index, label in labels.items() if index in asked or index not in known}
    notes = {index: note for index, note in notes.items() if index in labels}
    submission = Submission(labels=labels, notes=notes)
    try:
        task.clean(submission, units=units, summary_text=summary_text)
    except SubmissionError as exc:
        raise AnswerError("; ".join(exc.messages)) from None
    return submission
