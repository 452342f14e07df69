"""Aggregates Django lacks, for every database the app runs on."""

from __future__ import annotations

import statistics
from typing import Any

from django.db.models import Aggregate, FloatField

SQLITE_MEDIAN = "faithanno_median"


class Median(Aggregate):
    """The median of a column within each group (the mean of the two middle values for an even count):
    PostgreSQL's percentile_cont(0.5); on SQLite a Python aggregate that `register_sqlite_functions` adds
    to every connection."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        # A plain call of the registered aggregate (Aggregate.as_sql builds a FILTER clause from self.template).
        plain = self.copy()
        plain.function, plain.template = SQLITE_MEDIAN, "%(function)s(%(expressions)s)"
        return plain.as_sql(compiler, connection, **extra_context)


class _SqliteMedian:
    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: float | None) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        return float(statistics.median(self.values)) if self.values else None


def register_sqlite_functions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created handler: the Python side of the aggregates above, on SQLite connections."""
    if connection.vendor == "sqlite":
        connection.connection.create_aggregate(SQLITE_MEDIAN, 1, _SqliteMedian)
