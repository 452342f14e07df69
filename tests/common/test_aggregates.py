"""The median aggregate on the embedded SQLite database (PostgreSQL's percentile_cont is tested through the
studies list, tests/studies/test_study_glance.py)."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

from common.aggregates import SQLITE_MEDIAN, register_sqlite_functions


def test_it_gives_sqlite_connections_a_median_aggregate_that_filters_and_skips_nulls() -> None:
    raw = sqlite3.connect(":memory:")
    register_sqlite_functions(sender=None, connection=SimpleNamespace(vendor="sqlite", connection=raw))
    raw.execute("CREATE TABLE t (g INTEGER, v REAL)")
    raw.executemany("INSERT INTO t VALUES (?, ?)", [(1, 10), (1, 30), (1, 0), (1, None), (2, 5), (2, 1), (2, 9)])
    rows = raw.execute(f"SELECT g, {SQLITE_MEDIAN}(v) FILTER (WHERE v > 0) FROM t GROUP BY g ORDER BY g").fetchall()
    assert rows == [(1, 20.0), (2, 5.0)]
    assert raw.execute(f"SELECT {SQLITE_MEDIAN}(v) FROM t WHERE g = 3").fetchall() == [(None,)]


def test_it_leaves_other_databases_alone() -> None:
    raw = sqlite3.connect(":memory:")
    register_sqlite_functions(sender=None, connection=SimpleNamespace(vendor="postgresql", connection=raw))
    try:
        raw.execute(f"SELECT {SQLITE_MEDIAN}(1)")
    except sqlite3.OperationalError as error:
        assert "no such function" in str(error)
    else:
        raise AssertionError("the aggregate was registered on a non-SQLite connection")
