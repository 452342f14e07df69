"""QAGS human judgements (Wang et al., ACL 2020): per summary sentence, each worker's yes/no.

PATH is a JSON-lines file, one summary per line:

    {"article": "...", "summary_sentences": [{"sentence": "...",
        "responses": [{"worker_id": 0, "response": "yes"}, {"worker_id": 3, "response": "no"}]}]}

The summary is its sentences joined by spaces (their offsets are the summary's sentences). Every
response becomes a judgement of the external annotator with that worker id in task
`sentence_consistency` (unit = sentence index). The summary's human score `QAGS` is QAGS's: the mean
over sentences of the majority vote (yes = 1, no = 0; a tie counts as no). Documents are identified
by a hash of the article text, so two lines about the same article share it; the system is the file
name without its extension (the data sets come one file per summarizer and corpus).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from corpus.importers.records import (
    DocumentRecord,
    ImportBatch,
    ImportFormatError,
    LabelRecord,
    Origin,
    SummaryRecord,
    joined_with_offsets,
    json_lines,
)

TASK = "sentence_consistency"
HUMAN_SCORE = "QAGS"
RESPONSES = {"yes": 1.0, "no": 0.0}


def article_id(text: str) -> str:
    # surrogatepass: a lone surrogate gets a hash too, so that the record's own check reports it.
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sentence_majority(responses: list[str]) -> float:
    """1 when more workers said yes than no, else 0 (a tie is not support)."""
    counts = Counter(responses)
    return 1.0 if counts["yes"] > counts["no"] else 0.0


def _line(data: Any, origin: Origin) -> tuple[str, list[str], list[list[tuple[str, str]]]]:
    """The article, the sentences and each sentence's (worker, response) list of one line."""
    if not isinstance(data, dict):
        raise origin.error(f"expected a JSON object, got {type(data).__name__}", "(line)")
    for key in ("article", "summary_sentences"):
        if key not in data:
            raise origin.error("this field is required (is this a QAGS judgement file?)", key)
    unknown = sorted(set(data) - {"article", "summary_sentences"})
    if unknown:
        raise origin.error("unknown field (allowed: article, summary_sentences)", unknown[0])
    if not isinstance(data["article"], str):
        raise origin.error(f"expected a string, got {type(data['article']).__name__}", "article")
    sentences_data = data["summary_sentences"]
    if not isinstance(sentences_data, list) or not sentences_data:
        raise origin.error("expected a non-empty list of sentences", "summary_sentences")
    sentences, responses = [], []
    for index, entry in enumerate(sentences_data):
        prefix = f"summary_sentences[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("sentence"), str):
            raise origin.error("expected an object with a string 'sentence'", prefix)
        if not entry["sentence"].strip():
            raise origin.error("must not be empty", f"{prefix}.sentence")
        given = entry.get("responses")
        if not isinstance(given, list):
            raise origin.error("expected a list of {worker_id, response}", f"{prefix}.responses")
        pairs: list[tuple[str, str]] = []
        for position, response in enumerate(given):
            where = f"{prefix}.responses[{position}]"
            if not isinstance(response, dict):
                raise origin.error("expected an object with 'worker_id' and 'response'", where)
            worker = response.get("worker_id")
            if isinstance(worker, bool) or not isinstance(worker, int | str) or str(worker) == "":
                raise origin.error(f"expected an integer worker id, got {worker!r}", f"{where}.worker_id")
            value = response.get("response")
            if value not in RESPONSES:
                raise origin.error(f"expected 'yes' or 'no', got {value!r}", f"{where}.response")
            if any(str(worker) == seen for seen, _ in pairs):
                raise origin.error(f"worker {worker} answers this sentence twice", f"{where}.worker_id")
            pairs.append((str(worker), value))
        sentences.append(entry["sentence"].strip())
        responses.append(pairs)
    return data["article"], sentences, responses


def parse(path: Path) -> ImportBatch:
    path = Path(path)
    if not path.is_file():
        raise ImportFormatError(file=str(path), line=None, field=None, message="expected a QAGS JSON-lines file")
    system = path.name.split(".")[0] or "summary"
    batch = ImportBatch(source_format="qags")
    documents: dict[str, DocumentRecord] = {}
    for origin, data in json_lines(path, "one summary per line"):
        number = origin.line
        article, sentences, responses = _line(data, origin)
        key = article_id(article)
        document = documents.get(key)
        if document is None:
            document = documents[key] = DocumentRecord(
                external_id=key, text=article, title=article[:80], meta={"source": "QAGS"}, origin=origin
            )
        text, offsets = joined_with_offsets(sentences)
        summary = SummaryRecord(
            external_id=f"{system}-line{number}",
            system=system,
            text=text,
            origin=origin,
            sentences=offsets,
            meta={"line": number},
        )
        majorities = [sentence_majority([value for _, value in pairs]) for pairs in responses if pairs]
        if majorities:
            summary.human_scores[HUMAN_SCORE] = sum(majorities) / len(majorities)
        by_worker: dict[str, list[tuple[int, str]]] = {}
        for index, pairs in enumerate(responses):
            for worker, value in pairs:
                by_worker.setdefault(worker, []).append((index, value))
        summary.labels = [
            LabelRecord(annotator=worker, task=TASK, units=units, origin=Origin(str(path), number, "responses"))
            for worker, units in sorted(by_worker.items())
        ]
        document.summaries.append(summary)
    if not documents:
        raise ImportFormatError(file=str(path), line=None, field=None, message="the file holds no summaries")
    batch.documents = list(documents.values())
    return batch
