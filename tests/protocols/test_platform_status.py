"""Reading a crowd platform's export (protocols.platform_status): Prolific's submissions CSV, MTurk's batch
results CSV and Prolific's API answer; hostile files are refused naming file, line and field."""

from __future__ import annotations

import pytest

from protocols.platform_status import (
    MAX_ROWS,
    MTURK,
    PROLIFIC,
    PlatformFileError,
    PlatformStatus,
    platform_file_read,
    platform_statuses_merge,
    prolific_results_read,
)

# The head of Prolific's export as the researcher downloads it (demographic columns after these).
PROLIFIC_HEAD = (
    "Submission id,Participant id,Status,Custom study tncs accepted at,Started at,Completed at,Reviewed at,"
    "Archived at,Time taken,Completion code,Total approvals,Age,Sex\n"
)
PROLIFIC_ROW = "{sub},{pid},{status},Not Applicable,2026-11-27T10:00:00.000Z,,,,,,12,34,Female\n"
MTURK_HEAD = (
    '"HITId","HITTypeId","Title","AssignmentId","WorkerId","AssignmentStatus","AcceptTime","SubmitTime",'
    '"WorkTimeInSeconds","Input.summary","Answer.code","Approve","Reject"\n'
)
MTURK_ROW = (
    '"3HIT","3TYPE","Judge summaries","{aid}","{wid}","{status}","Fri Nov 27","Fri Nov 27","600","x","C1","",""\n'
)
LIMIT = 1_000_000


def prolific(*rows: tuple[str, str]) -> bytes:
    body = "".join(PROLIFIC_ROW.format(sub=f"sub{n}", pid=pid, status=status) for n, (pid, status) in enumerate(rows))
    return (PROLIFIC_HEAD + body).encode()


def read(data: bytes) -> tuple[str, list[PlatformStatus]]:
    return platform_file_read(data, source="export.csv", max_bytes=LIMIT)


def refusal(data: bytes, max_bytes: int = LIMIT) -> PlatformFileError:
    with pytest.raises(PlatformFileError) as caught:
        platform_file_read(data, source="export.csv", max_bytes=max_bytes)
    return caught.value


def test_it_reads_prolifics_export_and_normalises_its_statuses() -> None:
    data = prolific(
        ("5f1e2d3c4b5a69788796a5b4", "RETURNED"),
        ("6a1e2d3c4b5a69788796a5b4", "TIMED-OUT"),
        ("7b1e2d3c4b5a69788796a5b4", "AWAITING REVIEW"),
        ("8c1e2d3c4b5a69788796a5b4", "APPROVED"),
    )
    platform, statuses = read(b"\xef\xbb\xbf" + data + b"\n")  # a byte order mark and a blank line at the end
    assert platform == PROLIFIC
    assert [(s.status, s.line, s.left) for s in statuses] == [
        ("returned", 2, True),
        ("timed_out", 3, True),
        ("awaiting_review", 4, False),
        ("approved", 5, False),
    ]


def test_it_reads_mturks_batch_results_with_marked_returns() -> None:
    body = MTURK_ROW.format(aid="A1", wid="AZ3456EXAMPLE", status="Approved") + MTURK_ROW.format(
        aid="A2", wid="BX99", status="Returned"
    )
    platform, statuses = read((MTURK_HEAD + body).encode())
    assert platform == MTURK
    assert [(s.worker_id, s.status, s.left) for s in statuses] == [
        ("AZ3456EXAMPLE", "approved", False),
        ("BX99", "returned", True),
    ]


@pytest.mark.parametrize(
    ("data", "line", "field", "words"),
    [
        (b"", 1, "header", "empty"),
        (b"Name,Value\nx,y\n", 1, "header", "Participant id"),
        (prolific(("=HYPERLINK(1)", "RETURNED")), 2, "Participant id", "not a worker id"),
        (prolific(("5f1e", "GONE")), 2, "Status", "unknown status"),
        (prolific(("5f1e", "RETURNED"), ("5f1e", "APPROVED")), 3, "Participant id", "also on line 2"),
        (PROLIFIC_HEAD.encode() + b"s1,5f1e,RETURNED\n", 2, "row", "fields"),
        (prolific(("5f1e", "RETURNED")) + "sub9,caf\u00e9,RETURNED".encode("latin-1"), 3, None, "UTF-8"),
        (prolific(("5f1e", "RETURNED")).replace(b"5f1e", b"5f\x001e"), 2, None, "NUL"),
    ],
)
def test_it_refuses_a_hostile_file_naming_file_line_and_field(
    data: bytes, line: int, field: str | None, words: str
) -> None:
    error = refusal(data)
    assert (error.source, error.line, error.field) == ("export.csv", line, field)
    assert words in str(error) and str(error).startswith(f"export.csv, line {line}")


def test_it_refuses_a_file_over_the_limit_before_reading_it() -> None:
    error = refusal(prolific(("5f1e", "RETURNED")), max_bytes=10)
    assert "limit is 10 bytes" in error.message and error.line is None


def test_it_refuses_more_rows_than_the_maximum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("protocols.platform_status.MAX_ROWS", 2)
    error = refusal(prolific(("a1", "RETURNED"), ("a2", "RETURNED"), ("a3", "RETURNED")))
    assert error.line == 4 and "more than 2 rows" in error.message
    assert MAX_ROWS == 100_000


def test_it_keeps_one_row_of_a_worker_listed_twice_with_the_same_status() -> None:
    _, statuses = read(prolific(("a1", "RETURNED"), ("a1", "RETURNED")))
    assert [(s.worker_id, s.line) for s in statuses] == [("a1", 2)]


def test_it_reads_prolifics_api_answer_and_names_the_bad_submission() -> None:
    results = [
        {"id": "s1", "participant_id": "5f1e", "status": "RETURNED"},
        {"id": "s2", "participant": "6a1e", "status": "ACTIVE"},
    ]
    statuses = prolific_results_read(results, source="Prolific API", first=21)
    assert [(s.worker_id, s.status, s.line) for s in statuses] == [("5f1e", "returned", 21), ("6a1e", "active", 22)]
    with pytest.raises(PlatformFileError) as caught:
        prolific_results_read([{"participant_id": "x", "status": 3}], source="Prolific API", first=1)
    assert (caught.value.line, caught.value.field) == (1, "status")
    with pytest.raises(PlatformFileError):
        prolific_results_read({"results": []}, source="Prolific API", first=1)
    with pytest.raises(PlatformFileError) as caught:
        platform_statuses_merge([*statuses, PlatformStatus("5f1e", "approved", 40)], source="Prolific API")
    assert caught.value.line == 40
