"""The evidence an annotator sees under a condition (protocols.conditions): hidden carries none, shuffled the
same amount at other places, the same for every view of an item in a condition; the within-annotator order."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from protocols.conditions import (
    HIDDEN,
    SHOWN,
    SHUFFLED,
    block_of,
    condition_order,
    units_under_evidence,
)
from protocols.tasks import Unit, entailment_units, qgqa_units

DOCUMENT = (
    "Emma Morano, the world's oldest person, died in Italy. She was born in 1899 in Piedmont. "
    "Her doctor said she ate raw eggs every day. The mayor of Verbania praised her. "
    "She had lived alone since 1938. Her nephew was with her."
)
SUMMARY = "The world's oldest person died in Italy aged 117."


def _sentences(text: str) -> list[list[int]]:
    spans, start = [], 0
    for index, char in enumerate(text):
        if char == "." and (index + 1 == len(text) or text[index + 1] == " "):
            spans.append([start, index + 1])
            start = index + 2
    return spans


DOCUMENT_SENTENCES = _sentences(DOCUMENT)


def _word(text: str, start: int, source: str) -> Unit:
    at = DOCUMENT.index(source)
    return Unit(
        index=start,
        text=text,
        start=start,
        end=start + len(text),
        extra={
            "aligned": [[at, at + len(source)]],
            "aligned_text": source,
            "similarity": 0.9,
            "alignment": {
                "word": start,
                "start": start,
                "end": start + len(text),
                "text": text,
                "score": 0.9,
                "sources": [[at, at + len(source), source]],
                "pieces": [
                    {
                        "start": start,
                        "end": start + len(text),
                        "text": text,
                        "similarity": 0.9,
                        "source": [at, at + len(source), source],
                        "aligned_text": source,
                    }
                ],
            },
        },
    )


BERTSCORE_UNITS = [_word("oldest", 10, "oldest"), _word("person", 17, "person"), _word("Italy", 34, "Italy")]
ENTAILMENT_UNITS = entailment_units(
    {
        "sentences": [
            {
                "text": SUMMARY,
                "start": 0,
                "end": len(SUMMARY),
                "top": [
                    {"index": 0, "start": 0, "end": DOCUMENT_SENTENCES[0][1], "similarity": 0.8},
                    {"index": 1, "start": DOCUMENT_SENTENCES[1][0], "end": DOCUMENT_SENTENCES[1][1], "similarity": 0.5},
                ],
            }
        ]
    }
)
QGQA_UNITS = qgqa_units(
    {
        "questions": [
            {
                "question": "Who died in Italy?",
                "kept": True,
                "summary_answer": {"start": 0, "end": 25, "text": SUMMARY[:25], "unanswerable": False},
                "source_answer": {"start": 0, "end": 11, "text": "Emma Morano", "unanswerable": False},
                "f1": 0.0,
            },
            {
                "question": "How old was she?",
                "kept": True,
                "summary_answer": {"start": 0, "end": None, "text": "", "unanswerable": True},
                "source_answer": {"start": None, "end": None, "text": "", "unanswerable": True},
                "f1": 1.0,
            },
        ]
    }
)
UNITS = {"bertscore": BERTSCORE_UNITS, "entailment": ENTAILMENT_UNITS, "qgqa": QGQA_UNITS}


def under(task: str, evidence: str, seed: str = "item 1 condition 2") -> list[Unit]:
    return units_under_evidence(
        task_key=task,
        units=UNITS[task],
        evidence=evidence,
        seed=seed,
        summary_text=SUMMARY,
        document_text=DOCUMENT,
        document_sentences=DOCUMENT_SENTENCES,
    )


def evidence_of(task: str, unit: Unit) -> Any:
    if task == "bertscore":
        return (unit.extra["aligned"], unit.extra["alignment"]["sources"])
    if task == "qgqa":
        return (unit.extra["summary_answer"], unit.extra["source_answer"])
    return unit.extra["top"]


@pytest.mark.parametrize("task", sorted(UNITS))
def test_it_shows_the_units_unchanged_when_the_evidence_is_shown(task: str) -> None:
    assert under(task, SHOWN) == UNITS[task]


@pytest.mark.parametrize("task", sorted(UNITS))
def test_it_keeps_the_units_but_none_of_the_metrics_evidence_when_hidden(task: str) -> None:
    hidden = under(task, HIDDEN)
    assert [(u.index, u.text, u.prompt) for u in hidden] == [(u.index, u.text, u.prompt) for u in UNITS[task]]
    for unit in hidden:
        if task == "bertscore":
            assert unit.extra["aligned"] == [] and unit.extra["aligned_text"] == ""
            assert unit.extra["similarity"] is None and unit.extra["alignment"]["sources"] == []
            assert all(p["source"] is None and p["similarity"] is None for p in unit.extra["alignment"]["pieces"])
        elif task == "qgqa":
            assert unit.extra["summary_answer"] is None and unit.extra["source_answer"] is None
            assert unit.extra["f1"] is None
        else:
            assert unit.extra["top"] == []
    # No text of the evidence is left anywhere in the units (what a worker could read in the payload).
    assert "Emma Morano" not in repr(hidden) and "'oldest', 'oldest'" not in repr(hidden)


def test_it_moves_every_bertscore_alignment_to_as_many_other_source_words() -> None:
    shuffled = under("bertscore", SHUFFLED)
    for before, after in zip(BERTSCORE_UNITS, shuffled, strict=True):
        sources = after.extra["alignment"]["sources"]
        assert len(sources) == len(before.extra["alignment"]["sources"])
        for start, end, text in sources:
            assert DOCUMENT[start:end] == text  # a real word of the document, at its place
        assert after.extra["aligned"] == [[start, end] for start, end, _ in sources]
        assert after.extra["alignment"]["pieces"][0]["source"] == sources[0]
    assert [evidence_of("bertscore", u) for u in shuffled] != [evidence_of("bertscore", u) for u in BERTSCORE_UNITS]


def test_it_draws_as_many_distinct_source_sentences_for_entailment() -> None:
    (unit,) = under("entailment", SHUFFLED)
    top = unit.extra["top"]
    assert len(top) == len(ENTAILMENT_UNITS[0].extra["top"])
    assert len({entry["index"] for entry in top}) == len(top)
    for entry in top:
        assert [entry["start"], entry["end"]] == DOCUMENT_SENTENCES[entry["index"]]
    assert [entry["similarity"] for entry in top] == [0.8, 0.5]  # the ranks as stored


def test_it_moves_qgqa_answers_to_spans_of_as_many_words_and_keeps_unanswerable_ones() -> None:
    shuffled = under("qgqa", SHUFFLED)
    first, second = shuffled[0].extra, shuffled[2].extra
    assert shuffled[0].extra == {**shuffled[1].extra, "statement": shuffled[0].extra["statement"]}
    assert DOCUMENT[first["source_answer"]["start"] : first["source_answer"]["end"]] == first["source_answer"]["text"]
    assert SUMMARY[first["summary_answer"]["start"] : first["summary_answer"]["end"]] == first["summary_answer"]["text"]
    assert len(first["source_answer"]["text"].split()) == 2  # "Emma Morano"
    assert second["summary_answer"]["unanswerable"] and second["source_answer"]["unanswerable"]


@pytest.mark.parametrize("task", sorted(UNITS))
def test_it_shuffles_the_same_way_for_the_same_item_and_condition_only(task: str) -> None:
    assert under(task, SHUFFLED) == under(task, SHUFFLED)
    others = {
        repr([evidence_of(task, u) for u in under(task, SHUFFLED, seed=f"item {n} condition 2")]) for n in range(8)
    }
    assert len(others) > 1


def test_it_leaves_tasks_without_metric_evidence_alone() -> None:
    units = [Unit(index=0, text=SUMMARY, start=0, end=len(SUMMARY))]
    assert units_under_evidence(task_key="factuality", units=units, evidence=HIDDEN, seed="x") == units


def test_it_refuses_an_unknown_evidence() -> None:
    with pytest.raises(ValueError, match="unknown evidence 'blurred'"):
        units_under_evidence(task_key="bertscore", units=BERTSCORE_UNITS, evidence="blurred", seed="x")


def test_it_rotates_the_conditions_as_a_latin_square() -> None:
    conditions = ["a", "b", "c"]
    rows = [condition_order(conditions, first) for first in range(6)]
    assert rows[:3] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert rows[3:] == rows[:3]
    for place in range(3):  # each condition once in each place
        assert sorted(row[place] for row in rows[:3]) == conditions


@pytest.mark.parametrize("total, conditions", [(4, 2), (5, 2), (7, 3), (2, 2), (1, 3), (20, 6)])
def test_it_cuts_an_annotators_items_into_blocks_as_equal_as_possible(total: int, conditions: int) -> None:
    blocks = [block_of(taken, total=total, conditions=conditions) for taken in range(total)]
    assert blocks == sorted(blocks)
    sizes = Counter(blocks)
    assert max(sizes.values()) - min(sizes.values()) <= 1
    if total >= conditions:
        assert set(blocks) == set(range(conditions))
