"""Every row the product writes, to assert that a refused request wrote nothing."""

from __future__ import annotations

from django.apps import apps
from django.db import connection

# The apps whose tables hold the product's data (sessions and admin logs are bookkeeping of the visit).
APPS = ("corpus", "studies", "scoring", "auth", "authtoken")


def database_state() -> dict[str, tuple[int, str | None]]:
    """Each table's row count and a digest of all its rows (every column, in primary-key order), computed by
    PostgreSQL so that a snapshot costs one query per table."""
    tables = sorted(
        {
            model._meta.db_table
            for label in APPS
            for model in apps.get_app_config(label).get_models(include_auto_created=True)
            if not model._meta.proxy
        }
    )
    state = {}
    with connection.cursor() as cursor:
        for table in tables:
            name = connection.ops.quote_name(table)
            cursor.execute(f"SELECT COUNT(*), md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {name} t")
            state[table] = cursor.fetchone()
    return state


def changed_tables(before: dict[str, tuple[int, str | None]], after: dict[str, tuple[int, str | None]]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
