"""Every row the product writes, to assert that a refused request wrote nothing."""

from __future__ import annotations

from typing import Any

from django.apps import apps

# The apps whose tables hold the product's data (sessions and admin logs are bookkeeping of the visit).
APPS = ("annotations", "scoring", "auth", "authtoken")


def database_state() -> dict[str, list[tuple[Any, ...]]]:
    """Each model's rows (every column, ordered by primary key), for before/after comparisons."""
    state = {}
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            if model._meta.proxy:
                continue
            state[model._meta.label] = list(model.objects.order_by("pk").values_list())
    return state


def changed_tables(before: dict[str, list[tuple[Any, ...]]], after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
