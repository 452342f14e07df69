"""Browse benchmark: the summary browser over 100,000 summaries, per filter and sort, time and SQL queries.

    python benchmarks/browse.py            # builds the data once (about 2 minutes), then measures
    python benchmarks/browse.py --rebuild  # drop the benchmark database and build it again

It builds, in its own PostgreSQL database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/faithanno_bench_browse), 20,000 documents x 5 systems = 100,000
summaries, each with an imported metric score (R1), an imported human score (Faithful) and a computed
BERTScore explanation (score and P/R/F variants, empty payload: the browser never reads payloads), a
BUMP-style error type on every tenth summary, and imported factuality labels by two workers on 20,000
summaries (so disagreement has data). Then it prints the server time (median of repeated in-process
requests) and the SQL query count of the browse page for each filter and sort at two page sizes.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.annotation import database_ready, log  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/faithanno_bench_browse"
SYSTEMS = ("BERTS2S", "PtGen", "TConvS2S", "TranS2S", "Gold")
DATASET = "browse-bench"
ERROR_TYPES = ("Entity", "Predicate", "Circumstance")


def build(documents: int, seed: int) -> None:
    from django.db import transaction

    from accounts.services import external_annotators_get_or_create
    from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
    from scoring.models import Explanation
    from studies.models import Assignment, Judgement, Study, StudyItem, StudyTask

    if Dataset.objects.filter(name=DATASET).exists():
        log("data already built (use --rebuild to build it again)")
        return
    rng = random.Random(seed)
    started = time.perf_counter()
    with transaction.atomic():
        dataset = Dataset.objects.create(name=DATASET, source_format="benchmark")
        docs = Document.objects.bulk_create(
            Document(dataset=dataset, external_id=f"{i:06d}", text=f"Document {i}.", sentences=[[0, 12]])
            for i in range(documents)
        )
        summaries = Summary.objects.bulk_create(
            (
                Summary(
                    document=document,
                    external_id=system,
                    system=system,
                    text=f"{system} summary of document {document.external_id}.",
                    is_reference=system == "Gold",
                    meta={"error_type": rng.choice(ERROR_TYPES)} if rng.random() < 0.1 else {},
                )
                for document in docs
                for system in SYSTEMS
            ),
            batch_size=5000,
        )
        log(f"  {len(summaries)} summaries ({time.perf_counter() - started:.0f} s)")
        MetricScore.objects.bulk_create(
            (MetricScore(summary=s, name="R1", value=rng.random()) for s in summaries), batch_size=5000
        )
        HumanScore.objects.bulk_create(
            (HumanScore(summary=s, name="Faithful", value=rng.random()) for s in summaries), batch_size=5000
        )
        explanations = []
        for summary in summaries:
            p, r = rng.uniform(0.8, 1.0), rng.uniform(0.8, 1.0)
            f1 = 2 * p * r / (p + r)
            explanations.append(
                Explanation(
                    summary=summary,
                    metric="bertscore",
                    config={"benchmark": True},
                    config_hash="bench",
                    code_version="bench",
                    score=p,
                    scores={"precision": p, "recall": r, "f1": f1},
                )
            )
        Explanation.objects.bulk_create(explanations, batch_size=5000)
        log(f"  scores and explanations ({time.perf_counter() - started:.0f} s)")
        workers = external_annotators_get_or_create(dataset=dataset, workers=["w1", "w2"])
        study = Study.objects.create(name=f"{DATASET} imported", dataset=dataset, kind=Study.Kind.IMPORTED)
        task = StudyTask.objects.create(study=study, task="factuality")
        judged = summaries[: len(summaries) // 5]
        items = StudyItem.objects.bulk_create(
            (StudyItem(study_task=task, summary=s, position=i) for i, s in enumerate(judged)), batch_size=5000
        )
        assignments = Assignment.objects.bulk_create(
            (
                Assignment(item=item, annotator=worker, status=Assignment.Status.SUBMITTED, position=item.position)
                for item in items
                for worker in workers.values()
            ),
            batch_size=5000,
        )
        Judgement.objects.bulk_create(
            (Judgement(assignment=a, unit_index=0, label=rng.choice(("yes", "no"))) for a in assignments),
            batch_size=5000,
        )
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    log(f"  built in {time.perf_counter() - started:.0f} s")


def measure(repeat: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.http import QueryDict
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from accounts.services import account_create
    from analysis.selectors.browse import summaries_browse
    from common import roles
    from corpus.models import Dataset, Summary

    dataset = Dataset.objects.get(name=DATASET)
    researcher = get_user_model().objects.filter(username="bench-browser").first()
    if researcher is None:
        researcher, _ = account_create(username="bench-browser", role=roles.RESEARCHER, password="x" * 20)
    log(f"scale: {Summary.objects.filter(document__dataset=dataset).count()} summaries")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(researcher)
    url = reverse("dataset_summaries", args=[dataset.pk])
    cases = [
        ("no filter, by document", {}),
        ("one system", {"system": "PtGen"}),
        ("metric range (imported R1)", {"metric": "R1", "metric_min": "0.2", "metric_max": "0.4"}),
        ("computed variant, sorted", {"metric": "bertscore.f1", "sort": "-metric"}),
        ("gap metric-human, sorted", {"metric": "R1", "human": "Faithful", "sort": "-gap"}),
        ("gap range + human range", {"metric": "R1", "human": "Faithful", "gap_min": "0.5", "human_max": "0.3"}),
        ("disagreement >= 1, sorted", {"disagreement_min": "1", "sort": "-disagreement"}),
        ("error type", {"error_type": "Entity"}),
        ("text search", {"q": "document 0123"}),
    ]
    log(f"{'case':<34} {'page 50':>10} {'page 500':>10}  queries(50/500)  matches")
    for name, params in cases:
        medians, counts = [], []
        for size in (50, 500):
            query = {**params, "page_size": str(size)}
            response = client.get(url, query)
            assert response.status_code == 200, (name, response.status_code)
            times = []
            for _ in range(repeat):
                with CaptureQueriesContext(connection) as queries:
                    started = time.perf_counter()
                    response = client.get(url, query)
                    times.append((time.perf_counter() - started) * 1000)
            medians.append(statistics.median(times))
            counts.append(len(queries.captured_queries))
        matches = summaries_browse(dataset=dataset, params=QueryDict(urlencode(params)), user=researcher).count()
        log(f"{name:<34} {medians[0]:8.0f} ms {medians[1]:8.0f} ms  {counts[0]:>3} / {counts[1]:<3}       {matches}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the benchmark database")
    parser.add_argument("--documents", type=int, default=20_000, help="documents (5 summaries each)")
    parser.add_argument("--repeat", type=int, default=5, help="requests per case (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    database_ready(args.database_url, args.rebuild)
    build(args.documents, args.seed)
    measure(args.repeat)


if __name__ == "__main__":
    main()
