"""The cost of BERTScore's word-level view (protocols.alignment) per task view or inspector request.

    python benchmarks/word_alignment.py

Builds synthetic `bertscore` payloads that follow docs/EXPLANATIONS.md (a summary of 25 words, words longer
than six letters in two pieces, every piece aligned inside a random document word) over documents of 400
and 900 words, and prints the milliseconds per call (best of 5 rounds of 200 calls: the least disturbed by
other load) of:
- `bertscore_units` without the document (what checking a submission runs: no source words);
- `bertscore_units` with the document (the task view: whole source words for every unit);
- `word_alignment` alone with the document (the inspector's derivation).
Figures go to docs/PERFORMANCE.md ("Annotation") with this command and the machine's load.
"""

from __future__ import annotations

import itertools
import random
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocols.alignment import word_alignment
from protocols.tasks import bertscore_units
from words import word_tokens

VOCABULARY = ("council", "measles", "approved", "the", "budget", "of", "Piedmont", "storm", "in", "a", "year")


def payload(document: str, rng: random.Random, words: int = 25) -> dict[str, Any]:
    source = [(start, end) for text, start, end in word_tokens(document) if text.isalnum()]
    summary = " ".join(rng.choice(VOCABULARY) for _ in range(words))
    tokens: list[dict[str, Any]] = []
    stored: list[dict[str, Any]] = []
    for index, (text, start, end) in enumerate(word_tokens(summary)):
        cuts = [start, start + len(text) // 2, end] if len(text) > 6 else [start, end]
        members = []
        for low, high in itertools.pairwise(cuts):
            a_start, a_end = rng.choice(source)
            tokens.append(
                {
                    "start": low,
                    "end": high,
                    "text": summary[low:high],
                    "similarity": round(rng.uniform(0.6, 1.0), 6),
                    "aligned": [a_start, a_start + min(3, a_end - a_start)],
                    "aligned_text": document[a_start : a_start + min(3, a_end - a_start)],
                    "weight": 1.0,
                    "word": index,
                }
            )
            members.append(len(tokens) - 1)
        stored.append(
            {
                "start": start,
                "end": end,
                "text": text,
                "stopword": text in ("the", "of", "in", "a"),
                "punct": False,
                "tokens": members,
                "similarity": min(tokens[t]["similarity"] for t in members),
            }
        )
    return {"tokens": tokens, "words": stored, "source_token_count": len(source), "truncated": {}}


def best_ms(call: Any, number: int = 200, rounds: int = 5) -> float:
    return min(timeit.repeat(call, number=number, repeat=rounds)) / number * 1000


def report(item: dict[str, Any], document: str) -> None:
    units_bare = best_ms(lambda: bertscore_units(item))
    units = best_ms(lambda: bertscore_units(item, document))
    alignment = best_ms(lambda: word_alignment(item, document_text=document))
    print(f"  bertscore_units, no document:   {units_bare:.3f} ms")
    print(f"  bertscore_units, with document: {units:.3f} ms")
    print(f"  word_alignment, with document:  {alignment:.3f} ms")


def main() -> None:
    rng = random.Random(0)
    for length in (400, 900):
        document = ". ".join(" ".join(rng.choice(VOCABULARY) for _ in range(20)) for _ in range(length // 20)) + "."
        item = payload(document, rng)
        pieces = len(item["tokens"])
        print(f"document of {length} words ({len(document)} characters), summary of 25 words, {pieces} pieces:")
        report(item, document)


if __name__ == "__main__":
    main()
