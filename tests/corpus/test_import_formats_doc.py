"""docs/IMPORT_FORMATS.md lists every task key the JSONL importer accepts, with each of its labels."""

from __future__ import annotations

import re
from pathlib import Path

from protocols.tasks import TASKS

DOC = Path(__file__).resolve().parents[2] / "docs" / "IMPORT_FORMATS.md"


def test_it_documents_every_task_key_with_its_labels_and_numbers() -> None:
    rows = {
        match.group(1): match.group(0)
        for match in re.finditer(r"^\| `(\w+)` \|[^\n]*$", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    }
    for key, task in TASKS.items():
        assert key in rows, f"docs/IMPORT_FORMATS.md has no row for task {key!r}"
        for choice in task.choices:
            number = "" if choice.numeric is None else f" ({choice.numeric:g})"
            assert f"`{choice.value}`{number}" in rows[key], (key, choice.value)
