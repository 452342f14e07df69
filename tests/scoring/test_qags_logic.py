"""QAGS's question filters and the SQuAD 2.0 span decoding, without models."""

from __future__ import annotations

from corpus.nlp import Phrase
from scoring.explainers.qags import Question, filter_questions, truncate_question
from scoring.nlp_models import best_span

CANDIDATE = Phrase(0, 5, "Italy", "GPE")


def test_it_truncates_at_the_first_question_mark() -> None:
    assert truncate_question("Who died? Where? extra") == "Who died?"
    assert truncate_question("  no mark here ") == "no mark here"


def test_it_applies_the_qags_filters_in_order() -> None:
    questions = [
        Question(text, CANDIDATE)
        for text in [
            "Who died in Italy? And where?",  # kept, truncated
            "Who died in Italy?",  # duplicate of the first after truncation
            "Italy is a country",  # no question mark
            "Who died?",  # two tokens
            "Where did Emma Morano die?",  # kept
        ]
    ]
    filter_questions(questions, min_tokens=3)
    assert [(q.question, q.kept, q.filter_reason) for q in questions] == [
        ("Who died in Italy?", True, ""),
        ("Who died in Italy?", False, "duplicate"),
        ("Italy is a country", False, "no question mark"),
        ("Who died?", False, "fewer than 3 tokens"),
        ("Where did Emma Morano die?", True, ""),
    ]


def test_it_decodes_the_best_span_inside_the_context() -> None:
    # Positions 0-1 are question tokens (outside the context); the best start there is ignored.
    start = [9.0, 0.0, 1.0, 3.0, 0.5, 0.0]
    end = [9.0, 0.0, 0.0, 0.5, 2.0, 1.0]
    context = [False, False, True, True, True, True]
    assert best_span(start, end, context, max_answer_tokens=30) == (3, 4, 5.0)
    # An end before the start never wins; a too-long span neither.
    assert best_span(start, end, context, max_answer_tokens=1) == (3, 3, 3.5)
    assert best_span(start, end, [False] * 6, max_answer_tokens=30) is None
