"""Reading import jobs: a job is seen by whoever uploaded it, and by admins."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from common import roles
from corpus.models import ImportJob


def import_jobs_for_user(*, user: Any) -> QuerySet[ImportJob]:
    jobs = ImportJob.objects.select_related("dataset")
    if roles.user_has_role(user, roles.ADMIN):
        return jobs
    return jobs.filter(created_by=user)


def import_jobs_recent(*, user: Any, limit: int = 10) -> list[ImportJob]:
    """The user's own latest uploads, newest first as the model orders them (an admin's too: only their own)."""
    return list(import_jobs_for_user(user=user).filter(created_by=user)[:limit])
