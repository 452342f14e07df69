"""Test data: explanation rows whose payloads follow docs/EXPLANATIONS.md.

The QGQA and entailment views read payloads that the scoring app's qags and entailment explainers
write (issue 3). These factories build such payloads from texts found in the summary and the document,
so the annotation side is tested against the documented contract, not against a fake explainer in the
product. Offsets are computed here (str.index), never typed in by hand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from corpus.models import Summary
from scoring.models import Explanation


def _span(text: str, piece: str | None) -> dict[str, Any]:
    if piece is None:
        return {"start": None, "end": None, "text": "", "unanswerable": True}
    start = text.index(piece)
    return {"start": start, "end": start + len(piece), "text": piece, "unanswerable": False}


def qags_payload(summary: Summary, questions: Sequence[tuple[str, str, str | None]], dropped: int = 0) -> dict:
    """`questions`: (question, answer in the summary, answer in the document or None = unanswerable).

    `dropped` extra questions are added as filtered out (kept = false): the task must skip them.
    """
    entries = []
    for question, summary_answer, source_answer in questions:
        entries.append(
            {
                "question": question,
                "candidate": {**_span(summary.text, summary_answer), "type": "NP"},
                "summary_answer": _span(summary.text, summary_answer),
                "source_answer": _span(summary.document.text, source_answer),
                "f1": 1.0 if source_answer == summary_answer else 0.0,
                "kept": True,
                "filter_reason": "",
            }
        )
    for number in range(dropped):
        entries.insert(
            number,
            {
                "question": f"Filtered question {number}?",
                "candidate": {**_span(summary.text, summary.text.split()[0]), "type": "NP"},
                "summary_answer": _span(summary.text, None),
                "source_answer": _span(summary.document.text, None),
                "f1": 0.0,
                "kept": False,
                "filter_reason": "unanswerable from the summary",
            },
        )
    return {"variant": "qags_cloze", "questions": entries, "models": {"qg": "cloze", "qa": "cloze"}}


def entailment_payload(summary: Summary, tops: Sequence[Sequence[int]]) -> dict:
    """One entry per summary sentence; `tops[i]` lists document sentence indexes, most similar first."""
    document = summary.document
    sentences = []
    for (start, end), top in zip(summary.sentences, tops, strict=True):
        sentences.append(
            {
                "start": start,
                "end": end,
                "text": summary.text[start:end],
                "top": [
                    {
                        "index": index,
                        "start": document.sentences[index][0],
                        "end": document.sentences[index][1],
                        "similarity": round(0.9 - 0.1 * rank, 2),
                    }
                    for rank, index in enumerate(top)
                ],
                "entailment": {"s2s": None, "d2s": None, "top2s": None},
                "s2s_best": None,
            }
        )
    return {
        "k": 3,
        "sentences": sentences,
        "nli": {"model": "", "computed": False, "reason": "no NLI model configured", "entailment_index": None},
    }


def explanation_create(
    summary: Summary, metric: str, payload: dict, score: float | None = 0.5, error: str = ""
) -> Explanation:
    config = {"test_factory": True, "metric": metric}
    return Explanation.objects.create(
        summary=summary,
        metric=metric,
        config=config,
        config_hash=hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest(),
        model_ids={},
        code_version="test",
        score=score,
        scores={},
        payload=payload,
        error=error,
    )


def explain_dataset_for_qgqa_and_entailment(summaries: Sequence[Summary]) -> None:
    """Give every non-empty summary a qags_cloze and an entailment explanation built from its own words."""
    for summary in summaries:
        if not summary.text.strip():
            # As the explainers do: an empty summary gets a row with the reason and no score.
            for metric in ("qags_cloze", "entailment"):
                explanation_create(summary, metric, {}, score=None, error="empty summary")
            continue
        words = summary.text.split()
        document_words = summary.document.text.split()
        questions = [
            (f"What does the summary say first about {words[1]}?", words[0], document_words[0]),
            (f"What else does the summary say ({words[-1]})?", words[2], None),
        ]
        explanation_create(summary, "qags_cloze", qags_payload(summary, questions, dropped=1))
        count = len(summary.document.sentences)
        tops = [[(i + r) % count for r in range(min(3, count))] for i in range(len(summary.sentences))]
        explanation_create(summary, "entailment", entailment_payload(summary, tops), score=None)
