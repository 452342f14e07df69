"""Maynez et al. (ACL 2020), "On Faithfulness and Factuality in Abstractive Summarization".

PATH is the folder of google-research-datasets/xsum_hallucination_annotations with its three CSVs:
- hallucination_annotations_xsum_summaries.csv: every worker's hallucinated spans of 500 XSum articles
  x 5 systems (BERTS2S, TConvS2S, TranS2S, PtGen and the reference, Gold);
- factuality_annotations_xsum_summaries.csv: every worker's yes/no factuality label (NULL = no label);
- eval_scores_xsum_summaries.csv: the human scores Faithful and Factual and the metric scores R1, R2,
  RL, BERTScore and Entailment of the four systems.
The articles are not part of the data: documents are known by their BBC id only (empty text).

Summary texts come from the hallucination file after unescaping \\' to ', because the span offsets
are counted on them. Those offsets are 1-based and end-exclusive; the few that do not align that way
are found by searching for the span text. The readers here also serve the frank-xsum importer.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

from corpus.importers.records import (
    DocumentRecord,
    ImportBatch,
    ImportFormatError,
    LabelRecord,
    Origin,
    SpanRecord,
    SummaryRecord,
    finite_score,
)

SYSTEMS = ("BERTS2S", "TConvS2S", "TranS2S", "PtGen", "Gold")
REFERENCE_SYSTEM = "Gold"
# eval_scores_xsum_summaries.csv names the systems differently; checked against the factuality labels.
EVAL_SYSTEM_NAMES = {
    "bert_withckpt": "BERTS2S",
    "bert_nockpt": "TranS2S",
    "ptgen": "PtGen",
    "tconvs2s": "TConvS2S",
}
HUMAN_SCORES = ("Faithful", "Factual")
METRIC_SCORES = ("R1", "R2", "RL", "BERTScore", "Entailment")

HALLUCINATION_FILE = "hallucination_annotations_xsum_summaries.csv"
FACTUALITY_FILE = "factuality_annotations_xsum_summaries.csv"
EVAL_FILE = "eval_scores_xsum_summaries.csv"
HALLUCINATION_COLUMNS = {
    "bbcid",
    "system",
    "summary",
    "hallucination_type",
    "hallucinated_span",
    "hallucinated_span_start",
    "hallucinated_span_end",
    "worker_id",
}

Key = tuple[str, str]  # (bbcid, system)


def unescape(text: str) -> str:
    return text.replace("\\'", "'")


def require(path: Path) -> Path:
    if not path.exists():
        raise ImportFormatError(file=str(path), line=None, field=None, message="file not found")
    return path


def csv_rows(path: Path, columns: set[str]) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with their line numbers (the header is line 1)."""
    with require(path).open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = columns - set(reader.fieldnames or [])
        if missing:
            raise ImportFormatError(
                file=str(path), line=1, field=sorted(missing)[0], message="column missing from the header"
            )
        return [(number, row) for number, row in enumerate(reader, start=2)]


def _int(row: dict[str, str], key: str, origin: Origin) -> int:
    try:
        return int(row[key])
    except (TypeError, ValueError):
        raise origin.error(f"expected an integer, got {row[key]!r}", key) from None


def locate_span(summary: str, span: str, start: int, end: int) -> tuple[int, int] | None:
    """Character offsets of a Maynez span: 1-based end-exclusive offsets, else a search for its text."""
    if summary[start - 1 : end - 1] == span and start >= 1:
        return start - 1, end - 1
    cleaned = span.replace("\\n", " ").strip()
    if not cleaned:
        return None
    found = summary.find(cleaned)
    if found >= 0:
        return found, found + len(cleaned)
    return None


def read_hallucinations(path: Path) -> dict[Key, dict[str, Any]]:
    """(bbcid, system) -> {"summary": text, "workers": {worker: [SpanRecord, ...]}} (no span = empty list)."""
    hallucinations: dict[Key, dict[str, Any]] = {}
    for number, row in csv_rows(path, HALLUCINATION_COLUMNS):
        origin = Origin(str(path), number)
        entry = hallucinations.setdefault(
            (row["bbcid"], row["system"]), {"summary": unescape(row["summary"]), "workers": {}}
        )
        spans = entry["workers"].setdefault(row["worker_id"], [])
        start = _int(row, "hallucinated_span_start", origin)
        end = _int(row, "hallucinated_span_end", origin)
        if start < 0 or row["hallucination_type"] == "NULL":
            continue
        if row["hallucination_type"] not in {"intrinsic", "extrinsic"}:
            raise origin.error(
                f"expected intrinsic, extrinsic or NULL, got {row['hallucination_type']!r}",
                "hallucination_type",
            )
        located = locate_span(entry["summary"], unescape(row["hallucinated_span"]), start, end)
        if located is None:
            raise origin.error("the span is neither at its offsets nor found in the summary", "hallucinated_span")
        if not any(located == (s.start, s.end) for s in spans):
            spans.append(SpanRecord(located[0], located[1], row["hallucination_type"]))
    return hallucinations


