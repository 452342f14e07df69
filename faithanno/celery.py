"""The Celery app that spreads scoring and uploaded imports over workers (broker and queue from settings).

Start a worker on any machine that reaches the broker and the database:
    celery -A faithanno.celery worker --queues faithanno-scoring --concurrency 1
It is imported only by workers, `score --enqueue` and the web's scoring and import requests: the rest of the
web app runs without a broker. bin/start runs one worker on a filesystem broker (no Redis needed).
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")

app = Celery("faithanno")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["scoring"])
# The Celery task of uploaded imports is in ingest.jobs (protocols.tasks are annotation tasks).
app.autodiscover_tasks(["ingest"], related_name="jobs")
# An LLM judge's runs (judges.jobs).
app.autodiscover_tasks(["judges"], related_name="jobs")
