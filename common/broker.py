"""Whether the Celery broker answers, before work is put on it (scoring and uploaded imports)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from common.errors import BrokerUnavailable


def celery_app() -> Any:
    """The project's Celery app, named in the settings (it is configured there); imported only when needed."""
    return import_string(settings.FAITHANNO_CELERY_APP)


def task_send(task: Any, **kwargs: Any) -> Any:
    """Send a shared task through the project's Celery app (its broker and its eager setting). A shared task
    called directly goes through the app its thread takes as current, and a thread that never made the
    project's app current (a threaded web server's, the test live server's) falls back to Celery's default
    app and its default broker: the task would wait on a broker no worker reads."""
    return celery_app().tasks[task.name].apply_async(kwargs=kwargs)


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
