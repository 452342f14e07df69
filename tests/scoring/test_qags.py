"""QAGS with tiny QG/QA models, and its cloze fallback with the packaged models (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from corpus.nlp import Phrase
from scoring.explainers.base import DocumentInput, SummaryInput
from scoring.explainers.qags import NO_CANDIDATES, NOT_ANSWERED_FROM_SUMMARY, QagsConfig, QagsExplainer
from scoring.explainers.qags_cloze import ClozeConfig, ClozeQagsExplainer, cloze_question
from scoring.explainers.squad import token_f1
from scoring.nlp_models import ExtractiveQA, QuestionGenerator
from tests.scoring.conftest import TINY_QUESTION
from tests.scoring.inputs import explainer_inputs

DOCUMENT = (
    "Emma Morano, the world's oldest person, has died in Italy at the age of 117. "
    "She was born on 29 November 1899 in Piedmont. "
    "Her doctor said she died peacefully at her home in Verbania."
)
FAITHFUL = "Emma Morano has died in Italy."
HALLUCINATED = "Maria Rossi has died in France."


def inputs(nlp: Any, summaries: list[str]) -> tuple[list[DocumentInput], list[list[SummaryInput]]]:
    return explainer_inputs(nlp, DOCUMENT, summaries)


def qags(tiny_models: dict[str, str], nlp: Any, **config: Any) -> QagsExplainer:
    return QagsExplainer(
        QuestionGenerator(tiny_models["qg"]),
        ExtractiveQA(tiny_models["qa"]),
        nlp,
        QagsConfig(tiny_models["qg"], tiny_models["qa"], **config),
    )


def test_it_generates_filters_and_answers_questions(nlp: Any, tiny_models: dict[str, str]) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL])
    [[result]] = qags(tiny_models, nlp).explain_batch(documents, summaries)
    questions = result.payload["questions"]
    # Candidates: "Emma Morano" (PERSON) and "Italy" (GPE); the tiny QG asks the same question about both.
    assert [q["candidate"]["text"] for q in questions] == ["Emma Morano", "Italy"]
    assert [q["candidate"]["type"] for q in questions] == ["PERSON", "GPE"]
    assert [q["question"] for q in questions] == [TINY_QUESTION, TINY_QUESTION]
    kept, duplicate = questions
    assert kept["kept"] and not duplicate["kept"] and duplicate["filter_reason"] == "duplicate"
    assert duplicate["summary_answer"] is None and duplicate["source_answer"] is None and duplicate["f1"] is None
    summary_answer, source_answer = kept["summary_answer"], kept["source_answer"]
    assert FAITHFUL[summary_answer["start"] : summary_answer["end"]] == summary_answer["text"] == "Emma"
    assert DOCUMENT[source_answer["start"] : source_answer["end"]] == source_answer["text"] == "Emma"
    assert not summary_answer["unanswerable"] and not source_answer["unanswerable"]
    assert kept["f1"] == token_f1(summary_answer["text"], source_answer["text"]) == 1.0
    assert result.score == 1.0 and result.scores == {"f1": 1.0}
    assert result.payload["variant"] == "qags"
    assert set(result.payload["models"]) == {"qg", "qa"}


def test_it_drops_questions_the_summary_cannot_answer(nlp: Any, tiny_models: dict[str, str]) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL])
    [[result]] = qags(tiny_models, nlp, null_threshold=-1.0).explain_batch(documents, summaries)
    first = result.payload["questions"][0]
    assert not first["kept"] and first["filter_reason"] == NOT_ANSWERED_FROM_SUMMARY
    assert first["summary_answer"] == {"start": None, "end": None, "text": "", "unanswerable": True}
    assert result.score is None and result.error == "no generated question survived the QAGS filters"


def test_it_leaves_qags_undefined_for_a_summary_without_candidates(nlp: Any, tiny_models: dict[str, str]) -> None:
    documents, summaries = inputs(nlp, ["😀😀😀", "   ", FAITHFUL])
    no_candidates, empty, normal = qags(tiny_models, nlp).explain_batch(documents, summaries)[0]
    assert no_candidates.score is None and no_candidates.error == NO_CANDIDATES  # never 0
    assert no_candidates.payload["questions"] == []
    assert empty.error == "the summary is empty"
    assert normal.score is not None


@pytest.mark.parametrize(
    ("summary", "span", "kind", "question"),
    [
        ("Emma Morano has died in Italy.", "Emma Morano", "PERSON", "who has died in Italy?"),
        ("Emma Morano has died in Italy.", "Italy", "GPE", "Emma Morano has died in where?"),
        ("She was born in 1899!", "1899", "DATE", "She was born in when?"),
        ("The cat sat on the mat.", "The cat", "NP", "what sat on the mat?"),
    ],
)
def test_it_turns_a_candidate_into_a_cloze_question(summary: str, span: str, kind: str, question: str) -> None:
    start = summary.index(span)
    phrase = Phrase(start, start + len(span), span, kind, (0, len(summary)))
    assert cloze_question(summary, phrase) == question


def test_it_answers_cloze_questions_from_same_type_source_candidates(nlp: Any, sentence_embedder: Any) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL, HALLUCINATED, "😀😀😀"])
    explainer = ClozeQagsExplainer(sentence_embedder, nlp, ClozeConfig("packaged:minilm"))
    faithful, hallucinated, no_candidates = explainer.explain_batch(documents, summaries)[0]
    assert faithful.payload["variant"] == "qags_cloze"
    by_candidate = {q["candidate"]["text"]: q for q in faithful.payload["questions"]}
    emma = by_candidate["Emma Morano"]
    assert emma["question"] == "who has died in Italy?"
    assert emma["summary_answer"] == {"start": 0, "end": 11, "text": "Emma Morano", "unanswerable": False}
    source = emma["source_answer"]
    assert DOCUMENT[source["start"] : source["end"]] == source["text"] == "Emma Morano"
    assert emma["f1"] == 1.0 and emma["similarity"] >= 0.5
    assert faithful.score == pytest.approx(1.0)
    # "Maria Rossi" and "France": no same-type source candidate with the same name can match.
    assert hallucinated.score is not None and hallucinated.score < faithful.score
    for question in hallucinated.payload["questions"]:
        answer = question["source_answer"]
        if question["kept"] and not answer["unanswerable"]:
            assert DOCUMENT[answer["start"] : answer["end"]] == answer["text"]
    assert no_candidates.score is None and no_candidates.error == NO_CANDIDATES


def test_it_marks_a_cloze_answer_below_the_threshold_unanswerable(nlp: Any, sentence_embedder: Any) -> None:
    documents, summaries = inputs(nlp, [FAITHFUL])
    explainer = ClozeQagsExplainer(sentence_embedder, nlp, ClozeConfig("packaged:minilm", threshold=1.01))
    [[result]] = explainer.explain_batch(documents, summaries)
    for question in result.payload["questions"]:
        assert question["source_answer"]["unanswerable"] and question["source_answer"]["start"] is None
        assert question["f1"] == 0.0
    assert result.score == 0.0
