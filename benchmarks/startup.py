"""Start-up benchmark: a gunicorn worker's memory after serving every page once, and how long two
non-scoring commands take from start to end.

    DATABASE_URL=postgres://.../faithanno_demo python benchmarks/startup.py [--port 8765] [--runs 3]

The database must hold the demo (`manage.py demo_setup`, as bin/start runs it); the script reads ids
with plain SQL on the tables (their names did not change when the apps were split), so the same script
measures a checkout of any version. It starts `gunicorn faithanno.wsgi` with one sync worker, logs in as
the demo's admin, GETs every page and API list below, then prints the worker's resident set size
(VmRSS), and the median wall and CPU time of `manage.py agreement --help` and of `manage.py export_judgements`
on the demo study (to /dev/null).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADMIN, PASSWORD = "admin", "faithanno-demo"


def first_ids() -> dict[str, int]:
    import psycopg

    queries = {
        "dataset": "SELECT d.id FROM annotations_dataset d JOIN annotations_document o ON o.dataset_id = d.id "
        "ORDER BY d.id LIMIT 1",
        "study": "SELECT id FROM annotations_study WHERE kind = 'study' ORDER BY id LIMIT 1",
        "task": "SELECT t.id FROM annotations_studytask t JOIN annotations_study s ON s.id = t.study_id "
        "WHERE s.kind = 'study' ORDER BY t.id LIMIT 1",
        "item": "SELECT i.id FROM annotations_studyitem i JOIN annotations_studytask t ON t.id = i.study_task_id "
        "JOIN annotations_study s ON s.id = t.study_id WHERE s.kind = 'study' ORDER BY i.id LIMIT 1",
        "summary": "SELECT min(summary_id) FROM scoring_explanation",
        "summary_b": "SELECT max(s.id) FROM annotations_summary s WHERE s.document_id = "
        "(SELECT document_id FROM annotations_summary WHERE id = (SELECT min(summary_id) FROM scoring_explanation))",
        "document": "SELECT id FROM annotations_document ORDER BY id LIMIT 1",
        "assignment": "SELECT id FROM annotations_assignment ORDER BY id LIMIT 1",
    }
    with psycopg.connect(os.environ["DATABASE_URL"]) as connection:
        return {name: connection.execute(sql).fetchone()[0] for name, sql in queries.items()}


def pages(ids: dict[str, int]) -> list[str]:
    d, s, t, i, m = ids["dataset"], ids["study"], ids["task"], ids["item"], ids["summary"]
    return [
        "/",
        "/annotate/",
        "/studies/",
        "/studies/new/",
        f"/studies/{s}/",
        f"/studies/{s}/analysis/",
        f"/studies/{s}/tasks/{t}/guidelines/",
        f"/studies/{s}/tasks/{t}/examples/",
        f"/studies/{s}/judgements.csv",
        f"/studies/{s}/summaries.csv",
        "/datasets/",
        f"/datasets/{d}/analysis/",
        f"/datasets/{d}/documents/",
        f"/datasets/{d}/summaries/",
        f"/datasets/{d}/summaries.csv",
        f"/datasets/{d}/judgements.csv",
        f"/analysis/items/{i}/",
        f"/summaries/{m}/",
        f"/summaries/compare/?a={m}&b={ids['summary_b']}",
        "/accounts/api-token/",
        "/api/v1/datasets/",
        f"/api/v1/datasets/{d}/",
        f"/api/v1/datasets/{d}/documents/",
        f"/api/v1/datasets/{d}/summaries/",
        f"/api/v1/datasets/{d}/correlations/",
        f"/api/v1/documents/{ids['document']}/",
        f"/api/v1/summaries/{m}/",
        f"/api/v1/summaries/{m}/explanations/",
        "/api/v1/studies/",
        f"/api/v1/studies/{s}/",
        f"/api/v1/studies/{s}/items/",
        f"/api/v1/studies/{s}/assignments/",
        f"/api/v1/studies/{s}/judgements/",
        f"/api/v1/studies/{s}/agreement/",
        "/api/v1/assignments/",
        "/api/schema/",
        "/api/docs/",
        "/admin/",
    ]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def worker_pid(master: int) -> int:
    for _ in range(100):
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True)
        pids = [int(p) for p in children.stdout.split()]
        if pids:
            return pids[0]
        time.sleep(0.1)
    raise RuntimeError("gunicorn started no worker")


def serve_every_page(port: int, paths: list[str]) -> tuple[float, float, dict[int, int]]:
    """The worker's RSS (MB) after start-up and after every page, and the answers by status."""
    env = {**os.environ, "DEBUG": os.environ.get("DEBUG", "True")}
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "faithanno.wsgi", "--workers", "1", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        worker = worker_pid(server.pid)
        base = f"http://127.0.0.1:{port}"
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        for _ in range(200):
            try:
                login_page = opener.open(f"{base}/accounts/login/").read().decode()
                break
            except urllib.error.URLError:
                time.sleep(0.1)
        started = rss_mb(worker)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page).group(1)
        form = urllib.parse.urlencode({"username": ADMIN, "password": PASSWORD, "csrfmiddlewaretoken": token})
        request = urllib.request.Request(f"{base}/accounts/login/", form.encode(), headers={"Referer": base})
        opener.open(request).read()
        statuses: dict[int, int] = {}
        for path in paths:
            try:
                status = opener.open(base + path).status
            except urllib.error.HTTPError as exc:
                status = exc.code
                print(f"  {path}: {status}", file=sys.stderr)
            statuses[status] = statuses.get(status, 0) + 1
            if os.environ.get("STARTUP_PER_PAGE"):
                print(f"  {rss_mb(worker):6.0f} MB after {path}", file=sys.stderr)
        return started, rss_mb(worker), statuses
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def command_seconds(arguments: list[str], runs: int) -> str:
    """Median wall time and median CPU time (user + system) of the command, from start to end."""
    wall, cpu = [], []
    for _ in range(runs):
        before = os.times()
        started = time.perf_counter()
        subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        wall.append(time.perf_counter() - started)
        after = os.times()
        cpu.append(after.children_user - before.children_user + after.children_system - before.children_system)
    return f"{statistics.median(wall):.2f} s wall, {statistics.median(cpu):.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (the median is printed)")
    args = parser.parse_args()
    ids = first_ids()
    paths = pages(ids)
    started, served, statuses = serve_every_page(args.port, paths)
    print(f"gunicorn worker RSS: {started:.0f} MB after start, {served:.0f} MB after {len(paths)} pages {statuses}")
    print(f"manage.py agreement --help: {command_seconds(['agreement', '--help'], args.runs)}")
    export = ["export_judgements", "--study", str(ids["study"]), "--output", "/dev/null"]
    print(f"manage.py export_judgements --study {ids['study']}: {command_seconds(export, args.runs)}")
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
