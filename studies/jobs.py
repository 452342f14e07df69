"""Celery tasks of the annotations app: an uploaded file's import, on the same workers as scoring.

Acknowledged late like every task (faithanno/settings.py), so a worker's death hands the task out again;
studies.services.import_jobs.import_job_run claims the job first, so a second delivery imports nothing twice.
"""

from __future__ import annotations

from celery import shared_task

from studies.services.import_jobs import import_job_run


@shared_task(acks_late=True)
def import_dataset_job(*, job_id: int) -> bool:
    """Import an ImportJob's stored upload; False when another delivery has (or had) the job."""
    return import_job_run(job_id=job_id)
