"""What passing an attention check means for each task: graded on what the task's `clean` stores."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.tasks import (
    CHECK_RULES,
    FAITHFUL,
    STUDY_TASKS,
    TASKS,
    UNFAITHFUL,
    CheckTarget,
    Submission,
    get_task,
)

SUMMARY = "Emma Morano died in Italy. She was 118."
SENTENCES = [[0, 26], [27, 39]]
VERBATIM = CheckTarget(SUMMARY, FAITHFUL)
SWAPPED = CheckTarget(SUMMARY, UNFAITHFUL, (35, 38))  # "118" in the second sentence


def grade(task_key: str, target: CheckTarget, *, payload: dict | None = None, **parts: Any) -> tuple[bool | None, str]:
    task = get_task(task_key)
    units = task.units(summary_text=target.summary_text, summary_sentences=SENTENCES, payload=payload)
    judgements = task.clean(Submission(**parts), units=units, summary_text=target.summary_text)
    outcome = task.check_outcome(target, judgements=judgements, units=units)
    return outcome.passed, outcome.reason


def test_it_defines_a_rule_for_every_task() -> None:
    assert set(CHECK_RULES) == set(TASKS) >= set(STUDY_TASKS)
    for key in STUDY_TASKS:
        assert set(get_task(key).checks) <= {FAITHFUL, UNFAITHFUL}
        assert get_task(key).check_outcome(VERBATIM, judgements=[], units=[]).reason


def test_it_passes_a_factuality_check_only_with_the_expected_label() -> None:
    assert grade("factuality", VERBATIM, labels={0: "yes"})[0] is True
    assert grade("factuality", VERBATIM, labels={0: "no"}) == (
        False,
        "a faithful summary was not judged faithful (units 0)",
    )
    assert grade("factuality", SWAPPED, labels={0: "no"})[0] is True
    assert grade("factuality", SWAPPED, labels={0: "yes"})[0] is False


def test_it_needs_every_sentence_supported_or_the_corrupted_one_not_in_the_qags_protocol() -> None:
    notes = {0: "copied", 1: "copied"}
    assert grade("sentence_consistency", VERBATIM, labels={0: "yes", 1: "yes"}, notes=notes)[0] is True
    assert grade("sentence_consistency", VERBATIM, labels={0: "yes", 1: "no"}, notes=notes)[0] is False
    assert grade("sentence_consistency", SWAPPED, labels={0: "yes", 1: "no"}, notes=notes)[0] is True
    # "no" on the wrong sentence does not find the swapped number
    assert grade("sentence_consistency", SWAPPED, labels={0: "no", 1: "yes"}, notes=notes) == (
        False,
        "the sentence with the error was judged faithful (units 1)",
    )
    # without a span, any sentence judged unsupported passes
    anywhere = CheckTarget(SUMMARY, UNFAITHFUL)
    assert grade("sentence_consistency", anywhere, labels={0: "no", 1: "yes"}, notes=notes)[0] is True


def test_it_grades_feqa_by_meaning_and_faithfulness_of_each_sentence() -> None:
    good = {0: "meaningful", 1: "grammatical", 2: "faithful", 4: "meaningful", 5: "grammatical", 6: "faithful"}
    assert grade("feqa", VERBATIM, labels=good)[0] is True
    assert grade("feqa", SWAPPED, labels=good)[0] is False
    caught = {**good, 6: "unfaithful", 7: "contradiction"}
    assert grade("feqa", SWAPPED, labels=caught)[0] is True
    assert grade("feqa", VERBATIM, labels=caught)[0] is False
    nonsense = {0: "meaningful", 1: "grammatical", 2: "faithful", 4: "nonsensical"}
    assert grade("feqa", SWAPPED, labels=nonsense)[0] is True


def test_it_accepts_most_or_all_for_a_verbatim_sentence_and_anything_but_all_for_a_corrupted_one() -> None:
    payload = {
        "sentences": [
            {"text": SUMMARY[0:26], "start": 0, "end": 26, "top": []},
            {"text": SUMMARY[27:39], "start": 27, "end": 39, "top": []},
        ]
    }
    assert grade("entailment", VERBATIM, payload=payload, labels={0: "all", 1: "most"})[0] is True
    assert grade("entailment", VERBATIM, payload=payload, labels={0: "all", 1: "some"})[0] is False
    assert grade("entailment", SWAPPED, payload=payload, labels={0: "none", 1: "all"})[0] is False
    assert grade("entailment", SWAPPED, payload=payload, labels={0: "all", 1: "most"})[0] is True


def test_it_needs_the_swapped_span_marked_in_the_maynez_protocol() -> None:
    assert grade("hallucination_spans", VERBATIM, spans=[]) == (True, "nothing marked in a faithful summary")
    assert grade("hallucination_spans", VERBATIM, spans=[{"start": 0, "end": 4, "label": "extrinsic"}])[0] is False
    assert grade("hallucination_spans", SWAPPED, spans=[{"start": 0, "end": 4, "label": "intrinsic"}]) == (
        False,
        "the span with the error 35-38 ('118') was not marked",
    )
    overlapping = [{"start": 0, "end": 4, "label": "intrinsic"}, {"start": 31, "end": 36, "label": "extrinsic"}]
    assert grade("hallucination_spans", SWAPPED, spans=overlapping)[0] is True
    assert grade("hallucination_spans", SWAPPED, spans=[])[0] is False
    # ends touching the span do not overlap it
    assert grade("hallucination_spans", SWAPPED, spans=[{"start": 31, "end": 35, "label": "intrinsic"}])[0] is False


def answer(start: int, end: int, text: str) -> dict:
    return {"start": start, "end": end, "text": text, "unanswerable": False}


QGQA_PAYLOAD = {
    "questions": [
        {
            "question": "Where did Emma Morano die?",
            "kept": True,
            "summary_answer": answer(20, 25, "Italy"),
            "source_answer": answer(50, 55, "Italy"),
        },
        {
            "question": "How old was she?",
            "kept": True,
            "summary_answer": answer(35, 38, "118"),
            "source_answer": answer(80, 83, "117"),
        },
    ]
}


def test_it_grades_qgqa_on_the_questions_the_check_decides() -> None:
    labels = {0: "correct", 1: "correct", 2: "correct", 3: "incorrect"}
    assert grade("qgqa", VERBATIM, payload=QGQA_PAYLOAD, labels=labels) == (
        True,
        "1 decided statement(s) judged as expected",
    )
    assert grade("qgqa", SWAPPED, payload=QGQA_PAYLOAD, labels=labels)[0] is True
    assert grade("qgqa", SWAPPED, payload=QGQA_PAYLOAD, labels={**labels, 3: "dont_know"})[0] is False
    assert grade("qgqa", VERBATIM, payload=QGQA_PAYLOAD, labels={**labels, 1: "incorrect"})[0] is False
    elsewhere = CheckTarget(SUMMARY, UNFAITHFUL, (0, 4))  # no question's summary answer lies there
    assert grade("qgqa", elsewhere, payload=QGQA_PAYLOAD, labels=labels) == (
        None,
        "no question asks about what the check decides",
    )


def test_it_grades_bertscore_only_on_verbatim_checks_and_bump_not_at_all() -> None:
    payload = {
        # The stored token shape of the BERTScore explainer (see tests/protocols/test_alignment.py).
        "tokens": [
            {"start": 5, "end": 11, "text": "Morano", "similarity": 1, "aligned": [3, 9], "aligned_text": "Morano"},
            {"start": 20, "end": 25, "text": "Italy", "similarity": 1, "aligned": [9, 13], "aligned_text": "Rome"},
        ],
        "words": [
            {
                "text": "Morano",
                "start": 5,
                "end": 11,
                "stopword": False,
                "punct": False,
                "tokens": [0],
                "similarity": 1,
            },
            {
                "text": "Italy",
                "start": 20,
                "end": 25,
                "stopword": False,
                "punct": False,
                "tokens": [1],
                "similarity": 1,
            },
        ],
    }
    assert grade("bertscore", VERBATIM, payload=payload, labels={0: "correct", 1: "incorrect"})[0] is True
    assert grade("bertscore", VERBATIM, payload=payload, labels={0: "dont_know", 1: "correct"})[0] is False
    assert grade("bertscore", SWAPPED, payload=payload, labels={0: "correct", 1: "correct"}) == (
        None,
        "task 'bertscore' grades no unfaithful checks",
    )
    assert get_task("bump").checks == ()
    assert get_task("bump").check_outcome(VERBATIM, judgements=[]).passed is None


@pytest.mark.parametrize("key", ["factuality", "sentence_consistency", "feqa", "hallucination_spans", "entailment"])
def test_it_fails_a_check_nobody_answered(key: str) -> None:
    task = get_task(key)
    payload = {"sentences": [{"text": SUMMARY, "start": 0, "end": len(SUMMARY), "top": []}]}
    units = task.units(summary_text=SUMMARY, summary_sentences=SENTENCES, payload=payload)
    assert task.check_outcome(SWAPPED, judgements=[], units=units).passed is False
