"""What a "word" is for the annotation tasks: a run of word characters or one punctuation mark. Span selection
snaps to these (protocols.tasks.word_spans) and the minimal-edit check counts them (protocols.minimal_edit)."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def word_tokens(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) for each word and punctuation mark, in order."""
    return [(match.group(), match.start(), match.end()) for match in WORD.finditer(text)]
