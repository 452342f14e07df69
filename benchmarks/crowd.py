"""Crowd load test: 200 workers arriving by a public study's link at once, pulling and judging items.

    python benchmarks/crowd.py                       # 200 workers, 5-15 s per item, 1,000 items, k = 3
    python benchmarks/crowd.py --think 0 0           # capacity: items judged back to back
    BENCH_DATABASE_URL=postgres://... python benchmarks/crowd.py --workers 4 --port 8813

It builds once, in its own PostgreSQL database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/faithanno_bench_crowd), a dataset of --items summaries, and on every run
a new public factuality study over them (k = --k, phases: consent, annotation, end; no training, no attention
checks; at most --per-worker items a worker; with the defaults the workers' maximum equals the study's k
places, so they empty the pool and the last pulls compete for the last places). A gunicorn server runs with
a deployment's settings (DEBUG off, throttles in Redis: BENCH_CACHE_URL, default redis://127.0.0.1:6379/9, NUM_PROXIES=1
as behind the deployment's proxy; each simulated worker sends its own X-Forwarded-For address).

Each simulated worker is a thread with its own cookies, over real HTTP, and does what the browser does:
opens the link with PROLIFIC_PID, STUDY_ID and SESSION_ID, reads and accepts the consent page, then
repeatedly asks for its next item (/crowd/<key>/next/, which pulls one and redirects to the annotation
frame), loads the frame, waits --think seconds and submits the judgement to the API the frame posts to,
until the study sends it to its end page. It prints p50/p95/p99 latency, throughput and errors per request
kind, then checks the database: no item above k accepted judgements, no worker given an item twice or
above their maximum, no item left held, and every submission answered 200 stored as a judgement.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.annotation import (  # noqa: E402
    database_ready,
    log,
    offsets,
    percentile,
    sentence,
    start_server,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/faithanno_bench_crowd"
DATASET = "bench-crowd"
KINDS = ("arrive", "consent", "next", "frame", "submit", "end")


def build_dataset(items: int) -> Any:
    """The benchmark's dataset of `items` summaries, five per document (made once per size)."""
    from corpus.models import Dataset, Document, Summary

    name = f"{DATASET}-{items}"
    existing = Dataset.objects.filter(name=name).first()
    if existing is not None:
        return existing
    rng = random.Random(2)
    dataset = Dataset.objects.create(name=name, source_format="benchmark")
    documents = []
    for number in range((items + 4) // 5):
        text = " ".join(sentence(rng, rng.randint(8, 14)) for _ in range(12))
        documents.append(Document(dataset=dataset, external_id=f"d{number:05d}", text=text, sentences=offsets(text)))
    Document.objects.bulk_create(documents, batch_size=1000)
    summaries = []
    for document in documents:
        for system in ("A", "B", "C", "D", "E"):
            text = sentence(rng, 12)
            summaries.append(Summary(document=document, external_id=system, system=system, text=text))
    Summary.objects.bulk_create(summaries[:items], batch_size=2000)
    log(f"  dataset {name}: {len(documents)} documents, {min(items, len(summaries))} summaries")
    return dataset


def study_make(args: argparse.Namespace) -> Any:
    """A new public study over the dataset (a new one each run: every run starts with an empty pool)."""
    from django.contrib.auth import get_user_model

    from crowd.services.studies import CrowdSpec, crowd_study_create
    from studies.services.studies import StudySpec

    dataset = build_dataset(args.items)
    researcher, _ = get_user_model().objects.get_or_create(
        username="bench-crowd-researcher", defaults={"is_superuser": True, "is_staff": True}
    )
    plan = crowd_study_create(
        spec=StudySpec(
            name=f"bench crowd {time.strftime('%Y-%m-%d %H:%M:%S')}",
            dataset=dataset,
            tasks=["factuality"],
            annotators=[],
            annotators_per_item=args.k,
            created_by=researcher,
        ),
        crowd=CrowdSpec(
            phases=("consent", "annotation", "end"),
            consent_text="We record your answers for research on summaries.",
            check_rate=0,
            max_items_per_worker=args.per_worker,
            completion_code="BENCH001",
            screenout_code="BENCH002",
            failure_code="BENCH003",
        ),
    )
    log(f"  study {plan.plan.study.pk} ({plan.plan.study.name}): {plan.plan.items} items, k={args.k}")
    return plan.crowd


class Browser:
    """One worker's browser: its own cookies and address, no automatic redirects (each request is timed)."""

    def __init__(self, port: int, address: str) -> None:
        self.port, self.address = port, address
        self.cookies: dict[str, str] = {"csrftoken": "".join(random.choices("abcdefghijklmnopqrstuvwxyz", k=32))}

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> tuple[int, str]:
        headers = {
            "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
            "X-Forwarded-For": self.address,
            "X-CSRFToken": self.cookies["csrftoken"],
            "Referer": f"http://127.0.0.1:{self.port}/",
        }
        if content_type:
            headers["Content-Type"] = content_type
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            for header in response.msg.get_all("Set-Cookie") or []:
                for name, morsel in SimpleCookie(header).items():
                    self.cookies[name] = morsel.value
            location = response.getheader("Location") or ""
            return response.status, urlsplit(location).path
        finally:
            connection.close()


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    errors: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    submitted: list[int] = field(default_factory=list)  # assignments whose submission answered 200
    finished: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, kind: str, browser: Browser, method: str, path: str, expect: int, **kwargs: Any) -> tuple[int, str]:
        began = time.perf_counter()
        try:
            status, location = browser.request(method, path, **kwargs)
            failure = None if status == expect else f"HTTP {status}"
        except OSError as exc:
            status, location, failure = 0, "", type(exc).__name__
        with self.lock:
            self.latencies[kind].append((time.perf_counter() - began) * 1000)
            if failure:
                self.errors[kind].append(failure)
        return status, location


