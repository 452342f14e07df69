"""System checks of the deployment (`manage.py check --deploy`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Tags, register
from django.core.checks import Warning as CheckWarning

PROCESS_LOCAL_CACHES = {
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
}


@register(Tags.security, Tags.caches, deploy=True)
def shared_cache_check(app_configs: Any = None, **kwargs: Any) -> list[CheckWarning]:
    """Throttle counts kept in one process's memory are not seen by the other gunicorn workers, so each
    worker grants the whole rate again."""
    if settings.CACHES["default"]["BACKEND"] not in PROCESS_LOCAL_CACHES:
        return []
    return [
        CheckWarning(
            "CACHE_URL gives a cache private to each process: request throttles are not shared between workers.",
            hint="Point CACHE_URL at Redis, e.g. redis://127.0.0.1:6379/1 (docker-compose.yml does).",
            id="faithanno.W001",
        )
    ]
