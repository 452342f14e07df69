"""What a "word" is, the one tokenisation shared by the annotation tasks (span selection snaps to these words,
protocols.tasks.word_spans), the BUMP minimal-edit check (protocols.minimal_edit counts them) and the span
analysis (stats.spans labels each word). A bottom package with no dependencies: protocols and stats, which
may not import each other, both import it.

A word is a run of word characters (letters, digits, underscore, in any script) or one punctuation mark.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD_CHARACTER = re.compile(r"\w", re.UNICODE)


def word_tokens(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) for each word and punctuation mark, in order (end-exclusive code-point offsets)."""
    return [(match.group(), match.start(), match.end()) for match in WORD.finditer(text)]


def is_punctuation(word: str) -> bool:
    """A token of word_tokens that is a punctuation mark rather than a run of word characters."""
    return _WORD_CHARACTER.match(word) is None
