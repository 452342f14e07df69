"""What a crowd platform says about its workers, read from the platform's own export: Prolific's submissions
CSV ("Participant id", "Status", ...) or MTurk's batch results CSV ("WorkerId", "AssignmentStatus", ...), and
Prolific's API answer (its "results" objects: "participant_id", "status").

Django-free: bytes or objects in, one PlatformStatus per worker out, or a PlatformFileError that names the
file, the line and the field. docs/CROWD_CHECKS.md ("Workers who left on the platform") lists what is
accepted. Columns the parser does not need are ignored (the real exports carry dozens: demographics,
Input.* and Answer.*), but the columns it needs must be there under their platform's names.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# A platform id: letters, digits, - and _ (Prolific: 24 hexadecimal characters; MTurk: upper-case letters and
# digits). Anything else (a formula, spaces, NUL, markup, 101 characters) is refused.
WORKER_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")

PROLIFIC = "prolific"
MTURK = "mturk"

# The normalised statuses (stored on Participation.platform_status), by the platform's own spelling.
PROLIFIC_STATUSES = {
    "RESERVED": "reserved",
    "ACTIVE": "active",
    "AWAITING REVIEW": "awaiting_review",
    "APPROVED": "approved",
    "PARTIALLY APPROVED": "partially_approved",
    "RETURNED": "returned",
    "TIMED-OUT": "timed_out",
    "REJECTED": "rejected",
    "SCREENED OUT": "screened_out",
    "PROCESSING": "processing",
}
# MTurk lists Submitted, Approved and Rejected assignments only; a returned or abandoned one is absent from
# the batch results, so a researcher who knows may add a row marked Returned or Abandoned.
MTURK_STATUSES = {
    "Submitted": "submitted",
    "Approved": "approved",
    "Rejected": "rejected",
    "Returned": "returned",
    "Abandoned": "abandoned",
}
# The statuses that mean the worker has left the study on the platform: their open items go back to the
# pool and their session ends. Rejected too: the platform frees the place and the worker cannot go on.
LEFT = frozenset({"returned", "timed_out", "rejected", "abandoned"})
STATUS_NAMES = {
    "reserved": "Reserved",
    "active": "Active",
    "awaiting_review": "Awaiting review",
    "approved": "Approved",
    "partially_approved": "Partially approved",
    "returned": "Returned",
    "timed_out": "Timed out",
    "rejected": "Rejected",
    "screened_out": "Screened out",
    "processing": "Processing",
    "submitted": "Submitted",
    "abandoned": "Abandoned",
}
# (worker id column, status column, the platform's statuses) per platform.
COLUMNS = {
    PROLIFIC: ("Participant id", "Status", PROLIFIC_STATUSES),
    MTURK: ("WorkerId", "AssignmentStatus", MTURK_STATUSES),
}
MAX_ROWS = 100_000
MAX_FIELD_CHARS = 100_000


class PlatformFileError(ValueError):
    """A file (or API answer) that cannot be read: `where` names the file, line and field."""

    def __init__(self, source: str, message: str, *, line: int | None = None, field: str | None = None) -> None:
        where = source + (f", line {line}" if line is not None else "") + (f", {field}" if field else "")
        super().__init__(f"{where}: {message}")
        self.source, self.line, self.field, self.message = source, line, field, message


@dataclass(frozen=True)
class PlatformStatus:
    worker_id: str
    status: str  # normalised (STATUS_NAMES)
    line: int  # where it was read (the API: the submission's number, from 1)

    @property
    def left(self) -> bool:
        return self.status in LEFT


def _shown(value: str) -> str:
    text = value[:40].encode("unicode_escape").decode("ascii")
    return text + ("…" if len(value) > 40 else "")


def _decoded(data: bytes, source: str) -> str:
    """UTF-8 text (a byte order mark is dropped); a byte that is no UTF-8 is refused naming its line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PlatformFileError(
            source, "the file is not UTF-8 text (save the platform's export unchanged, or as CSV UTF-8)", line=line
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise PlatformFileError(source, "the file holds a NUL character", line=text.count("\n", 0, nul) + 1)
    return text


def _platform_of(header: list[str], source: str) -> str:
    names = set(header)
    for platform, (worker_column, status_column, _) in COLUMNS.items():
        if worker_column in names and status_column in names:
            return platform
    expected = "; ".join(f'{platform}: "{w}" and "{s}"' for platform, (w, s, _) in COLUMNS.items())
    raise PlatformFileError(
        source, f"the header names no platform's worker and status columns ({expected})", line=1, field="header"
    )


def status_of(platform: str, raw: Any, *, source: str, line: int, field: str) -> str:
    """The normalised status of the platform's value; an unknown value is refused naming what is accepted."""
    statuses = COLUMNS[platform][2]
    if isinstance(raw, str) and raw.strip() in statuses:
        return statuses[raw.strip()]
    shown = _shown(raw) if isinstance(raw, str) else type(raw).__name__
    accepted = ", ".join(statuses)
    raise PlatformFileError(source, f"unknown status {shown!r} (accepted: {accepted})", line=line, field=field)


def worker_id_of(raw: Any, *, source: str, line: int, field: str) -> str:
    value = raw.strip() if isinstance(raw, str) else raw
    if not isinstance(value, str) or not WORKER_ID.fullmatch(value):
        shown = _shown(value) if isinstance(value, str) else type(value).__name__
        raise PlatformFileError(
            source, f"{shown!r} is not a worker id (1-100 letters, digits, - or _)", line=line, field=field
        )
    return value


def _one_per_worker(statuses: Iterable[PlatformStatus], source: str, field: str) -> list[PlatformStatus]:
    """One status per worker: the same worker twice with two statuses is refused (which one would hold?)."""
    seen: dict[str, PlatformStatus] = {}
    for status in statuses:
        before = seen.get(status.worker_id)
        if before is not None and before.status != status.status:
            raise PlatformFileError(
                source,
                f"worker {status.worker_id} is also on line {before.line} with another status "
                f"({STATUS_NAMES[before.status]}, here {STATUS_NAMES[status.status]})",
                line=status.line,
                field=field,
            )
        seen.setdefault(status.worker_id, status)
    return list(seen.values())


def platform_file_read(data: bytes, *, source: str, max_bytes: int) -> tuple[str, list[PlatformStatus]]:
    """The platform (PROLIFIC or MTURK) and one status per worker of a platform's CSV export."""
    if len(data) > max_bytes:
        raise PlatformFileError(source, f"the file is {len(data):,} bytes; the limit is {max_bytes:,} bytes")
    text = _decoded(data, source)
    csv.field_size_limit(MAX_FIELD_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise PlatformFileError(source, "the file is empty", line=1, field="header")
        platform = _platform_of([name.strip() for name in header], source)
        worker_column, status_column, _ = COLUMNS[platform]
        names = [name.strip() for name in header]
        worker_at, status_at = names.index(worker_column), names.index(status_column)
        statuses: list[PlatformStatus] = []
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue  # a blank line (spreadsheets add them at the end)
            if len(statuses) >= MAX_ROWS:
                raise PlatformFileError(source, f"more than {MAX_ROWS:,} rows", line=line)
            if len(row) != len(header):
                raise PlatformFileError(
                    source, f"{len(row)} fields where the header has {len(header)}", line=line, field="row"
                )
            worker_id = worker_id_of(row[worker_at], source=source, line=line, field=worker_column)
            status = status_of(platform, row[status_at], source=source, line=line, field=status_column)
            statuses.append(PlatformStatus(worker_id, status, line))
    except csv.Error as exc:
        raise PlatformFileError(source, f"not a well-formed CSV file ({exc})", line=reader.line_num) from None
    return platform, _one_per_worker(statuses, source, worker_column)


def prolific_results_read(results: Any, *, source: str, first: int) -> list[PlatformStatus]:
    """The statuses of one page of Prolific's list of a study's submissions (its "results" list): each
    object's "participant_id" (or "participant") and "status"; `first` numbers the page's first submission."""
    if not isinstance(results, list):
        raise PlatformFileError(source, "the answer's results are not a list", field="results")
    statuses: list[PlatformStatus] = []
    for number, submission in enumerate(results, start=first):
        if not isinstance(submission, Mapping):
            raise PlatformFileError(source, "a submission is not an object", line=number, field="results")
        raw_id = submission.get("participant_id", submission.get("participant"))
        worker_id = worker_id_of(raw_id, source=source, line=number, field="participant_id")
        status = status_of(PROLIFIC, submission.get("status"), source=source, line=number, field="status")
        statuses.append(PlatformStatus(worker_id, status, number))
    return statuses


def platform_statuses_merge(statuses: Iterable[PlatformStatus], *, source: str) -> list[PlatformStatus]:
    """One status per worker over pages read separately (the API's), refused as in a file."""
    return _one_per_worker(statuses, source, "participant_id")
