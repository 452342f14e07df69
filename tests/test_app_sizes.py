"""No app holds more than 4,500 lines of Python (issue 12): an app that grows past it is split along a seam
(as ingest and inspector were split from studies and analysis), not left to grow."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_APP_LINES = 4_500


def app_lines() -> dict[str, int]:
    sizes = {}
    for config in sorted(ROOT.glob("*/apps.py")):
        app = config.parent
        files = [path for path in app.rglob("*.py") if "migrations" not in path.relative_to(app).parts]
        sizes[app.name] = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in files)
    return sizes


def test_it_keeps_every_app_under_the_size_bar() -> None:
    sizes = app_lines()
    assert {"studies", "analysis", "crowd", "ingest", "inspector"} <= set(sizes)  # the walk finds the apps
    assert {app: lines for app, lines in sizes.items() if lines > MAX_APP_LINES} == {}
