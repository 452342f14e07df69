"""FRANK (Pagnoni et al., NAACL 2021): 2,246 CNN/DM and XSum summaries with human factuality judgements.

PATH is the folder of artidoro/frank's data:
- human_annotations.json: per (article hash, model_name) the human Factuality (0-1) and the error
  category scores (RelE, EntE, CircE, OutE, GramE, CorefE, LinkE, Other and their groups), the split
  (test/valid) and the dataset (cnndm/bbc);
- baseline_factuality_metrics_outputs.json: every baseline metric's score of the same summaries;
- articles/<hash>.json (optional; in the repository's first commit): the article (`article_lines`)
  and each system's summary (`<model_name>`, with its sentences in `<model_name>_lines`).
Summaries whose article file is missing are imported by id, without text (the scores are complete).

Documents are the articles (id = hash, which is the BBC id for XSum); summaries are the judged model
outputs (id and system = model_name); FRANK's `split` and `dataset` go to the summary's meta.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from corpus.importers.records import (
    DocumentRecord,
    ImportBatch,
    ImportFormatError,
    Origin,
    SummaryRecord,
    finite_score,
    joined_with_offsets,
)

HUMAN_FILE = "human_annotations.json"
METRICS_FILE = "baseline_factuality_metrics_outputs.json"
ARTICLES_FOLDER = "articles"
NON_SCORE_FIELDS = {"hash", "model_name", "dataset", "split"}
# FRANK's Flip_<category> fields are 1 - <category>, kept upstream for its plots; they add no information.
DERIVED_PREFIX = "Flip_"
# The error categories of FRANK's typology (Pagnoni et al., 2021, Table 1) and their groups, imported as human
# scores: the share of annotators who saw that error in the summary.
ERROR_CATEGORIES = (
    "RelE",
    "EntE",
    "CircE",
    "OutE",
    "GramE",
    "CorefE",
    "LinkE",
    "Other",
    "Semantic_Frame_Errors",
    "Discourse_Errors",
    "Content_Verifiability_Errors",
)
DATASET_NAMES = {"cnndm": "CNN/DM", "bbc": "XSum"}

Entry = tuple[dict[str, Any], Origin]


def json_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise ImportFormatError(file=str(path), line=None, field=None, message="file not found")
    with path.open(encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(file=str(path), line=exc.lineno, field=None, message=exc.msg) from exc
    if not isinstance(data, list):
        raise ImportFormatError(file=str(path), line=None, field=None, message="expected a JSON list of records")
    return data


def records_by_key(path: Path, dataset: str | None = None) -> dict[tuple[str, str], Entry]:
    """(hash, model_name) -> the record and where it is; only one of FRANK's datasets when given."""
    result = {}
    for index, record in enumerate(json_records(path)):
        origin = Origin(str(path), None, f"[{index}]")
        if not isinstance(record, dict) or "hash" not in record or "model_name" not in record:
            raise origin.error("expected an object with 'hash' and 'model_name'")
        if dataset is None or record.get("dataset") == dataset:
            result[(str(record["hash"]), str(record["model_name"]))] = (record, origin)
    return result


def record_scores(entry: Entry | None) -> dict[str, float]:
    """Every score of a record (missing values skipped, FRANK's derived Flip_ fields left out)."""
    if entry is None:
        return {}
    record, origin = entry
    scores = {}
    for key, value in record.items():
        if key in NON_SCORE_FIELDS or key.startswith(DERIVED_PREFIX) or value is None:
            continue
        scores[key] = finite_score(value, origin, key)
    return scores


def read_article(path: Path) -> dict[str, Any]:
    try:
        article = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportFormatError(file=str(path), line=exc.lineno, field=None, message=exc.msg) from exc
    if not isinstance(article, dict):
        raise ImportFormatError(file=str(path), line=None, field=None, message="expected a JSON object")
    return article


