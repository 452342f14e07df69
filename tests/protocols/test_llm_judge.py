"""The LLM judge's prompt and what its answers mean (protocols.llm_judge; no database, no HTTP)."""

from __future__ import annotations

import json

import pytest

from protocols.llm_judge import (
    AnswerError,
    ChatParams,
    EndpointError,
    answer_parse,
    chat_body,
    chat_params,
    chat_reply_parse,
    judgeable,
    prompt_build,
    prompt_hash,
)
from protocols.tasks import get_task

DOCUMENT = "The mayor opened the bridge on Monday. It cost four million euros."
SUMMARY = "The mayor opened the bridge. It cost five million euros."
SENTENCES = [[0, 28], [29, 57]]


def units(task_key: str) -> list:
    return get_task(task_key).units(summary_text=SUMMARY, summary_sentences=SENTENCES)


def answer(*entries: tuple[int, object, str]) -> str:
    return json.dumps({"judgements": [{"unit": u, "label": label, "note": note} for u, label, note in entries]})


def test_it_builds_the_prompt_from_the_tasks_own_definition_and_the_guidelines() -> None:
    task = get_task("sentence_consistency")
    prompt = prompt_build(
        task,
        guidelines="Numbers must match exactly.",
        document_text=DOCUMENT,
        summary_text=SUMMARY,
        units=units(task.key),
    )
    user = prompt.as_list()[1]["content"]
    assert prompt.as_list()[0]["role"] == "system"
    assert "Numbers must match exactly." in user and DOCUMENT in user and SUMMARY in user
    assert task.steps[0] in user
    assert "Unit 0: The mayor opened the bridge." in user and "Unit 1: It cost five million euros." in user
    assert "Labels: yes (Yes), no (No)" in user
    assert "each with a note" in user  # the QAGS protocol asks for a reason per sentence


def test_it_hashes_every_part_of_a_request_into_the_cache_key() -> None:
    messages = prompt_build(
        get_task("factuality"), guidelines="", document_text=DOCUMENT, summary_text=SUMMARY, units=units("factuality")
    ).as_list()
    base = prompt_hash(endpoint="http://a/v1/chat/completions", model="m", messages=messages, params=ChatParams())
    assert base == prompt_hash(
        endpoint="http://a/v1/chat/completions", model="m", messages=messages, params=ChatParams()
    )
    others = {
        prompt_hash(endpoint="http://b/v1/chat/completions", model="m", messages=messages, params=ChatParams()),
        prompt_hash(endpoint="http://a/v1/chat/completions", model="n", messages=messages, params=ChatParams()),
        prompt_hash(endpoint="http://a/v1/chat/completions", model="m", messages=messages, params=ChatParams(0.7)),
        prompt_hash(endpoint="http://a/v1/chat/completions", model="m", messages=messages[:1], params=ChatParams()),
    }
    assert base not in others and len(others) == 4


def test_it_refuses_to_prompt_for_span_and_edit_tasks() -> None:
    assert not judgeable(get_task("hallucination_spans")) and not judgeable(get_task("bump"))
    with pytest.raises(ValueError, match="cannot judge"):
        prompt_build(get_task("bump"), guidelines="", document_text=DOCUMENT, summary_text=SUMMARY, units=[])


def test_it_reads_a_valid_answer_even_inside_a_code_fence() -> None:
    content = "Here you go:\n```json\n" + answer((0, "yes", "copied"), (1, "no", "five, not four")) + "\n```"
    submission = answer_parse(
        get_task("sentence_consistency"), units=units("sentence_consistency"), summary_text=SUMMARY, content=content
    )
    assert dict(submission.labels) == {0: "yes", 1: "no"}
    assert dict(submission.notes) == {0: "copied", 1: "five, not four"}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (answer((0, "maybe", "")), "'maybe' is not a choice of task 'factuality'"),
        (answer((0, 1, "")), "1 is not a choice"),
        (answer((7, "yes", "")), "unit 7 does not exist"),
        (answer(), "1 unit(s) still need a label"),
        ("I think it is faithful.", "no JSON object"),
        ("{not json}", "does not parse"),
        ('{"labels": {"0": "yes"}}', 'no "judgements" list'),
        ('{"judgements": [{"label": "yes"}]}', "names no unit number"),
        ("[" * 5000 + "{" + "}" + "]" * 5000, "judgements"),
    ],
)
def test_it_refuses_an_answer_outside_the_label_set_or_the_format_with_the_reason(content: str, reason: str) -> None:
    with pytest.raises(AnswerError) as caught:
        answer_parse(get_task("factuality"), units=units("factuality"), summary_text=SUMMARY, content=content)
    assert reason in str(caught.value)


def test_it_drops_feqa_follow_ups_whose_trigger_did_not_apply() -> None:
    task = get_task("feqa")
    # Sentence 0 is meaningful and faithful: the error-type question (3) does not apply; the model answered it.
    content = answer(
        (0, "meaningful", ""),
        (1, "grammatical", ""),
        (2, "faithful", ""),
        (3, "hallucination", ""),
        (4, "nonsensical", ""),
    )
    submission = answer_parse(task, units=units("feqa"), summary_text=SUMMARY, content=content)
    assert dict(submission.labels) == {0: "meaningful", 1: "grammatical", 2: "faithful", 4: "nonsensical"}


def test_it_refuses_the_qags_protocol_answer_without_a_note() -> None:
    with pytest.raises(AnswerError, match="need a short explanation"):
        answer_parse(
            get_task("sentence_consistency"),
            units=units("sentence_consistency"),
            summary_text=SUMMARY,
            content=answer((0, "yes", ""), (1, "no", "")),
        )


def test_it_reads_a_chat_completion_and_refuses_other_bodies() -> None:
    body = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    reply = chat_reply_parse(json.dumps(body).encode())
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == ("hi", 12, 3)
    for raw, reason in [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"choices": []}', "no choices[0].message.content"),
        (b'{"choices": [{"message": {"content": null}}]}', "no choices[0].message.content"),
        (b"[1, 2]", "no choices[0].message.content"),
    ]:
        with pytest.raises(EndpointError, match=reason.replace("[", r"\[").replace("]", r"\]")) as caught:
            chat_reply_parse(raw)
        assert caught.value.retryable
    forged = {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": -5, "completion_tokens": 1e300}}
    assert chat_reply_parse(json.dumps(forged).encode()).prompt_tokens == 0


def test_it_checks_the_parameters_naming_the_field() -> None:
    assert chat_params({"temperature": 0.5, "max_tokens": 64, "seed": None}) == ChatParams(0.5, 64, None)
    for raw, field in [
        ({"temperature": float("nan")}, "temperature"),
        ({"temperature": 9}, "temperature"),
        ({"temperature": True}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"seed": -1}, "seed"),
        ({"top_k": 3}, "unknown 'top_k'"),
    ]:
        with pytest.raises(ValueError, match=field):
            chat_params(raw)
    body = chat_body(model="m", messages=[{"role": "user", "content": "x"}], params=ChatParams(0.0, 8, None))
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "temperature": 0.0,
        "max_tokens": 8,
        "stream": False,
    }
