"""QAGS: question generation and answering (Wang et al. 2020, seed 002; thesis 3.3). No Django here.

1. Answer candidates: spaCy named entities and noun chunks of the summary (at most `max_candidates`,
   in text order).
2. An answer-conditional QG model asks a question about each candidate, reading the summary.
3. Filters, in this order: cut everything after the first "?"; drop questions without "?", with fewer
   than three tokens, duplicates; then drop those the QA model cannot answer from the summary.
4. The extractive QA model (SQuAD 2.0: "unanswerable" allowed) answers the kept questions from the
   summary and from the source document.
5. Answer similarity is SQuAD v2 token F1; the score is the mean F1 over the kept questions. With no
   candidate or no surviving question the score is undefined (None with the reason), never 0.
Payload schema: docs/EXPLANATIONS.md, section `qags`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from corpus.nlp import Phrase, phrases
from scoring.explainers.base import EMPTY_SUMMARY, DocumentInput, Explained, SummaryInput, mean, rounded
from scoring.explainers.squad import token_f1
from scoring.nlp_models import Answer, ExtractiveQA, QuestionGenerator

if TYPE_CHECKING:
    from spacy.language import Language

METRIC = "qags"
CODE_VERSION = "1"
NO_CANDIDATES = "the summary has no named entities or noun chunks, so no question can be asked"
NO_QUESTIONS = "no generated question survived the QAGS filters"
NOT_ANSWERED_FROM_SUMMARY = "the QA model finds no answer in the summary"


@dataclass(frozen=True, slots=True)
class QagsConfig:
    qg_model: str
    qa_model: str
    qg_format: str = "highlight"
    max_candidates: int = 10
    num_beams: int = 4
    questions_per_candidate: int = 1
    max_question_tokens: int = 64
    min_question_tokens: int = 3
    qa_max_length: int = 384
    qa_doc_stride: int = 128
    max_answer_tokens: int = 30
    null_threshold: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"metric": METRIC, "code_version": CODE_VERSION, **asdict(self)}


@dataclass(slots=True)
class Question:
    """One generated question with its fate; the answers stay None when it was filtered before answering."""

    question: str
    candidate: Phrase
    kept: bool = True
    filter_reason: str = ""
    summary_answer: Answer | None = None
    source_answer: Answer | None = None
    f1: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "candidate": {
                "start": self.candidate.start,
                "end": self.candidate.end,
                "text": self.candidate.text,
                "type": self.candidate.type,
            },
            "summary_answer": answer_dict(self.summary_answer),
            "source_answer": answer_dict(self.source_answer),
            "f1": rounded(self.f1),
            "kept": self.kept,
            "filter_reason": self.filter_reason,
            **self.extra,
        }


def answer_dict(answer: Answer | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    return {"start": answer.start, "end": answer.end, "text": answer.text, "unanswerable": answer.unanswerable}


def truncate_question(text: str) -> str:
    """Everything up to and including the first question mark (QAGS drops the rest)."""
    mark = text.find("?")
    return text[: mark + 1].strip() if mark >= 0 else text.strip()


def filter_questions(questions: Sequence[Question], *, min_tokens: int = 3) -> None:
    """Apply QAGS's text filters in place: no "?", too short, duplicate (of an earlier kept question)."""
    seen: set[str] = set()
    for question in questions:
        question.question = truncate_question(question.question)
        if "?" not in question.question:
            question.kept, question.filter_reason = False, "no question mark"
        elif len(question.question.split()) < min_tokens:
            question.kept, question.filter_reason = False, f"fewer than {min_tokens} tokens"
        elif question.question in seen:
            question.kept, question.filter_reason = False, "duplicate"
        else:
            seen.add(question.question)


def scored(questions: list[Question], extra_payload: dict[str, Any]) -> Explained:
    """The QAGS result: mean F1 over the kept questions, undefined when none is kept."""
    f1s = [q.f1 for q in questions if q.kept and q.f1 is not None]
    payload = {**extra_payload, "questions": [q.as_dict() for q in questions]}
    score = mean(f1s)
    if score is None:
        return Explained(score=None, scores={"f1": None}, payload=payload, error=NO_QUESTIONS)
    return Explained(score=score, scores={"f1": score}, payload=payload)


def candidates_of(nlp: Language, texts: Sequence[str], limit: int) -> list[list[Phrase]]:
    return [found[:limit] for found in phrases(nlp, texts)]


class QagsExplainer:
    def __init__(self, qg: QuestionGenerator, qa: ExtractiveQA, nlp: Language, config: QagsConfig) -> None:
        self.qg = qg
        self.qa = qa
        self.nlp = nlp
        self.config = config

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        flat = [(document, summary) for document, group in zip(documents, summaries, strict=True) for summary in group]
        candidates = candidates_of(self.nlp, [summary.text for _, summary in flat], self.config.max_candidates)
        requests = [
            (summary.text, c.start, c.end) for (_, summary), found in zip(flat, candidates, strict=True) for c in found
        ]
        generated = iter(
            self.qg.generate(
                requests,
                # Configured text (FAITHANNO_QG_FORMAT); generate raises a ValueError naming its formats for any other.
                input_format=self.config.qg_format,  # type: ignore[arg-type]
                num_beams=self.config.num_beams,
                questions_per_answer=self.config.questions_per_candidate,
                max_question_tokens=self.config.max_question_tokens,
            )
        )
        per_summary: list[list[Question]] = []
        for found in candidates:
            questions = [
                Question(g.text, candidate, extra={"qg_score": rounded(g.score)})
                for candidate in found
                for g in next(generated)
            ]
            filter_questions(questions, min_tokens=self.config.min_question_tokens)
            per_summary.append(questions)

        # QA on the summary for every question that passed the text filters, then on the source for those
        # the summary answers: two batched calls for the whole batch of documents.
        on_summary = [(q, summary) for (_, summary), qs in zip(flat, per_summary, strict=True) for q in qs if q.kept]
        answers = self._answer([(q.question, s.text) for q, s in on_summary])
        for (question, _), answer in zip(on_summary, answers, strict=True):
            question.summary_answer = answer
            if answer.unanswerable:
                question.kept, question.filter_reason = False, NOT_ANSWERED_FROM_SUMMARY
        on_source = [(q, document) for (document, _), qs in zip(flat, per_summary, strict=True) for q in qs if q.kept]
        answers = self._answer([(q.question, d.text) for q, d in on_source])
        for (question, _), answer in zip(on_source, answers, strict=True):
            question.source_answer = answer
            summary_answer = question.summary_answer.text if question.summary_answer else ""
            question.f1 = token_f1(summary_answer, answer.text)

        models = {"qg": self.qg.model_id, "qa": self.qa.model_id}
        results: list[list[Explained]] = []
        position = 0
        for group in summaries:
            row = []
            for summary in group:
                questions, found = per_summary[position], candidates[position]
                position += 1
                if not summary.text.strip():
                    row.append(Explained.undefined(EMPTY_SUMMARY))
                elif not found:
                    payload = {"variant": METRIC, "questions": [], "models": models}
                    row.append(Explained(score=None, scores={"f1": None}, payload=payload, error=NO_CANDIDATES))
                else:
                    row.append(scored(questions, {"variant": METRIC, "models": models}))
            results.append(row)
        return results

    def _answer(self, pairs: list[tuple[str, str]]) -> list[Answer]:
        return self.qa.answer(
            pairs,
            max_length=self.config.qa_max_length,
            doc_stride=self.config.qa_doc_stride,
            max_answer_tokens=self.config.max_answer_tokens,
            null_threshold=self.config.null_threshold,
        )