def sentence_list(article: dict[str, Any], key: str, origin: Origin) -> list[str] | None:
    """A list of sentences from an article file; FRANK stores some as the repr of a Python list."""
    lines = article.get(key)
    if lines is None:
        return None
    if isinstance(lines, str):
        try:
            lines = ast.literal_eval(lines)
        except (ValueError, SyntaxError):
            raise origin.error("expected a list of sentences", key) from None
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise origin.error("expected a list of sentences", key)
    return lines


def article_text(article: dict[str, Any], origin: Origin) -> tuple[str, list[list[int]]]:
    """The article as FRANK's sentences joined by spaces, with those sentences' offsets.

    FRANK's `article` field glues paragraphs together without a space ("season.Scotland"); its lines do not.
    """
    lines = sentence_list(article, "article_lines", origin)
    if lines is None:
        raise origin.error("this field is required", "article_lines")
    return joined_with_offsets(lines)


def line_offsets(text: str, lines: list[str] | None) -> list[list[int]] | None:
    """Offsets of the given sentences found in order in `text`; None when one is not there."""
    if not lines:
        return None
    offsets, cursor = [], 0
    for line in (line.strip() for line in lines):
        if not line:
            continue
        found = text.find(line, cursor)
        if found < 0:
            return None
        offsets.append([found, found + len(line)])
        cursor = found + len(line)
    return offsets or None


def parse(folder: Path) -> ImportBatch:
    folder = Path(folder)
    if not folder.is_dir():
        raise ImportFormatError(
            file=str(folder), line=None, field=None, message=f"expected FRANK's data folder (with {HUMAN_FILE})"
        )
    human = records_by_key(folder / HUMAN_FILE)
    metrics = records_by_key(folder / METRICS_FILE)
    for key, (_, origin) in metrics.items():
        if key not in human:
            raise origin.error(f"no human judgement for article {key[0]} and model {key[1]} in {HUMAN_FILE}", "hash")

    batch = ImportBatch(source_format="frank")
    documents: dict[str, DocumentRecord] = {}
    articles: dict[str, dict[str, Any] | None] = {}
    for (article_id, model), (record, origin) in human.items():
        document = documents.get(article_id)
        if document is None:
            article_path = folder / ARTICLES_FOLDER / f"{article_id}.json"
            article = read_article(article_path) if article_path.exists() else None
            articles[article_id] = article
            dataset = DATASET_NAMES.get(str(record.get("dataset")), str(record.get("dataset", "")))
            meta: dict[str, Any] = {"source": "FRANK (Pagnoni et al., 2021)", "dataset": dataset}
            text, sentences = "", None
            if article is None:
                meta["text"] = "unknown: no article file"
            else:
                text, sentences = article_text(article, Origin(str(article_path), None))
                meta["url"] = article.get("url", "")
            document = documents[article_id] = DocumentRecord(
                external_id=article_id,
                text=text,
                title=f"{dataset} {article_id}",
                meta=meta,
                origin=origin,
                sentences=sentences,
            )
        article = articles[article_id]
        summary_text, summary_sentences = "", None
        if article is not None:
            article_origin = Origin(str(folder / ARTICLES_FOLDER / f"{article_id}.json"), None)
            if not isinstance(article.get(model), str):
                raise article_origin.error(f"no summary of model {model!r} in the article file", model)
            summary_text = article[model].strip()
            summary_sentences = line_offsets(summary_text, sentence_list(article, f"{model}_lines", article_origin))
        document.summaries.append(
            SummaryRecord(
                external_id=model,
                system=model,
                text=summary_text,
                human_scores=record_scores((record, origin)),
                metric_scores=record_scores(metrics.get((article_id, model))),
                meta={"split": record.get("split", ""), "dataset": document.meta["dataset"]},
                origin=origin,
                sentences=summary_sentences,
            )
        )
    batch.documents = [documents[key] for key in sorted(documents)]
    if not batch.documents:
        raise ImportFormatError(file=str(folder / HUMAN_FILE), line=None, field=None, message="no records found")
    return batch
