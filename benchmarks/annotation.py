"""Annotation benchmark: page server time and SQL queries at scale, and judgement saves under load.

    python benchmarks/annotation.py            # builds the data once, then measures (about 5 minutes)
    python benchmarks/annotation.py --rebuild  # drop the benchmark database and build it again

It builds, in its own PostgreSQL database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/faithanno_bench_annotation), 10,000 summaries (2,000 documents x 5),
100 annotators and a BERTScore study over all summaries with k = 3 whose 30,000 assignments are all
submitted with 10 judged words each (300,000 judgements), plus a study with every task over 100
summaries. Explanation payloads are synthetic but follow docs/EXPLANATIONS.md (benchmark data).

Then it prints (1) the server time (median of repeated in-process requests) and SQL query count of the
annotator dashboard, every task view and the researcher's study pages, and (2) the p50/p95/p99 latency,
throughput and error rate of saving judgements (the submit endpoint, a whole item per request, and the
draft endpoint) with 50 concurrent simulated annotators over loopback against gunicorn. Both run with
a deployment's settings: DEBUG off (lockout, throttles, Content-Security-Policy in place) and the
throttle counts in Redis (BENCH_CACHE_URL, default redis://127.0.0.1:6379/9), shared by the workers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/faithanno_bench_annotation"
WORDS = (
    "council",
    "bridge",
    "river",
    "police",
    "officer",
    "minister",
    "hospital",
    "school",
    "teacher",
    "village",
    "market",
    "storm",
    "flood",
    "road",
    "company",
    "worker",
    "union",
    "strike",
    "match",
    "player",
    "goal",
    "season",
    "club",
    "coach",
    "court",
    "judge",
    "report",
    "survey",
    "children",
    "parents",
    "museum",
    "coin",
    "castle",
    "farmer",
    "harvest",
    "energy",
    "price",
    "railway",
    "station",
    "airport",
    "pilot",
    "weather",
    "island",
)
STOPWORDS = ("the", "a", "of", "in", "on", "and", "was", "has", "to", "by")
BENCH_DATASET = "bench"
MAIN_STUDY = "bench: bertscore k=3"
TASKS_STUDY = "bench: every task"
# The benchmark process signs the simulated annotators' sessions; gunicorn must check them with the same key.
BENCH_SECRET_KEY = "benchmark-only-" + "x" * 40


def log(message: str) -> None:
    print(message, flush=True)


def ensure_database(url: str, rebuild: bool) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and rebuild:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def database_ready(url: str, rebuild: bool) -> None:
    """Create (or, with `rebuild`, recreate) the benchmark database, point Django at it and migrate it."""
    ensure_database(url, rebuild)
    # The in-process page timings run with the same production settings as the gunicorn server.
    os.environ.update(production_environment(url))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")
    collect_static()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    log(f"database {url}")


# --- data -----------------------------------------------------------------------------------------------


def sentence(rng: random.Random, length: int) -> str:
    words = [rng.choice(WORDS) if i % 2 == 0 else rng.choice(STOPWORDS) for i in range(length)]
    return " ".join(words).capitalize() + "."


def offsets(text: str) -> list[list[int]]:
    spans, start = [], 0
    for position, char in enumerate(text):
        if char == "." and (position + 1 == len(text) or text[position + 1] == " "):
            spans.append([start, position + 1])
            start = position + 2
    return spans


def word_offsets(text: str) -> list[tuple[int, int, str]]:
    result, position = [], 0
    for word in text.replace(".", " .").split():
        start = text.index(word, position)
        result.append((start, start + len(word), word))
        position = start + len(word)
    return result


def bertscore_payload(summary: str, document: str, rng: random.Random) -> dict[str, Any]:
    source_words = word_offsets(document)
    tokens, words = [], []
    for index, (start, end, word) in enumerate(word_offsets(summary)):
        aligned = rng.choice(source_words)
        similarity = round(rng.uniform(0.3, 1.0), 3)
        tokens.append(
            {
                "start": start,
                "end": end,
                "text": word,
                "similarity": similarity,
                "aligned": [aligned[0], aligned[1]],
                "aligned_text": aligned[2],
                "weight": 1.0,
                "word": index,
            }
        )
        words.append(
            {
                "start": start,
                "end": end,
                "text": word,
                "stopword": word.lower() in STOPWORDS,
                "punct": word == ".",
                "tokens": [index],
                "similarity": similarity,
            }
        )
    return {
        "tokens": tokens,
        "words": words,
        "source_token_count": len(source_words),
        "truncated": {"summary": False, "source": False},
    }


def qags_payload(summary: str, document: str) -> dict[str, Any]:
    questions = []
    for start, end, word in [w for w in word_offsets(summary) if w[2] not in STOPWORDS and w[2] != "."][:3]:
        found = document.find(word)
        questions.append(
            {
                "question": f"What is said about {word}?",
                "candidate": {"start": start, "end": end, "text": word, "type": "NP"},
                "summary_answer": {"start": start, "end": end, "text": word, "unanswerable": False},
                "source_answer": {"start": found, "end": found + len(word), "text": word, "unanswerable": False}
                if found >= 0
                else {"start": None, "end": None, "text": "", "unanswerable": True},
                "f1": 1.0 if found >= 0 else 0.0,
                "kept": True,
                "filter_reason": "",
            }
        )
    return {"variant": "qags_cloze", "questions": questions, "models": {"qg": "cloze", "qa": "cloze"}}


def entailment_payload(summary: str, summary_sentences: list, document_sentences: list) -> dict[str, Any]:
    return {
        "k": 3,
        "sentences": [
            {
                "start": s,
                "end": e,
                "text": summary[s:e],
                "top": [
                    {"index": j, "start": document_sentences[j][0], "end": document_sentences[j][1], "similarity": 0.5}
                    for j in range(i, i + 3)
                ],
                "entailment": {"s2s": None, "d2s": None, "top2s": None},
                "s2s_best": None,
            }
            for i, (s, e) in enumerate(summary_sentences)
        ],
        "nli": {"model": "", "computed": False, "reason": "benchmark data", "entailment_index": None},
    }


def explanation(summary: Any, metric: str, payload: dict[str, Any]) -> Any:
    from scoring.models import Explanation

    return Explanation(
        summary=summary,
        metric=metric,
        config={"bench": True},
        config_hash=f"bench-{metric}",
        model_ids={},
        code_version="bench",
        score=0.5,
        scores={},
        payload=payload,
    )


def build(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.utils import timezone

    from accounts.services import role_group
    from common import roles
    from corpus.models import Dataset, Document, HumanScore, Summary
    from protocols.tasks import STUDY_TASKS
    from scoring.models import Explanation
    from studies.models import Assignment, Judgement, Study
    from studies.selectors.assignments import item_units
    from studies.selectors.selection import ItemSelection, summaries_select
    from studies.services.studies import StudySpec, study_create

    if Study.objects.filter(name=TASKS_STUDY).exists():
        log("benchmark data exists (use --rebuild to build it again)")
        return
    rng = random.Random(1)
    began = time.perf_counter()
    dataset = Dataset.objects.create(name=BENCH_DATASET, source_format="benchmark")
    documents = []
    for number in range(args.summaries // 5):
        text = " ".join(sentence(rng, rng.randint(8, 14)) for _ in range(15))
        documents.append(Document(dataset=dataset, external_id=f"d{number:05d}", text=text, sentences=offsets(text)))
    Document.objects.bulk_create(documents, batch_size=1000)
    summaries = []
    for document in documents:
        for system in ("Gold", "A", "B", "C", "D"):
            # 20 words, 10 of them content words: 10 units in the BERTScore task
            text = sentence(rng, 10) + " " + sentence(rng, 10)
            summaries.append(
                Summary(
                    document=document,
                    external_id=system,
                    system=system,
                    text=text,
                    sentences=offsets(text),
                    is_reference=system == "Gold",
                )
            )
    Summary.objects.bulk_create(summaries, batch_size=2000)
    HumanScore.objects.bulk_create(
        [HumanScore(summary=s, name="Faithful", value=rng.random()) for s in summaries if not s.is_reference],
        batch_size=5000,
    )
    texts = {d.pk: d.text for d in documents}
    Explanation.objects.bulk_create(
        [explanation(s, "bertscore", bertscore_payload(s.text, texts[s.document_id], rng)) for s in summaries],
        batch_size=1000,
    )
    log(
        f"  {len(documents)} documents, {len(summaries)} summaries with BERTScore explanations "
        f"({time.perf_counter() - began:.0f} s)"
    )

    group = role_group(roles.ANNOTATOR)
    password = make_password("bench-annotator")
    users = get_user_model().objects
    users.bulk_create([users.model(username=f"annotator{i:03d}", password=password) for i in range(args.annotators)])
    annotators = list(users.filter(username__startswith="annotator").order_by("username"))
    group.user_set.add(*annotators)
    researcher = users.create(username="bench-researcher", password=password, is_superuser=True, is_staff=True)

    started = time.perf_counter()
    plan = study_create(
        spec=StudySpec(
            name=MAIN_STUDY,
            dataset=dataset,
            tasks=["bertscore"],
            annotators=annotators,
            annotators_per_item=args.k,
            created_by=researcher,
        )
    )
    log(
        f"  study_create over {plan.items} items, k={args.k}, {len(annotators)} annotators: "
        f"{plan.assignments} assignments in {time.perf_counter() - started:.1f} s"
    )

    started = time.perf_counter()
    assignments = list(
        Assignment.objects.filter(item__study_task__study=plan.study).select_related(
            "item__summary", "item__explanation", "item__study_task"
        )
    )
    units_by_item: dict[int, list[Any]] = {}
    batch: list[Judgement] = []
    total = 0
    labels = ("correct", "correct", "correct", "incorrect", "dont_know")
    for assignment in assignments:
        units = units_by_item.get(assignment.item_id)
        if units is None:
            units = units_by_item[assignment.item_id] = item_units(assignment.item)
        batch.extend(
            Judgement(assignment=assignment, unit_index=u.index, unit_text=u.text, label=rng.choice(labels))
            for u in units
        )
        if len(batch) >= 20000:
            Judgement.objects.bulk_create(batch)
            total += len(batch)
            batch = []
    Judgement.objects.bulk_create(batch)
    total += len(batch)
    now = timezone.now()
    Assignment.objects.filter(item__study_task__study=plan.study).update(
        status=Assignment.Status.SUBMITTED, submitted_at=now, time_spent=42.0, guidelines_version=1
    )
    log(f"  {total} judgements stored ({time.perf_counter() - started:.0f} s)")

    selection = ItemSelection(mode="random", size=100, seed=7)
    sample = summaries_select(dataset=dataset, selection=selection).summaries
    Explanation.objects.bulk_create(
        [explanation(s, "qags_cloze", qags_payload(s.text, texts[s.document_id])) for s in sample]
        + [explanation(s, "entailment", entailment_payload(s.text, s.sentences, s.document.sentences)) for s in sample]
    )
    plan = study_create(
        spec=StudySpec(
            name=TASKS_STUDY,
            dataset=dataset,
            tasks=list(STUDY_TASKS),
            annotators=annotators,
            annotators_per_item=args.k,
            created_by=researcher,
            selection=selection,
        )
    )
    log(f"  '{TASKS_STUDY}': {plan.items} items, {plan.assignments} assignments")
    log(f"built in {time.perf_counter() - began:.0f} s")


# --- page timings ---------------------------------------------------------------------------------------


COLD = "cold"  # with an empty cache
AFTER_SUBMISSION = "after a submission"  # an item of the study submitted again (other labels) before each view
NO_TALLY = "no tally"  # with an empty cache and no stored agreement tally: the figures read from every label


def before_request(prepare: str | bool, url: str) -> None:
    """What happens before each timed request of a page (`pages()`). The study page keeps its agreement
    figures in the cache until the study's submitted work changes and each label task's agreement tally
    (studies.models.AgreementTally) up to date on every submission: COLD is a view that finds its figures
    in no cache, AFTER_SUBMISSION the first view after a real submission, NO_TALLY the first view ever (or
    after an import, an exclusion: whatever changes submitted work outside a submission)."""
    from django.core.cache import cache
    from django.urls import resolve

    from studies.models import AgreementTally, Assignment
    from studies.selectors.assignments import item_units
    from studies.services.studies import assignment_submit

    if not prepare:
        return
    if prepare == AFTER_SUBMISSION:
        study_id = resolve(url.split("?")[0]).kwargs["study_id"]
        done = Assignment.objects.filter(item__study_task__study_id=study_id, status=Assignment.Status.SUBMITTED)
        assignment = done.select_related("item__study_task", "item__summary", "annotator").order_by("?").first()
        label = random.choice(("correct", "incorrect", "dont_know"))
        labels = {u.index: label for u in item_units(assignment.item)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)
        return
    cache.clear()  # COLD, NO_TALLY, and True from an older checkout's pages()
    if prepare == NO_TALLY:
        AgreementTally.objects.all().delete()


def pages() -> list[tuple[str, Any, str, str]]:
    """(name, user, address, what to do before each request: before_request) of every measured page."""
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from protocols.tasks import STUDY_TASKS
    from studies.models import Assignment, Study

    annotator = get_user_model().objects.get(username="annotator000")
    researcher = get_user_model().objects.get(username="bench-researcher")
    main = Study.objects.get(name=MAIN_STUDY)
    tasks_study = Study.objects.get(name=TASKS_STUDY)
    result: list[tuple[str, Any, str, str]] = [("annotator dashboard", annotator, reverse("dashboard"), "")]
    # Grouped by study and task; the filter shows one study's items whose document matches a text.
    filtered = f"{reverse('dashboard')}?study={main.pk}&task=bertscore&q=d0001"
    result.append(("annotator dashboard, filtered", annotator, filtered, ""))
    for task in STUDY_TASKS:
        item = (
            Assignment.objects.filter(
                annotator=annotator, item__study_task__study=tasks_study, item__study_task__task=task
            )
            .order_by("position")
            .first()
        )
        result.append((f"task view: {task}", annotator, reverse("annotate", args=[item.pk]), ""))
    done = Assignment.objects.filter(annotator=annotator, item__study_task__study=main).first()
    main_page = reverse("study_detail", args=[main.pk])
    tasks_page = reverse("study_detail", args=[tasks_study.pk])
    result += [
        ("task view: bertscore (a submitted item)", annotator, reverse("annotate", args=[done.pk]), ""),
        ("researcher: studies list", researcher, reverse("studies"), ""),
        ("researcher: study page, 300k judgements", researcher, main_page, ""),
        ("researcher: study page, 300k judgements, cold", researcher, main_page, COLD),
        ("researcher: study page, 300k, after a submission", researcher, main_page, AFTER_SUBMISSION),
        ("researcher: study page, 300k, no tally", researcher, main_page, NO_TALLY),
        ("researcher: study page, every task", researcher, tasks_page, ""),
        ("researcher: study page, every task, cold", researcher, tasks_page, COLD),
        ("researcher: study page, every task, no tally", researcher, tasks_page, NO_TALLY),
        ("researcher: new study form", researcher, reverse("study_new") + f"?dataset={main.dataset_id}", ""),
    ]
    return result


def measure_pages(repeat: int) -> list[tuple[str, float, float, int]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from corpus.models import Summary
    from studies.models import Assignment, Judgement, StudyItem

    log(
        f"scale: {Summary.objects.count()} summaries, {get_user_model().objects.count()} users, "
        f"{StudyItem.objects.count()} items, {Assignment.objects.count()} assignments, "
        f"{Judgement.objects.count()} judgements"
    )
    results = []
    for name, user, url, prepare in pages():
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        assert client.get(url).status_code == 200, url  # warm-up
        times = []
        for _ in range(repeat):
            before_request(prepare, url)
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        results.append((name, statistics.median(times), max(times), len(queries.captured_queries)))
        log(
            f"  {name:<46} median {statistics.median(times):8.1f} ms   max {max(times):8.1f} ms   "
            f"{len(queries.captured_queries):3d} queries"
        )
    return results


# --- load test ------------------------------------------------------------------------------------------


def sessions_for(users: list[Any]) -> list[dict[str, str]]:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils.crypto import get_random_string

    # The backend a real login records: the first one that can load users. django-axes' standalone
    # backend comes first (it must see every attempt) but only vets credentials.
    backend = next(path for path in settings.AUTHENTICATION_BACKENDS if hasattr(load_backend(path), "get_user"))
    result = []
    for user in users:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        csrf = get_random_string(32)
        result.append(
            {
                "Cookie": f"sessionid={session.session_key}; csrftoken={csrf}",
                "X-CSRFToken": csrf,
                "Content-Type": "application/json",
            }
        )
    return result


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def load(port: int, clients: int, seconds: float, think: tuple[float, float]) -> dict[str, dict[str, Any]]:
    """Simulated annotators: each judges one word of an item every `think` seconds (a draft save per word)
    and submits the item after its 10 words; with no think time they submit items back to back."""
    from django.contrib.auth import get_user_model

    from studies.models import Assignment, Study
    from studies.selectors.assignments import item_units

    study = Study.objects.get(name=MAIN_STUDY)
    users = list(get_user_model().objects.filter(username__startswith="annotator").order_by("username")[:clients])
    headers = sessions_for(users)
    work: list[list[tuple[int, list[int]]]] = []
    for user in users:
        mine = list(
            Assignment.objects.filter(annotator=user, item__study_task__study=study).select_related(
                "item__summary", "item__explanation", "item__study_task"
            )[:30]
        )
        work.append([(a.pk, [u.index for u in item_units(a.item)]) for a in mine])
    latencies: dict[str, list[float]] = {"draft": [], "submit": []}
    errors: dict[str, list[str]] = {"draft": [], "submit": []}
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    start = threading.Barrier(clients)

    def post(number: int, kind: str, path: str, body: dict[str, Any]) -> None:
        began = time.perf_counter()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("POST", path, body=json.dumps(body), headers=headers[number])
            response = connection.getresponse()
            response.read()
            connection.close()
            failed = None if response.status == 200 else f"HTTP {response.status}"
        except OSError as exc:
            failed = type(exc).__name__
        with lock:
            latencies[kind].append((time.perf_counter() - began) * 1000)
            if failed:
                errors[kind].append(failed)

    def annotator(number: int) -> None:
        rng = random.Random(number)
        start.wait()
        while time.perf_counter() < deadline:
            assignment_id, units = rng.choice(work[number])
            labels: dict[str, str] = {}
            for unit in units if think[1] else ():
                time.sleep(rng.uniform(*think))
                labels[str(unit)] = rng.choice(("correct", "incorrect", "dont_know"))
                draft = {"savedAt": int(time.time() * 1000), "seconds": len(labels), "task": {"labels": labels}}
                post(number, "draft", f"/api/v1/assignments/{assignment_id}/draft/", {"draft": draft})
            labels = {str(u): rng.choice(("correct", "incorrect", "dont_know")) for u in units}
            post(
                number, "submit", f"/api/v1/assignments/{assignment_id}/submission/", {"labels": labels, "seconds": 10}
            )

    threads = [threading.Thread(target=annotator, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return {
        kind: {
            "requests": len(values),
            "throughput": len(values) / wall,
            "p50": percentile(values, 0.50),
            "p95": percentile(values, 0.95),
            "p99": percentile(values, 0.99),
            "max": max(values),
            "errors": len(errors[kind]),
            "error_kinds": sorted(set(errors[kind])),
        }
        for kind, values in latencies.items()
        if values
    }


def production_environment(url: str) -> dict[str, str]:
    """The settings a deployment runs with: DEBUG off (so the lockout, throttles and CSP are in place)."""
    return {
        "DATABASE_URL": url,
        "DEBUG": "False",
        "SECRET_KEY": BENCH_SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1,testserver",
        "SECURE_SSL_REDIRECT": "False",
        "DB_CONN_MAX_AGE": "60",
        "LOG_LEVEL": "ERROR",
        "STATIC_ROOT": str(Path(tempfile.gettempdir()) / "faithanno-bench-static"),
        # Throttle counts shared by the gunicorn workers, as docker-compose.yml deploys them.
        "CACHE_URL": os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/9"),
    }


def collect_static() -> None:
    # With DEBUG off the pages use the hashed static file names that collectstatic writes.
    env = {**os.environ, **production_environment(os.environ["DATABASE_URL"])}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)


def start_server(url: str, port: int, workers: int) -> subprocess.Popen:
    env = {**os.environ, **production_environment(url)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "faithanno.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--backlog",
            "256",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    for _ in range(100):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/accounts/login/")
            if connection.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit(f"gunicorn did not answer on port {port}")


def check_consistency() -> str:
    from django.db.models import Count

    from studies.models import Judgement, Study

    study = Study.objects.get(name=MAIN_STUDY)
    per_assignment = (
        Judgement.objects.filter(assignment__item__study_task__study=study)
        .order_by()  # the model's default ordering would split the groups
        .values("assignment")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    counts = Counter(per_assignment)
    if set(counts) == {10}:
        return f"all {counts[10]} assignments hold exactly 10 judgements each (nothing lost or doubled)"
    return f"judgements per assignment: {dict(counts)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the benchmark database")
    parser.add_argument("--summaries", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7, help="requests per page (median reported)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent simulated annotators")
    parser.add_argument("--seconds", type=float, default=40, help="duration of each load phase")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()

    database_ready(args.database_url, args.rebuild)
    log("1. data")
    build(args)
    from django.db import connection

    with connection.cursor() as cursor:
        # Fresh planner statistics, as autovacuum keeps them on a live server (bulk loads leave them stale).
        cursor.execute("ANALYZE")
    log(f"2. server time and SQL queries per page (in-process, median of {args.repeat} requests)")
    measure_pages(args.repeat)

    log(
        f"3. saving judgements: {args.clients} simulated annotators against gunicorn "
        f"({args.workers} workers, DB_CONN_MAX_AGE=60) over loopback, {args.seconds:.0f} s per phase"
    )
    server = start_server(args.database_url, args.port, args.workers)
    try:
        phases = [
            (
                "annotators at work: a word judged (draft saved) every 0.5-1.5 s, the item submitted after 10",
                (0.5, 1.5),
            ),
            ("capacity: whole items (10 judgements) submitted back to back", (0.0, 0.0)),
        ]
        for title, think in phases:
            log(f"  {title}:")
            for kind, result in load(args.port, args.clients, args.seconds, think).items():
                kinds = f" ({', '.join(result['error_kinds'])})" if result["errors"] else ""
                share = 100 * result["errors"] / max(result["requests"], 1)
                log(
                    f"    {kind:<6} {result['requests']:5d} requests, {result['throughput']:5.1f}/s, "
                    f"p50 {result['p50']:6.1f} ms, p95 {result['p95']:6.1f} ms, p99 {result['p99']:6.1f} ms, "
                    f"max {result['max']:5.0f} ms, errors {result['errors']} ({share:.2f} %){kinds}"
                )
    finally:
        server.terminate()
        server.wait(timeout=30)
    log(f"  after the load: {check_consistency()}")


if __name__ == "__main__":
    main()
