"""Celery tasks of the annotations app: an uploaded file's import, on the same workers as scoring.

Acknowledged late like every task (faithanno/settings.py), so a worker's death hands the task out again;
ingest.services.import_jobs.import_job_run claims the job first, so a second delivery imports nothing twice.
"""

from __future__ import annotations

from celery import shared_task

from ingest.services.import_jobs import import_job_run


# Named as when it lived in studies.jobs, so tasks queued before the move still find it.
@shared_task(acks_late=True, name="studies.jobs.import_dataset_job")
def import_dataset_job(*, job_id: int) -> bool:
    """Import an ImportJob's stored upload; False when another delivery has (or had) the job."""
    return import_job_run(job_id=job_id)
