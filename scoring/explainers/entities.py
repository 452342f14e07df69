"""Named-entity overlap (thesis 3.6, eq. 3.12-3.13). No Django here.

Entities of the summary and of the source come from spaCy's recogniser and are grouped by label. Each
summary entity is aligned to the most similar source entity with the same label; similarity is SQuAD
token F1 (the best entity similarity in thesis Table 4.8), 0 when the source has no entity of that label.
The score is the mean similarity over the summary's entities ("precision"); `exact` is the share of
summary entities with an exact (normalised) match. A summary without entities has no score.

Payload (summary entities: offsets into the summary; `match`: offsets into the document):
    {"entities": [{"start", "end", "text", "label", "sentence",
                   "match": {"start", "end", "text"} | null, "similarity", "exact"}],
     "source_entity_count": 17}
`sentence` indexes the summary's sentences.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corpus.nlp import Phrase, phrases
from scoring.explainers.base import EMPTY_SUMMARY, DocumentInput, Explained, SummaryInput, mean, rounded
from scoring.explainers.squad import exact_match, token_f1

if TYPE_CHECKING:
    from spacy.language import Language

METRIC = "entities"
CODE_VERSION = "1"
NO_ENTITIES = "the summary has no named entities, so entity overlap is undefined"


@dataclass(frozen=True, slots=True)
class EntitiesConfig:
    def as_dict(self) -> dict[str, Any]:
        return {"metric": METRIC, "code_version": CODE_VERSION, "similarity": "squad_token_f1"}


class EntityOverlapExplainer:
    def __init__(self, nlp: Language) -> None:
        self.nlp = nlp

    def explain_batch(
        self, documents: Sequence[DocumentInput], summaries: Sequence[Sequence[SummaryInput]]
    ) -> list[list[Explained]]:
        source_entities = phrases(self.nlp, [d.text for d in documents], noun_chunks=False)
        flat = [summary for group in summaries for summary in group]
        summary_entities = iter(phrases(self.nlp, [s.text for s in flat], noun_chunks=False))
        results = []
        for entities, group in zip(source_entities, summaries, strict=True):
            by_label: dict[str, list[Phrase]] = {}
            for entity in entities:
                by_label.setdefault(entity.type, []).append(entity)
            results.append(
                [self._explain(summary, next(summary_entities), by_label, len(entities)) for summary in group]
            )
        return results

    def _explain(
        self, summary: SummaryInput, entities: list[Phrase], by_label: dict[str, list[Phrase]], source_count: int
    ) -> Explained:
        if not summary.text.strip():
            return Explained.undefined(EMPTY_SUMMARY)
        if not entities:
            return Explained.undefined(NO_ENTITIES, {"entities": [], "source_entity_count": source_count})
        sentence_starts = [start for start, _ in summary.sentence_spans()]
        rows = []
        similarities = []
        for entity in entities:
            candidates = by_label.get(entity.type, [])
            best = max(candidates, key=lambda c: token_f1(entity.text, c.text), default=None)
            similarity = token_f1(entity.text, best.text) if best else 0.0
            similarities.append(similarity)
            rows.append(
                {
                    "start": entity.start,
                    "end": entity.end,
                    "text": entity.text,
                    "label": entity.type,
                    "sentence": max(bisect.bisect_right(sentence_starts, entity.start) - 1, 0),
                    "match": {"start": best.start, "end": best.end, "text": best.text} if best else None,
                    "similarity": rounded(similarity),
                    "exact": bool(best and exact_match(entity.text, best.text)),
                }
            )
        precision = mean(similarities)
        exact = mean([float(bool(row["exact"])) for row in rows])
        return Explained(
            score=precision,
            scores={"precision": precision, "exact": exact},
            payload={"entities": rows, "source_entity_count": source_count},
        )