def worker_run(number: int, key: str, args: argparse.Namespace, results: Results, start: threading.Barrier) -> None:
    rng = random.Random(number)
    browser = Browser(args.port, f"10.{number // 250}.{number % 250}.{1 + rng.randrange(250)}")
    pid = f"{number:024x}"
    start.wait()
    # Arrivals spread over --arrival seconds, as a platform's workers open a newly published study.
    time.sleep(rng.uniform(0, args.arrival))
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "benchstudy", "SESSION_ID": f"s{number}"})
    status, location = results.timed("arrive", browser, "GET", f"/crowd/{key}/?{query}", 302)
    if status != 302:
        return
    results.timed("consent", browser, "GET", location, 200)
    body = urlencode({"accept": "yes", "csrfmiddlewaretoken": browser.cookies["csrftoken"]}).encode()
    status, location = results.timed(
        "consent", browser, "POST", location, 302, body=body, content_type="application/x-www-form-urlencoded"
    )
    for _ in range(args.per_worker + 1):
        status, location = results.timed("next", browser, "GET", f"/crowd/{key}/next/", 302)
        if status != 302 or not location.startswith("/annotate/"):
            break
        assignment_id = int(location.strip("/").split("/")[-1])
        results.timed("frame", browser, "GET", location, 200)
        time.sleep(rng.uniform(*args.think))
        payload = json.dumps({"labels": {"0": rng.choice(("yes", "no"))}, "seconds": 10}).encode()
        status, _ = results.timed(
            "submit",
            browser,
            "POST",
            f"/api/v1/assignments/{assignment_id}/submission/",
            200,
            body=payload,
            content_type="application/json",
        )
        if status == 200:
            with results.lock:
                results.submitted.append(assignment_id)
    end = f"/crowd/{key}/end/"
    if location != end:
        with results.lock:
            results.errors["next"].append(f"sent to {location or 'nowhere'}, not the end page")
    status, _ = results.timed("end", browser, "GET", end, 200)
    if status == 200:
        with results.lock:
            results.finished += 1


