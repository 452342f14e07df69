"""Progress bars for management commands (tqdm on stderr, so JSON on stdout stays clean)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm


def progress_iter(items: Iterable[Any], total: int, description: str) -> Iterable[Any]:
    bar: Iterable[Any] = tqdm(items, total=total, desc=description, file=sys.stderr, unit="batch", dynamic_ncols=True)
    return bar


def progress_bar(total: int, description: str) -> tqdm:
    return tqdm(total=total, desc=description, file=sys.stderr, unit="summary", dynamic_ncols=True)
