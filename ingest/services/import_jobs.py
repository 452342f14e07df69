"""Importing a file of any size: streamed, in bounded memory, all or nothing; and the import jobs that run
an upload on a worker (ingest.jobs) instead of inside the web request.

A file is read twice over: first every record is checked and its sentences split, one line at a time, with
nothing open in the database (a job's progress is committed as it goes); the checked records wait in a
spool file. Then one transaction writes them chunk by chunk. A bad line stops the first pass, so nothing
is written; a failure in the second rolls the whole import back.
"""

from __future__ import annotations

import logging
import pickle
import shutil
import tempfile
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.broker import broker_check, celery_app, task_send
from corpus.importers import records as file_records
from corpus.importers.records import DocumentRecord, ImportFormatError, SummaryRecord
from corpus.models import ImportJob
from ingest.services.imports import (
    IMPORT_CHUNK,
    ImportChecks,
    ImportReport,
    dataset_for_import,
    dataset_import_finish,
    dataset_write_records,
    sentence_offsets_stream,
)

logger = logging.getLogger(__name__)

Record = DocumentRecord | SummaryRecord
# Called with the number of the last line read, as the first pass goes.
LinesProgress = Callable[[int], None]


def _no_lines_progress(lines: int) -> None:
    return None


def count_lines(path: Path) -> int | None:
    """Lines of a file (cheap next to parsing them), for a progress total; None for a folder."""
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def _split_targets(record: Record) -> list[DocumentRecord | SummaryRecord]:
    """The texts of a record the configured spaCy pipeline splits (the source gave no sentences)."""
    summaries = record.summaries if isinstance(record, DocumentRecord) else [record]
    targets: list[DocumentRecord | SummaryRecord] = [record] if isinstance(record, DocumentRecord) else []
    targets += summaries
    return [target for target in targets if target.sentences is None]


def checked_records(records: Iterable[Record], checks: ImportChecks, *, n_process: int = 1) -> Iterator[Record]:
    """The records, checked and with their sentences split, in file order, holding only as many as spaCy's
    batches read ahead. Every record sends at least one text through spaCy (an empty one when it has
    nothing to split), so records without texts to split cannot pile up behind the pipe."""
    waiting: deque[list[Any]] = deque()  # [record, texts still being split]
    targets: deque[DocumentRecord | SummaryRecord | None] = deque()

    def texts() -> Iterator[str]:
        for record in records:
            checks.add(record)
            record_targets = _split_targets(record)
            waiting.append([record, max(len(record_targets), 1)])
            if not record_targets:
                targets.append(None)
                yield ""
            for target in record_targets:
                targets.append(target)
                yield target.text

    for spans in sentence_offsets_stream(texts(), n_process=n_process):
        target = targets.popleft()
        if target is not None:
            target.split_sentences = spans
        waiting[0][1] -= 1
        if waiting[0][1] == 0:
            yield waiting.popleft()[0]


class _Spool:
    """Checked records on disk, in chunks, until the write: documents apart from the loose summaries, which
    are written after every document (they may name one further down the file)."""

    def __init__(self) -> None:
        # Closed (and so deleted) by __exit__.
        self.files: dict[bool, IO[bytes]] = {
            loose: tempfile.TemporaryFile(prefix="faithanno-spool-")  # noqa: SIM115
            for loose in (False, True)
        }
        self.pending: dict[bool, list[Record]] = {False: [], True: []}

    def add(self, record: Record) -> None:
        loose = isinstance(record, SummaryRecord)
        self.pending[loose].append(record)
        if len(self.pending[loose]) >= IMPORT_CHUNK:
            self._flush(loose)

    def _flush(self, loose: bool) -> None:
        if self.pending[loose]:
            pickle.dump(self.pending[loose], self.files[loose], protocol=pickle.HIGHEST_PROTOCOL)
            self.pending[loose] = []

    def chunks(self) -> Iterator[list[Record]]:
        for loose in (False, True):
            self._flush(loose)
            handle = self.files[loose]
            handle.seek(0)
            while True:
                try:
                    # Our own file, written just now by this process: nothing foreign is unpickled.
                    yield pickle.load(handle)
                except EOFError:
                    break

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for handle in self.files.values():
            handle.close()


