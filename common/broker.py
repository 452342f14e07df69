"""Whether the Celery broker answers, before work is put on it (scoring and uploaded imports)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from common.errors import BrokerUnavailable


def celery_app() -> Any:
    """The project's Celery app, named in the settings (it is configured there); imported only when needed."""
    return import_string(settings.FAITHANNO_CELERY_APP)


def broker_check() -> None:
    """Raises BrokerUnavailable unless the Celery broker answers (tasks put now would be lost)."""
    app = celery_app()
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
    except Exception as exc:
        raise BrokerUnavailable(
            f"Cannot reach the Celery broker at {settings.CELERY_BROKER_URL} ({type(exc).__name__}: {exc}). "
            "To fix: start Redis there, or set CELERY_BROKER_URL to a reachable broker."
        ) from exc
