"""SQuAD v2 answer comparison: the normalisation, exact match and token F1 of the official evaluation script.

QAGS compares its two answers with token F1 (seed 002); the entity-overlap metric uses the same F1 to
compare entities (thesis Table 4.8: F1 was the best similarity there). No Django here.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, strip punctuation, drop the articles a/an/the, collapse whitespace."""
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(a: str, b: str) -> float:
    return float(normalize_answer(a) == normalize_answer(b))


def token_f1(a: str, b: str) -> float:
    """Token-level F1 of the normalised answers; two empty answers agree (1), one empty answer does not (0)."""
    tokens_a = normalize_answer(a).split()
    tokens_b = normalize_answer(b).split()
    if not tokens_a or not tokens_b:
        return float(tokens_a == tokens_b)
    common = sum((Counter(tokens_a) & Counter(tokens_b)).values())
    if common == 0:
        return 0.0
    precision = common / len(tokens_a)
    recall = common / len(tokens_b)
    return 2 * precision * recall / (precision + recall)
