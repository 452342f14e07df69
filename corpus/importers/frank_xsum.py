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

from pathlib import Path
from typing import Any

from corpus.importers.frank import Entry, article_text, read_article, record_scores, records_by_key
from corpus.importers.maynez import (
    EVAL_FILE,
    FACTUALITY_FILE,
    HALLUCINATION_FILE,
    REFERENCE_SYSTEM,
    SYSTEMS,
    locate_span,
    read_eval_scores,
    read_factuality,
    read_hallucinations,
    split_scores,
    unescape,
    worker_labels,
)
from corpus.importers.records import DocumentRecord, ImportBatch, ImportFormatError, Origin, SummaryRecord

__all__ = ["locate_span", "parse"]

MAYNEZ_FOLDER = "xsum_hallucination"
FRANK_HUMAN_FILE = "frank/human_annotations.json"
FRANK_METRICS_FILE = "frank/baseline_factuality_metrics_outputs.json"


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

    maynez_folder = folder / MAYNEZ_FOLDER
    hallucinations = read_hallucinations(maynez_folder / HALLUCINATION_FILE)
    factuality = read_factuality(maynez_folder / FACTUALITY_FILE)
    eval_scores = read_eval_scores(maynez_folder / EVAL_FILE)
    frank_human = records_by_key(folder / FRANK_HUMAN_FILE, dataset="bbc")
    frank_metrics = records_by_key(folder / FRANK_METRICS_FILE, dataset="bbc")

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


def _document(
    path: Path,
    bbcid: str,
    hallucinations: dict[tuple[str, str], dict[str, Any]],
    factuality: dict[tuple[str, str], dict[str, str]],
    eval_scores: dict[tuple[str, str], dict[str, float]],
    frank_human: dict[tuple[str, str], Entry],
    frank_metrics: dict[tuple[str, str], Entry],
) -> DocumentRecord:
    origin = Origin(str(path), None)
    article = read_article(path)
    text, _ = article_text(article, origin)  # sentences come from spaCy, as for every jsonl import
    document = DocumentRecord(
        external_id=bbcid,
        text=text,
        title=f"XSum {bbcid}",
        meta={"url": article.get("url", ""), "source": "FRANK (Pagnoni et al., 2021)"},
        origin=origin,
    )
    for system in SYSTEMS:
        key = (bbcid, system)
        annotated = hallucinations.get(key)
        if annotated is None:
            if not isinstance(article.get(system), str):
                raise origin.error(f"no {system} summary in the article file nor in the Maynez annotations", system)
            summary_text = unescape(article[system])
        else:
            summary_text = annotated["summary"]
        human, metrics = split_scores(eval_scores.get(key, {}))
        frank_entry = frank_human.get(key)
        human.update(record_scores(frank_entry))
        metrics.update(record_scores(frank_metrics.get(key)))
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
        label_origin = Origin(str(folder_of(path) / MAYNEZ_FOLDER / HALLUCINATION_FILE), None, f"{bbcid}/{system}")
        summary.labels = worker_labels(key, hallucinations, factuality, label_origin)
        document.summaries.append(summary)
    return document


def folder_of(article_path: Path) -> Path:
    """The import folder, two levels above frank/articles/<id>.json."""
    return article_path.parent.parent.parent
