"""The XSum data the FaithAnno thesis worked on: FRANK's 251 XSum articles joined with Maynez et al.

PATH is a folder holding `frank/` (artidoro/frank) and `xsum_hallucination/`
(google-research-datasets/xsum_hallucination_annotations). For each FRANK XSum article (its file
name is the BBC id) this builds the document and its five summaries (BERTS2S, TConvS2S, TranS2S,
PtGen and the reference, Gold) with:
- Maynez human scores Faithful and Factual and metric scores R1, R2, RL, BERTScore, Entailment;
- FRANK's human Factuality and error-category scores and every baseline metric score;
- every Maynez worker's hallucinated spans (task hallucination_spans) and yes/no factuality label
  (task factuality) as labels of external annotators.

Summary texts come from the Maynez files (after unescaping \\' to '), because the span offsets are
counted on them. Those offsets are 1-based and end-exclusive; the few that do not align that way
are found by searching for the span text.
"""

from __future__ import annotations

import ast
import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from annotations.importers.records import (
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
MAYNEZ_HUMAN = ("Faithful", "Factual")
MAYNEZ_METRICS = ("R1", "R2", "RL", "BERTScore", "Entailment")
FRANK_NON_SCORE_FIELDS = {"hash", "model_name", "dataset", "split"}
# FRANK's Flip_<category> fields are 1 - <category>, kept upstream for its plots; they add no information.
FRANK_DERIVED_PREFIX = "Flip_"

HALLUCINATION_FILE = "xsum_hallucination/hallucination_annotations_xsum_summaries.csv"
FACTUALITY_FILE = "xsum_hallucination/factuality_annotations_xsum_summaries.csv"
EVAL_FILE = "xsum_hallucination/eval_scores_xsum_summaries.csv"
FRANK_HUMAN_FILE = "frank/human_annotations.json"
FRANK_METRICS_FILE = "frank/baseline_factuality_metrics_outputs.json"


def unescape(text: str) -> str:
    return text.replace("\\'", "'")


def _require(path: Path) -> Path:
    if not path.exists():
        raise ImportFormatError(file=str(path), line=None, field=None, message="file not found")
    return path


def _csv_rows(path: Path, columns: set[str]) -> list[tuple[int, dict[str, str]]]:
    with _require(path).open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = columns - set(reader.fieldnames or [])
        if missing:
            raise ImportFormatError(
                file=str(path), line=1, field=sorted(missing)[0], message="column missing from the header"
            )
        # Line numbers count the header as line 1.
        return [(number, row) for number, row in enumerate(reader, start=2)]


def _json_records(path: Path) -> list[dict[str, Any]]:
    with _require(path).open(encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(file=str(path), line=exc.lineno, field=None, message=exc.msg) from exc
    if not isinstance(data, list):
        raise ImportFormatError(file=str(path), line=None, field=None, message="expected a JSON list of records")
    return data


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


def parse(folder: Path) -> ImportBatch:
    folder = Path(folder)
    articles_dir = folder / "frank" / "articles"
    if not articles_dir.is_dir():
        raise ImportFormatError(
            file=str(articles_dir),
            line=None,
            field=None,
            message="folder not found (expected frank/articles/)",
        )

    hallucinations: dict[tuple[str, str], dict[str, Any]] = {}
    hallucination_path = folder / HALLUCINATION_FILE
    columns = {
        "bbcid",
        "system",
        "summary",
        "hallucination_type",
        "hallucinated_span",
        "hallucinated_span_start",
        "hallucinated_span_end",
        "worker_id",
    }
    for number, row in _csv_rows(hallucination_path, columns):
        origin = Origin(str(hallucination_path), number)
        key = (row["bbcid"], row["system"])
        entry = hallucinations.setdefault(key, {"summary": unescape(row["summary"]), "workers": {}})
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

    factuality: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    factuality_path = folder / FACTUALITY_FILE
    for number, row in _csv_rows(factuality_path, {"bbcid", "system", "is_factual", "worker_id"}):
        value = row["is_factual"]
        if value == "NULL":
            continue  # the worker gave no label: missing data, not a third category
        if value not in {"yes", "no"}:
            raise Origin(str(factuality_path), number).error(f"expected yes, no or NULL, got {value!r}", "is_factual")
        factuality[(row["bbcid"], row["system"])][row["worker_id"]] = value

    eval_scores: dict[tuple[str, str], dict[str, float]] = {}
    eval_path = folder / EVAL_FILE
    for number, row in _csv_rows(eval_path, {"system_bbcid", *MAYNEZ_HUMAN, *MAYNEZ_METRICS}):
        origin = Origin(str(eval_path), number)
        system_name, _, bbcid = row["system_bbcid"].rpartition("_")
        if system_name not in EVAL_SYSTEM_NAMES:
            raise origin.error(f"unknown system {system_name!r}", "system_bbcid")
        scores = {}
        for column in (*MAYNEZ_HUMAN, *MAYNEZ_METRICS):
            try:
                scores[column] = finite_score(float(row[column]), origin, column)
            except ValueError:
                raise origin.error(f"expected a number, got {row[column]!r}", column) from None
        eval_scores[(bbcid, EVAL_SYSTEM_NAMES[system_name])] = scores

    frank_human = _frank_by_key(folder / FRANK_HUMAN_FILE)
    frank_metrics = _frank_by_key(folder / FRANK_METRICS_FILE)

    batch = ImportBatch(source_format="frank-xsum")
    for article_path in sorted(articles_dir.glob("*.json")):
        bbcid = article_path.stem
        if not bbcid.isdigit():
            continue  # CNN/DM articles are named by hash; the thesis data is the XSum part
        batch.documents.append(
            _document(article_path, bbcid, hallucinations, factuality, eval_scores, frank_human, frank_metrics)
        )
    if not batch.documents:
        raise ImportFormatError(file=str(articles_dir), line=None, field=None, message="no XSum articles found")
    return batch


def _frank_by_key(path: Path) -> dict[tuple[str, str], tuple[dict[str, Any], Origin]]:
    result = {}
    for index, record in enumerate(_json_records(path)):
        origin = Origin(str(path), None, f"[{index}]")
        if not isinstance(record, dict) or "hash" not in record or "model_name" not in record:
            raise origin.error("expected an object with 'hash' and 'model_name'")
        if record.get("dataset") == "bbc":
            result[(str(record["hash"]), str(record["model_name"]))] = (record, origin)
    return result


def _frank_scores(entry: tuple[dict[str, Any], Origin] | None) -> dict[str, float]:
    if entry is None:
        return {}
    record, origin = entry
    scores = {}
    for key, value in record.items():
        if key in FRANK_NON_SCORE_FIELDS or key.startswith(FRANK_DERIVED_PREFIX) or value is None:
            continue
        scores[key] = finite_score(value, origin, key)
    return scores


def _document(
    path: Path,
    bbcid: str,
    hallucinations: dict[tuple[str, str], dict[str, Any]],
    factuality: dict[tuple[str, str], dict[str, str]],
    eval_scores: dict[tuple[str, str], dict[str, float]],
    frank_human: dict[tuple[str, str], tuple[dict[str, Any], Origin]],
    frank_metrics: dict[tuple[str, str], tuple[dict[str, Any], Origin]],
) -> DocumentRecord:
    origin = Origin(str(path), None)
    try:
        article = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportFormatError(file=str(path), line=exc.lineno, field=None, message=exc.msg) from exc
    lines = article.get("article_lines")
    if isinstance(lines, str):
        lines = ast.literal_eval(lines)
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise origin.error("expected a list of sentences", "article_lines")
    # FRANK's `article` glues paragraphs together without a space ("season.Scotland"); its lines do not.
    text = " ".join(line.strip() for line in lines if line.strip())
    document = DocumentRecord(
        external_id=bbcid,
        text=text,
        title=f"XSum {bbcid}",
        meta={"url": article.get("url", ""), "source": "FRANK (Pagnoni et al., 2021)"},
        origin=origin,
    )
    for system in SYSTEMS:
        key = (bbcid, system)
        maynez = hallucinations.get(key)
        if maynez is None:
            if not isinstance(article.get(system), str):
                raise origin.error(f"no {system} summary in the article file nor in the Maynez annotations", system)
            summary_text = unescape(article[system])
        else:
            summary_text = maynez["summary"]
        human = dict(eval_scores.get(key, {}))
        metrics = {name: human.pop(name) for name in MAYNEZ_METRICS if name in human}
        frank_entry = frank_human.get(key)
        human.update(_frank_scores(frank_entry))
        metrics.update(_frank_scores(frank_metrics.get(key)))
        summary = SummaryRecord(
            external_id=system,
            system=system,
            text=summary_text,
            is_reference=system == REFERENCE_SYSTEM,
            human_scores=human,
            metric_scores=metrics,
            meta={"split": frank_entry[0].get("split", "")} if frank_entry else {},
            origin=Origin(str(path), None, system),
        )
        label_origin = Origin(str(folder_of(path) / HALLUCINATION_FILE), None, f"{bbcid}/{system}")
        for worker, spans in sorted((maynez or {}).get("workers", {}).items()):
            summary.labels.append(
                LabelRecord(annotator=worker, task="hallucination_spans", spans=list(spans), origin=label_origin)
            )
        for worker, value in sorted(factuality.get(key, {}).items()):
            summary.labels.append(LabelRecord(annotator=worker, task="factuality", label=value, origin=label_origin))
        document.summaries.append(summary)
    return document


def folder_of(article_path: Path) -> Path:
    """The import folder, two levels above frank/articles/<id>.json."""
    return article_path.parent.parent.parent
