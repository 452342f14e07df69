"""CPU time of the pages at the annotation benchmark's scale, for a loaded machine.

    python benchmarks/page_cpu.py                    # this checkout, median of 9 requests per page
    python benchmarks/page_cpu.py --root ../other    # another checkout, against the same database
    python benchmarks/page_cpu.py --pages researcher # only the pages whose name holds this text

Wall time on a shared machine measures the queue for the CPU more than the page. This script requests the
pages `benchmarks/annotation.py` measures (its `pages()`; a checkout whose benchmark has none: the studies
list and both study pages) in the database it built (BENCH_DATABASE_URL, the same default), in-process with
the same deployment settings, and prints per page the median CPU time of a request: this process's
(Python, templates) plus that of its PostgreSQL backend (read from /proc/<pid>/stat, so PostgreSQL must run
on this machine; the kernel counts it in ticks of 10 ms), next to the wall time and the load average.
Before each request of a study page it does what `annotation.py` does (`before_request`: an empty cache, a
submission, no stored agreement tally). Run it alternately from two checkouts to compare code on
the same data under the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (fields 14 and 15 of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the checkout to run")
    parser.add_argument("--repeat", type=int, default=9, help="requests per page (median reported)")
    parser.add_argument("--pages", default="", help="only the pages whose name contains this text")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    os.chdir(root)
    import annotation as bench

    bench.database_ready(os.environ.get("BENCH_DATABASE_URL", bench.DEFAULT_URL), False)
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from studies.models import Study

    if hasattr(bench, "pages"):
        pages = bench.pages()
    else:  # an older checkout
        researcher = get_user_model().objects.get(username="bench-researcher")
        pages = [
            ("researcher: studies list", researcher, reverse("studies"), False),
            *(
                (f"researcher: study page, {what}", researcher, reverse("study_detail", args=[study.pk]), False)
                for what, study in (
                    ("300k judgements", Study.objects.get(name=bench.MAIN_STUDY)),
                    ("every task", Study.objects.get(name=bench.TASKS_STUDY)),
                )
            ),
        ]
    for name, user, path, prepare in pages:
        if args.pages not in name:
            continue
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        assert client.get(path).status_code == 200, path  # warm-up
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        cpu, wall = [], []
        for _ in range(args.repeat):
            if hasattr(bench, "before_request"):
                bench.before_request(prepare, path)
            elif prepare:  # an older checkout: its cold pages are requested with an empty cache
                cache.clear()
            backend, process, started = backend_cpu(pid), time.process_time(), time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                client.get(path)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - process + backend_cpu(pid) - backend) * 1000)
        print(
            f"{root.name:<16} {name:<46} CPU median {statistics.median(cpu):7.0f} ms   wall median "
            f"{statistics.median(wall):7.0f} ms   {len(queries.captured_queries)} queries   "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
