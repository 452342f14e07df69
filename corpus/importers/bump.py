"""BUMP (Ma et al., ACL 2023): unfaithful minimal pairs on CNN/DM, with 12 metrics' scores.

PATH is one task file of dataminr-ai/BUMP (task1_dataset.json: taxonomy-based edits; task2_dataset.json:
freestyle edits), a JSON list of pairs: id, article_id, article, reference_summary, edited_summary,
error_type, corrected_error_type (task 1 only) and scores {"<Metric>_reference", "<Metric>_edited"}.

Every pair becomes two summaries of its article: "<id>-reference" (system `reference`, faithful) and
"<id>-edited" (system `edited`, unfaithful). Their meta holds the pair for the meta-evaluation:
`pair` (the pair id), `faithful` (true/false) and `error_type` (the corrected type when the file has
one, as BUMP's tables use; the annotator's original choice stays in `annotated_error_type`).
"""

from __future__ import annotations

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
)

REQUIRED = ("id", "article_id", "article", "reference_summary", "edited_summary", "error_type", "scores")
ROLES = (("reference", True), ("edited", False))


def _pairs(path: Path) -> list[Any]:
    if not path.is_file():
        raise ImportFormatError(file=str(path), line=None, field=None, message="expected a BUMP task file (JSON)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            file=str(path), line=exc.lineno, field=None, message=f"not a BUMP task file: invalid JSON ({exc.msg})"
        ) from exc
    except UnicodeDecodeError:
        raise ImportFormatError(file=str(path), line=None, field=None, message="not a UTF-8 text file") from None
    if not isinstance(data, list):
        raise ImportFormatError(
            file=str(path), line=None, field=None, message=f"expected a JSON list of pairs, got {type(data).__name__}"
        )
    return data


def _scores(pair: dict[str, Any], origin: Origin) -> dict[str, dict[str, float]]:
    """{"reference": {metric: score}, "edited": {metric: score}} from the "<Metric>_<role>" keys."""
    scores = pair["scores"]
    if not isinstance(scores, dict):
        raise origin.error(f"expected an object, got {type(scores).__name__}", "scores")
    by_role: dict[str, dict[str, float]] = {"reference": {}, "edited": {}}
    for key, value in scores.items():
        metric, _, role = key.rpartition("_")
        if role not in by_role or not metric:
            raise origin.error("expected '<Metric>_reference' or '<Metric>_edited'", f"scores.{key}")
        if value is not None:
            by_role[role][metric] = finite_score(value, origin, f"scores.{key}")
    return by_role


def parse(path: Path) -> ImportBatch:
    path = Path(path)
    batch = ImportBatch(source_format="bump")
    documents: dict[str, DocumentRecord] = {}
    seen: set[str] = set()
    for index, pair in enumerate(_pairs(path)):
        origin = Origin(str(path), None, f"[{index}]")
        if not isinstance(pair, dict):
            raise origin.error(f"expected an object, got {type(pair).__name__}")
        for key in REQUIRED:
            if key not in pair:
                raise origin.error("this field is required (is this a BUMP task file?)", key)
        for key in ("article", "reference_summary", "edited_summary", "error_type"):
            if not isinstance(pair[key], str):
                raise origin.error(f"expected a string, got {type(pair[key]).__name__}", key)
        pair_id = str(pair["id"])
        if pair_id in seen:
            raise origin.error(f"pair id {pair_id} appears twice", "id")
        seen.add(pair_id)
        article_id = str(pair["article_id"])
        document = documents.get(article_id)
        if document is None:
            document = documents[article_id] = DocumentRecord(
                external_id=article_id,
                text=pair["article"],
                title=f"CNN/DM article {article_id}",
                meta={"source": "BUMP (Ma et al., 2023)"},
                origin=origin,
            )
        elif document.text != pair["article"]:
            raise origin.error(f"article {article_id} has another text in an earlier pair", "article")
        corrected = pair.get("corrected_error_type")
        meta = {
            "pair": pair_id,
            "error_type": corrected if isinstance(corrected, str) and corrected else pair["error_type"],
            "annotated_error_type": pair["error_type"],
        }
        scores = _scores(pair, origin)
        for role, faithful in ROLES:
            document.summaries.append(
                SummaryRecord(
                    external_id=f"{pair_id}-{role}",
                    system=role,
                    text=pair[f"{role}_summary"],
                    is_reference=faithful,
                    metric_scores=scores[role],
                    meta={**meta, "faithful": faithful},
                    origin=Origin(origin.file, None, f"[{index}].{role}_summary"),
                )
            )
    if not documents:
        raise ImportFormatError(file=str(path), line=None, field=None, message="the file holds no pairs")
    batch.documents = list(documents.values())
    return batch
