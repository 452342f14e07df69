"""The BUMP protocol's minimal-edit check: a word-level diff between a reference summary and its edit.

No Django here: text in, a dataclass out. The submission service stores the diff with the edit, and the
draft endpoint returns it so the annotator sees the warning while editing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher
from typing import Any

from words import word_tokens

# BUMP asks for one error through a minimal edit; its examples change one to three words
# ("homegrown" -> "foreign", "$105 million" -> "$250 million").
MAX_CHANGED_WORDS = 5
# Changes separated by at most this many unchanged words count as one place ("in the city" -> "at the town").
MERGE_GAP_WORDS = 2


@dataclass(frozen=True, slots=True)
class Change:
    """One changed place: reference[old_start:old_end] became edited[new_start:new_end] (character offsets)."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int
    old: str
    new: str
    words: int  # changed words: the larger of the removed and the inserted word counts


@dataclass(frozen=True, slots=True)
class EditDiff:
    changes: list[Change] = field(default_factory=list)
    changed_words: int = 0
    unchanged: bool = True
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def edit_diff(reference: str, edited: str) -> EditDiff:
    """Word-level changes from reference to edited, merged into places, with the minimal-edit warnings."""
    old, new = word_tokens(reference), word_tokens(edited)
    matcher = SequenceMatcher(a=[t[0] for t in old], b=[t[0] for t in new], autojunk=False)
    regions: list[list[int]] = []  # [i1, i2, j1, j2, changed words] in tokens
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        words = max(i2 - i1, j2 - j1)
        if regions and i1 - regions[-1][1] <= MERGE_GAP_WORDS and j1 - regions[-1][3] <= MERGE_GAP_WORDS:
            regions[-1][1], regions[-1][3] = i2, j2
            regions[-1][4] += words
        else:
            regions.append([i1, i2, j1, j2, words])

    def char_range(tokens: list[tuple[str, int, int]], first: int, last: int, text: str) -> tuple[int, int]:
        if first < last:
            return tokens[first][1], tokens[last - 1][2]
        # A pure insertion or deletion: an empty range where the other side changed.
        at = tokens[first][1] if first < len(tokens) else len(text)
        return at, at

    changes = []
    for i1, i2, j1, j2, words in regions:
        old_start, old_end = char_range(old, i1, i2, reference)
        new_start, new_end = char_range(new, j1, j2, edited)
        changes.append(
            Change(
                old_start=old_start,
                old_end=old_end,
                new_start=new_start,
                new_end=new_end,
                old=reference[old_start:old_end],
                new=edited[new_start:new_end],
                words=words,
            )
        )
    changed_words = sum(change.words for change in changes)
    # Whitespace-only edits leave the words alone but are still not the same text.
    unchanged = not changes
    warnings = []
    if len(changes) > 1:
        warnings.append(
            f"The edit changes {len(changes)} places; introduce exactly one error, in one place, and leave the rest."
        )
    if changed_words > MAX_CHANGED_WORDS:
        warnings.append(
            f"The edit changes {changed_words} words; a minimal edit changes a few (at most {MAX_CHANGED_WORDS})."
        )
    return EditDiff(changes=changes, changed_words=changed_words, unchanged=unchanged, warnings=warnings)