def load(key: str, args: argparse.Namespace) -> tuple[Results, float]:
    results = Results()
    start = threading.Barrier(args.clients)
    threads = [
        threading.Thread(target=worker_run, args=(n, key, args, results, start), daemon=True)
        for n in range(args.clients)
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, time.perf_counter() - began


def consistency(crowd: Any, args: argparse.Namespace, submitted: list[int]) -> list[str]:
    """What the database says after the run; each line a check that passed or the problem found."""
    from django.db.models import Count, Q

    from studies.models import Assignment, Judgement, StudyItem

    study = crowd.study
    items = StudyItem.objects.filter(study_task__study=study)
    accepted = items.annotate(n=Count("assignments", filter=Q(assignments__status="submitted")))
    over_k = accepted.filter(n__gt=study.annotators_per_item).count()
    at_k = accepted.filter(n=study.annotators_per_item).count()
    assignments = Assignment.objects.filter(item__study_task__study=study)
    twice = (
        assignments.exclude(status="reclaimed")
        .values("annotator", "item__summary")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    over_max = (
        assignments.exclude(status="reclaimed")
        .values("annotator")
        .annotate(n=Count("id"))
        .filter(n__gt=args.per_worker)
        .count()
    )
    held = assignments.filter(status="assigned").count()
    stored = set(Judgement.objects.filter(assignment_id__in=submitted).values_list("assignment_id", flat=True))
    lost = len(set(submitted) - stored)
    not_submitted = assignments.filter(pk__in=submitted).exclude(status="submitted").count()
    return [
        f"items above k={study.annotators_per_item} accepted judgements: {over_k} "
        f"(items at k: {at_k} of {items.count()})",
        f"a summary given twice to one worker: {twice}; workers above their maximum of {args.per_worker}: {over_max}",
        f"items still held: {held}",
        f"submissions answered 200: {len(submitted)} ({len(set(submitted))} distinct); without a stored "
        f"judgement: {lost}; not in submitted state: {not_submitted}",
    ]


def report(results: Results, wall: float) -> None:
    for kind in KINDS:
        values = results.latencies[kind]
        if not values:
            continue
        errors = results.errors[kind]
        kinds = f" ({', '.join(sorted(set(errors)))})" if errors else ""
        log(
            f"    {kind:<8} {len(values):5d} requests, {len(values) / wall:6.1f}/s, "
            f"p50 {percentile(values, 0.5):6.1f} ms, p95 {percentile(values, 0.95):6.1f} ms, "
            f"p99 {percentile(values, 0.99):6.1f} ms, max {max(values):6.0f} ms, errors {len(errors)}{kinds}"
        )
    pages = [v for kind in ("consent", "next", "frame", "end") for v in results.latencies[kind]]
    if pages:
        log(
            f"    all pages {len(pages)} requests: p50 {percentile(pages, 0.5):.1f} ms, "
            f"p95 {percentile(pages, 0.95):.1f} ms, p99 {percentile(pages, 0.99):.1f} ms"
        )
    done = len(results.submitted)
    log(f"    {done} judgements in {wall:.1f} s ({done / wall:.1f}/s); {results.finished} workers reached the end page")


def in_process(args: argparse.Namespace, workers: int, items_each: int) -> None:
    """Server time of each request kind through the full middleware stack, without the network or the other
    workers: `workers` arrive one after the other in a study of their own and judge `items_each` items."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    crowd = study_make(args)
    timings: dict[str, list[tuple[float, float, int]]] = {kind: [] for kind in KINDS}

    def timed(kind: str, client: Client, method: str, path: str, *data: Any, **extra: Any) -> Any:
        with CaptureQueriesContext(connection) as queries:
            wall, cpu = time.perf_counter(), time.process_time()
            answer = getattr(client, method)(path, *data, **extra)
            elapsed = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, len(queries))
        timings[kind].append(elapsed)
        return answer

    for number in range(workers):
        client = Client(REMOTE_ADDR=f"10.200.{number // 250}.{number % 250}")
        location = timed("arrive", client, "get", f"/crowd/{crowd.key}/", {"PROLIFIC_PID": f"{number:024x}"})
        timed("consent", client, "get", location["Location"])
        timed("consent", client, "post", location["Location"], {"accept": "yes"})
        for _ in range(items_each):
            frame = timed("next", client, "get", f"/crowd/{crowd.key}/next/")["Location"]
            timed("frame", client, "get", frame)
            body = json.dumps({"labels": {"0": "yes"}, "seconds": 10})
            path = f"/api/v1/assignments/{frame.strip('/').split('/')[-1]}/submission/"
            timed("submit", client, "post", path, body, content_type="application/json")
    for kind, values in timings.items():
        if values:
            walls, cpus, queries = ([row[i] for row in values] for i in range(3))
            log(
                f"    {kind:<8} {len(values):4d} requests: wall p50 {percentile(walls, 0.5):6.1f} ms, "
                f"p95 {percentile(walls, 0.95):6.1f} ms; CPU p50 {percentile(cpus, 0.5):5.1f} ms; "
                f"SQL queries {min(queries)}-{max(queries)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--items", type=int, default=1000, help="summaries in the study (one factuality item each)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--clients", type=int, default=200, help="concurrent simulated workers")
    parser.add_argument("--per-worker", type=int, default=15, help="the study's maximum of items per worker")
    parser.add_argument(
        "--think", type=float, nargs=2, default=(5.0, 15.0), metavar=("MIN", "MAX"), help="seconds per item"
    )
    parser.add_argument("--arrival", type=float, default=10.0, help="workers arrive over this many seconds")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()
    args.think = tuple(args.think)

    os.environ["NUM_PROXIES"] = "1"  # the deployment's proxy: X-Forwarded-For names each worker's address
    database_ready(args.database_url, rebuild=False)
    log("1. data")
    crowd = study_make(args)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    log("2. server time per request, in-process (20 workers one after the other, 5 items each)")
    in_process(args, 20, 5)
    log(
        f"3. {args.clients} workers over {args.arrival:.0f} s against gunicorn ({args.workers} workers) over loopback, "
        f"{args.think[0]:g}-{args.think[1]:g} s per item, at most {args.per_worker} items each, "
        f"{args.items} items x k={args.k}"
    )
    server = start_server(args.database_url, args.port, args.workers)
    try:
        results, wall = load(crowd.key, args)
    finally:
        server.terminate()
        server.wait(timeout=30)
    report(results, wall)
    log("4. after the load")
    for line in consistency(crowd, args, results.submitted):
        log(f"    {line}")


if __name__ == "__main__":
    main()
