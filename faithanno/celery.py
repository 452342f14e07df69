"""The Celery app that spreads scoring over worker machines (broker and queue from settings).

Start a worker on any machine that reaches the broker and the database:
    celery -A faithanno.celery worker --queues faithanno-scoring --concurrency 1
It is imported only by workers and by `score --enqueue`, so the web app never needs a broker.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")

app = Celery("faithanno")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["scoring"])