def read_factuality(path: Path) -> dict[Key, dict[str, str]]:
    """(bbcid, system) -> worker -> yes/no. NULL means the worker gave no label: missing data."""
    factuality: dict[Key, dict[str, str]] = defaultdict(dict)
    for number, row in csv_rows(path, {"bbcid", "system", "is_factual", "worker_id"}):
        value = row["is_factual"]
        if value == "NULL":
            continue
        if value not in {"yes", "no"}:
            raise Origin(str(path), number).error(f"expected yes, no or NULL, got {value!r}", "is_factual")
        factuality[(row["bbcid"], row["system"])][row["worker_id"]] = value
    return factuality


def read_eval_scores(path: Path) -> dict[Key, dict[str, float]]:
    """(bbcid, system) -> the human and metric scores of the eval file, by column name."""
    scores: dict[Key, dict[str, float]] = {}
    for number, row in csv_rows(path, {"system_bbcid", *HUMAN_SCORES, *METRIC_SCORES}):
        origin = Origin(str(path), number)
        system_name, _, bbcid = row["system_bbcid"].rpartition("_")
        if system_name not in EVAL_SYSTEM_NAMES:
            raise origin.error(f"unknown system {system_name!r}", "system_bbcid")
        values = {}
        for column in (*HUMAN_SCORES, *METRIC_SCORES):
            try:
                values[column] = finite_score(float(row[column]), origin, column)
            except ValueError:
                raise origin.error(f"expected a number, got {row[column]!r}", column) from None
        scores[(bbcid, EVAL_SYSTEM_NAMES[system_name])] = values
    return scores


def split_scores(scores: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """The eval file's columns as (human scores, metric scores)."""
    human = {name: value for name, value in scores.items() if name in HUMAN_SCORES}
    metrics = {name: value for name, value in scores.items() if name in METRIC_SCORES}
    return human, metrics


def worker_labels(
    key: Key,
    hallucinations: dict[Key, dict[str, Any]],
    factuality: dict[Key, dict[str, str]],
    origin: Origin,
) -> list[LabelRecord]:
    """Every worker's spans (task hallucination_spans) and yes/no label (task factuality) of one summary."""
    labels = [
        LabelRecord(annotator=worker, task="hallucination_spans", spans=list(spans), origin=origin)
        for worker, spans in sorted(hallucinations.get(key, {}).get("workers", {}).items())
    ]
    labels += [
        LabelRecord(annotator=worker, task="factuality", label=value, origin=origin)
        for worker, value in sorted(factuality.get(key, {}).items())
    ]
    return labels


def parse(folder: Path) -> ImportBatch:
    folder = Path(folder)
    if not folder.is_dir():
        raise ImportFormatError(
            file=str(folder), line=None, field=None, message="expected the folder holding the three Maynez CSV files"
        )
    hallucination_path = folder / HALLUCINATION_FILE
    hallucinations = read_hallucinations(hallucination_path)
    factuality = read_factuality(folder / FACTUALITY_FILE)
    eval_scores = read_eval_scores(folder / EVAL_FILE)
    for key in (*factuality, *eval_scores):
        if key not in hallucinations:
            path = folder / (FACTUALITY_FILE if key in factuality else EVAL_FILE)
            raise ImportFormatError(
                file=str(path),
                line=None,
                field="bbcid",
                message=f"summary {key[0]}/{key[1]} has no row in {HALLUCINATION_FILE}, which holds the summary texts",
            )

    batch = ImportBatch(source_format="maynez")
    documents: dict[str, DocumentRecord] = {}
    for (bbcid, system), entry in hallucinations.items():
        document = documents.get(bbcid)
        if document is None:
            document = documents[bbcid] = DocumentRecord(
                external_id=bbcid,
                text="",
                title=f"XSum {bbcid}",
                meta={"source": "Maynez et al. (2020)", "text": "unknown: the data set gives the BBC id only"},
                origin=Origin(str(hallucination_path), None, bbcid),
            )
        human, metrics = split_scores(eval_scores.get((bbcid, system), {}))
        origin = Origin(str(hallucination_path), None, f"{bbcid}/{system}")
        document.summaries.append(
            SummaryRecord(
                external_id=system,
                system=system,
                text=entry["summary"],
                is_reference=system == REFERENCE_SYSTEM,
                human_scores=human,
                metric_scores=metrics,
                labels=worker_labels((bbcid, system), hallucinations, factuality, origin),
                origin=origin,
            )
        )
    batch.documents = [documents[bbcid] for bbcid in sorted(documents)]
    if not batch.documents:
        raise ImportFormatError(file=str(hallucination_path), line=None, field=None, message="no summaries found")
    return batch