def dataset_import_file(
    *,
    name: str,
    format_name: str,
    path: Path,
    on_lines: LinesProgress = _no_lines_progress,
    n_process: int | None = None,
) -> ImportReport:
    """Import a file or folder of the given format into the dataset `name` (created, or updated when it
    exists). All or nothing; re-running adds no duplicates. Raises ImportFormatError naming file, line and
    field. Memory stays bounded for JSON lines of any length (the other formats are parsed whole)."""
    n_process = n_process or settings.FAITHANNO_IMPORT_PROCESSES
    checks = ImportChecks(name=name)
    with _Spool() as spool:
        last_line = 0
        for record in checked_records(file_records(format_name, path), checks, n_process=n_process):
            spool.add(record)
            if record.origin.line is not None and record.origin.line > last_line:
                last_line = record.origin.line
                on_lines(last_line)
        checks.finish()
        with transaction.atomic():
            dataset = dataset_for_import(name=name, source_format=format_name)
            report = ImportReport(dataset=dataset)
            for chunk in spool.chunks():
                dataset_write_records(dataset=dataset, records=chunk, source_format=format_name, report=report)
            dataset_import_finish(dataset=dataset)
        return report


# --- Import jobs ---------------------------------------------------------------------------------------


def import_job_create(*, user: Any, upload: UploadedFile[Any], format_name: str, name: str) -> ImportJob:
    """Store the upload under FAITHANNO_UPLOAD_DIR and queue its import on a worker (after the job is
    committed). Raises BrokerUnavailable (nothing stored) when no worker can be reached."""
    if not celery_app().conf.task_always_eager:  # eager (tests): the task runs here, no broker involved
        broker_check()
    file_name = Path(upload.name or "").name or "upload"
    folder = Path(settings.FAITHANNO_UPLOAD_DIR) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    path = folder / file_name
    with path.open("wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    job = ImportJob.objects.create(
        created_by=user,
        name=name,
        format=format_name,
        file_name=file_name,
        path=str(path),
        size=path.stat().st_size,
    )
    transaction.on_commit(lambda: import_job_enqueue(job=job))
    return job


def import_job_enqueue(*, job: ImportJob) -> None:
    from ingest.jobs import import_dataset_job

    task_send(import_dataset_job, job_id=job.pk)


def _claim(job_id: int) -> bool:
    """Take the job for this worker: a queued job, or a running one whose worker stopped reporting (it
    died; its transaction was rolled back, so nothing of it was written). A conditional update, so of two
    deliveries of the same task only one gets it."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.FAITHANNO_IMPORT_STALE_SECONDS)
    claimable = Q(status=ImportJob.Status.QUEUED) | Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=stale)
    taken = ImportJob.objects.filter(claimable, pk=job_id).update(
        status=ImportJob.Status.RUNNING, started_at=now, heartbeat_at=now, lines_done=0, errors=[]
    )
    return taken == 1


def import_job_run(*, job_id: int) -> bool:
    """Run a queued import job on this worker. Returns False, doing nothing, when the job is not there to
    take: done, failed, or running on a live worker (the broker delivered its task twice)."""
    if not _claim(job_id):
        logger.info("Import job %s is not queued (another delivery has it or had it): nothing to do.", job_id)
        return False
    job = ImportJob.objects.get(pk=job_id)
    path = Path(job.path)
    ImportJob.objects.filter(pk=job_id).update(lines_total=count_lines(path))

    def on_lines(lines: int) -> None:
        # Every 100 lines is often enough to watch and rare enough to cost nothing.
        if lines % 100 == 0:
            ImportJob.objects.filter(pk=job_id).update(lines_done=lines, heartbeat_at=timezone.now())

    try:
        report = dataset_import_file(name=job.name, format_name=job.format, path=path, on_lines=on_lines)
    except ImportFormatError as exc:
        error = {
            "file": Path(exc.file).name,
            "line": exc.line,
            "field": exc.field,
            "message": str(exc).replace(f"{path.parent}/", ""),
        }
        _finish(job_id, path, status=ImportJob.Status.FAILED, errors=[error])
        return True
    except Exception as exc:
        logger.exception("Import job %s failed.", job_id)
        error = {"file": job.file_name, "line": None, "field": None, "message": f"the import failed: {exc}"}
        _finish(job_id, path, status=ImportJob.Status.FAILED, errors=[error])
        return True
    _finish(
        job_id,
        path,
        status=ImportJob.Status.DONE,
        dataset_id=report.dataset.pk,
        report=report.lines(),
        lines_done=count_lines(path) or 0,
    )
    return True


def _finish(job_id: int, path: Path, **values: Any) -> None:
    ImportJob.objects.filter(pk=job_id).update(finished_at=timezone.now(), heartbeat_at=timezone.now(), **values)
    # The upload was only kept for the worker: the dataset (or the error) is what is left of it.
    shutil.rmtree(path.parent, ignore_errors=True)
