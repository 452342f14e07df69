"""QAGS (cloze fallback): QAGS's question/answer evidence without QG or QA models. No Django here.

Stored under its own metric name, "qags_cloze", and shown as "QAGS (cloze fallback)", never as QAGS
(DESIGN.md section 3). For each answer candidate of the summary (spaCy entities and noun chunks, as QAGS):
- question = the summary sentence with the candidate replaced by a wh-word chosen from its type
  ("Who has died in Italy?"); the summary answer is the candidate itself;
- source answer = the source candidate of the same type whose context (the words around it, with the
  candidate replaced by the same wh-word) is most similar to the question's context, cut the same way
  (sentence-embedding cosine); "unanswerable" when no candidate of that type reaches `threshold`.
  Contexts are `context_words` words either side within the sentence: local context is what tells
  candidates of one sentence apart, and it keeps the embedding work small;
- QAGS's filters (no "?", fewer than three tokens, duplicates), SQuAD v2 token F1 between the two
  answers, score = mean F1 over the kept questions (undefined, with the reason, when none is kept).
Payload: as `qags` (docs/EXPLANATIONS.md) with "variant": "qags_cloze", a "similarity" per question and
the "threshold".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corpus.nlp import Phrase, phrases
from scoring.encoders import SentenceEmbedder
from scoring.explainers.base import EMPTY_SUMMARY, DocumentInput, Explained, SummaryInput, rounded
from scoring.explainers.qags import NO_CANDIDATES, Question, candidates_of, filter_questions, scored
from scoring.explainers.squad import token_f1
from scoring.metrics import QAGS_CLOZE, QAGS_CLOZE_DISPLAY_NAME
from scoring.nlp_models import Answer

if TYPE_CHECKING:
    from spacy.language import Language

METRIC = QAGS_CLOZE
DISPLAY_NAME = QAGS_CLOZE_DISPLAY_NAME
CODE_VERSION = "1"

WH_WORDS = {
    "PERSON": "who",
    "GPE": "where",
    "LOC": "where",
    "FAC": "where",
    "DATE": "when",
    "TIME": "when",
    "CARDINAL": "how many",
    "QUANTITY": "how much",
    "MONEY": "how much",
    "PERCENT": "how much",
    "ORDINAL": "which",
}
DEFAULT_WH_WORD = "what"  # ORG, NORP, PRODUCT, EVENT, WORK_OF_ART, LAW, LANGUAGE and noun chunks


@dataclass(frozen=True, slots=True)
class ClozeConfig:
    sentence_model: str
    max_candidates: int = 10
    threshold: float = 0.5
    min_question_tokens: int = 3
    context_words: int = 10

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": METRIC,
            "code_version": CODE_VERSION,
            "sentence_model": self.sentence_model,
            "max_candidates": self.max_candidates,
            "threshold": self.threshold,
            "min_question_tokens": self.min_question_tokens,
            "context_words": self.context_words,
        }


def cloze_question(text: str, candidate: Phrase) -> str:
    """The candidate's sentence with the candidate replaced by its wh-word, ending in a question mark."""
    start, end = candidate.sentence or (0, len(text))
    wh = WH_WORDS.get(candidate.type, DEFAULT_WH_WORD)
    sentence = text[start : candidate.start] + wh + text[candidate.end : end]
    return sentence.strip().rstrip(".!;:,").rstrip() + "?"


def cloze_context(text: str, candidate: Phrase, words: int) -> str:
    """The wh-word of the candidate between up to `words` words of its sentence on either side."""
    start, end = candidate.sentence or (0, len(text))
    left = text[start : candidate.start].split()[-words:] if words else []
    right = text[candidate.end : end].split()[:words]
    return " ".join([*left, WH_WORDS.get(candidate.type, DEFAULT_WH_WORD), *right])


class ClozeQagsExplainer:
    def __init__(self, embedder: SentenceEmbedder, nlp: Language, config: ClozeConfig) -> None:
        self.embedder = embedder
        self.nlp = nlp
        self.config = config

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        flat = [summary for group in summaries for summary in group]
        candidates = candidates_of(self.nlp, [summary.text for summary in flat], self.config.max_candidates)
        source_candidates = phrases(self.nlp, [document.text for document in documents])

        # Only source candidates of a type some summary of the document asks about are embedded.
        texts: dict[str, int] = {}
        plans: list[tuple[list[Question], list[tuple[Phrase, int]]]] = []
        position = 0
        for document, group, found_in_source in zip(documents, summaries, source_candidates, strict=True):
            found_in_summaries = candidates[position : position + len(group)]
            wanted = {candidate.type for found in found_in_summaries for candidate in found}
            words = self.config.context_words
            contexts = [
                (candidate, texts.setdefault(cloze_context(document.text, candidate, words), len(texts)))
                for candidate in found_in_source
                if candidate.type in wanted
            ]
            for summary, found in zip(group, found_in_summaries, strict=True):
                questions = [Question(cloze_question(summary.text, candidate), candidate) for candidate in found]
                filter_questions(questions, min_tokens=self.config.min_question_tokens)
                for question in questions:
                    context = cloze_context(summary.text, question.candidate, words)
                    question.extra["question_index"] = texts.setdefault(context, len(texts))
                plans.append((questions, contexts))
            position += len(group)
        vectors = self.embedder.embed(list(texts))

        results: list[list[Explained]] = []
        plan_iter = iter(plans)
        for group in summaries:
            row = []
            for summary in group:
                questions, contexts = next(plan_iter)
                if not summary.text.strip():
                    row.append(Explained.undefined(EMPTY_SUMMARY))
                    continue
                for question in questions:
                    self._answer(question, contexts, vectors)
                extra: dict[str, Any] = {"variant": METRIC, "models": {"sentence": self.embedder.model_id}}
                extra["threshold"] = self.config.threshold
                if not questions:
                    row.append(Explained(None, {"f1": None}, {**extra, "questions": []}, NO_CANDIDATES))
                else:
                    row.append(scored(questions, extra))
            results.append(row)
        return results

    def _answer(self, question: Question, contexts: list[tuple[Phrase, int]], vectors: Any) -> None:
        index = question.extra.pop("question_index")
        candidate = question.candidate
        question.summary_answer = Answer(candidate.start, candidate.end, candidate.text, False, 1.0, 0.0)
        if not question.kept:
            question.summary_answer = None
            question.extra["similarity"] = None
            return
        same_type = [(phrase, row) for phrase, row in contexts if phrase.type == candidate.type]
        best: tuple[float, Phrase] | None = None
        for phrase, row in same_type:
            similarity = float(vectors[index] @ vectors[row])
            if best is None or similarity > best[0]:
                best = (similarity, phrase)
        if best is None or best[0] < self.config.threshold:
            question.source_answer = Answer(None, None, "", True, best[0] if best else 0.0, 0.0)
        else:
            phrase = best[1]
            question.source_answer = Answer(phrase.start, phrase.end, phrase.text, False, best[0], 0.0)
        question.extra["similarity"] = rounded(best[0]) if best else None
        question.f1 = token_f1(candidate.text, question.source_answer.text)
