"""What the crowd platform says about a study's workers (protocols.platform_status reads its export or its
API): each worker's platform status is recorded on their Participation, and a worker who has left on the
platform (returned the study, timed out, rejected; MTurk: returned or abandoned) has their session ended:
their open items go back to the pool at once instead of after the study's timeout, their submitted work
stays (crowd.services.workers.crowd_worker_end)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from crowd.models import CrowdStudy, CrowdWorker
from crowd.services.workers import crowd_worker_end
from protocols.platform_status import COLUMNS, STATUS_NAMES, PlatformFileError, PlatformStatus, platform_file_read
from studies.models import Assignment, Participation


@dataclass(frozen=True)
class PlatformReport:
    """What applying a platform's statuses did (all zero on a replay)."""

    platform: str
    workers: int  # workers the statuses named
    recorded: int  # Participations whose platform status changed
    ended: int  # sessions ended now (the worker had left on the platform)
    released: int  # open items that went back to the pool
    unknown: list[str] = field(default_factory=list)  # ids passed over (skip_unknown)

    @property
    def summary(self) -> str:
        skipped = f"; {len(self.unknown)} unknown id(s) skipped" if self.unknown else ""
        return (
            f"{self.workers} worker(s) named: {self.recorded} platform status(es) recorded, {self.ended} "
            f"session(s) ended, {self.released} open item(s) back in the pool{skipped}."
        )


@transaction.atomic
def crowd_platform_status_apply(
    *,
    crowd: CrowdStudy,
    platform: str,
    statuses: list[PlatformStatus],
    source: str,
    skip_unknown: bool = False,
    id_field: str | None = None,
) -> PlatformReport:
    """Record the platform's status of each worker and end the sessions of those who left. Every id must be
    a worker of this study (else PlatformFileError naming the line, unless `skip_unknown`: a participant
    who returned the study before opening its link is no worker here); nothing is written on an error."""
    id_field = id_field or COLUMNS[platform][0]
    # Taken like a pull (crowd_item_next): no worker pulls a new item while their session is being ended.
    crowd = CrowdStudy.objects.select_for_update().select_related("study").get(pk=crowd.pk)
    if platform != crowd.platform:
        raise PlatformFileError(
            source,
            f"this is a {platform} export; the workers of this study come from {crowd.get_platform_display()}",
            line=1,
            field="header",
        )
    workers = {
        worker.participation.external_id: worker
        for worker in CrowdWorker.objects.filter(
            crowd_study=crowd, participation__external_id__in=[status.worker_id for status in statuses]
        ).select_related("participation")
    }
    unknown = [status for status in statuses if status.worker_id not in workers]
    if unknown and not skip_unknown:
        first = unknown[0]
        raise PlatformFileError(
            source,
            f"no worker of this study has the id {first.worker_id} ({len(unknown)} such id(s): another study's "
            "export, or participants who left before opening the study's link; these may be skipped)",
            line=first.line,
            field=id_field,
        )
    now = timezone.now()
    changed: list[Participation] = []
    ended = released = 0
    for status in statuses:
        worker = workers.get(status.worker_id)
        if worker is None:
            continue
        participation = worker.participation
        if participation.platform_status != status.status:
            participation.platform_status, participation.platform_status_at = status.status, now
            changed.append(participation)
        if status.left and worker.status == CrowdWorker.Status.ACTIVE:
            released += Assignment.objects.filter(
                annotator_id=worker.user_id,
                item__study_task__study_id=crowd.study_id,
                status=Assignment.Status.ASSIGNED,
            ).count()
            crowd_worker_end(
                worker=worker,
                status=CrowdWorker.Status.LEFT,
                reason=f"the platform says: {STATUS_NAMES[status.status]} ({source})",
            )
            ended += 1
    Participation.objects.bulk_update(changed, ["platform_status", "platform_status_at"], batch_size=500)
    return PlatformReport(
        platform=platform,
        workers=len(statuses) - len(unknown),
        recorded=len(changed),
        ended=ended,
        released=released,
        unknown=[status.worker_id for status in unknown],
    )


# A platform's export of one study: tens of thousands of submissions with their demographics fit easily.
PLATFORM_FILE_MAX_BYTES = 50 * 1024 * 1024


def crowd_platform_file_apply(*, crowd: CrowdStudy, data: bytes, source: str, skip_unknown: bool) -> PlatformReport:
    """Read a platform's export (Prolific's submissions CSV, MTurk's batch results CSV) and apply it."""
    platform, statuses = platform_file_read(data, source=source, max_bytes=PLATFORM_FILE_MAX_BYTES)
    return crowd_platform_status_apply(
        crowd=crowd, platform=platform, statuses=statuses, source=source, skip_unknown=skip_unknown
    )
