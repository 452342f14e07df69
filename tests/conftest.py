"""The cast and the shared fixtures of the suite.

Cast: alice, bob and carol annotate; rita runs studies; ronald is another researcher; admin is the
administrator. The suite runs against PostgreSQL only (DATABASE_URL), never the SQLite default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.cache import cache
from django.test import Client

from accounts.services import account_create
from common import roles
from corpus.importers import parse
from corpus.models import Dataset
from ingest.services.imports import dataset_import

DATA = Path(__file__).parent / "data"
PASSWORD = "correct-horse-battery"


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        raise pytest.UsageError(
            f"The suite runs against PostgreSQL; DATABASE_URL gives {engine}. Run bin/test or set DATABASE_URL."
        )
    if not settings.DEBUG:
        # With DEBUG off when the settings load, HTTPS is enforced and pages need collectstatic's files.
        raise pytest.UsageError("The suite loads the demo's settings: run bin/test, or export DEBUG=True as it does.")


@pytest.fixture(autouse=True)
def _no_throttle_counts_from_other_tests() -> None:
    # Request counts of the throttles live in the cache, which is private to this test process.
    cache.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    # PBKDF2's deliberate slowness costs a third of a second per account; the cast has six.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def encoder() -> Any:
    """The packaged MiniLM cut at layer 4, loaded once per test process."""
    from scoring.encoders import TokenEncoder

    return TokenEncoder("packaged:minilm", 4)


@pytest.fixture(scope="session")
def nlp() -> Any:
    from corpus.nlp import load_spacy

    return load_spacy(settings.FAITHANNO_SPACY_MODEL)


def make_user(username: str, role: str) -> AbstractUser:
    user, _ = account_create(
        username=username,
        role=role,
        password=PASSWORD,
        email=f"{username}@example.org",
        first_name=username.title(),
    )
    return user


@pytest.fixture
def alice(db: None) -> AbstractUser:
    return make_user("alice", roles.ANNOTATOR)


@pytest.fixture
def bob(db: None) -> AbstractUser:
    return make_user("bob", roles.ANNOTATOR)


@pytest.fixture
def carol(db: None) -> AbstractUser:
    return make_user("carol", roles.ANNOTATOR)


@pytest.fixture
def rita(db: None) -> AbstractUser:
    return make_user("rita", roles.RESEARCHER)


@pytest.fixture
def ronald(db: None) -> AbstractUser:
    return make_user("ronald", roles.RESEARCHER)


@pytest.fixture
def admin_user(db: None) -> AbstractUser:
    return make_user("admin", roles.ADMIN)


def client_for(user: AbstractUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def small_dataset(db: None) -> Dataset:
    """Three short news documents with two or three summaries each (tests/data/small.jsonl)."""
    return dataset_import(name="small", batch=parse("jsonl", DATA / "small.jsonl")).dataset


@pytest.fixture
def scored_dataset(small_dataset: Dataset) -> Dataset:
    from scoring.services import explanations_compute

    explanations_compute(dataset=small_dataset)
    return small_dataset


@pytest.fixture
def explained_dataset(small_dataset: Dataset) -> Dataset:
    """The small dataset with every metric computed by the offline profile (QAGS as its cloze fallback,
    entailment without NLI probabilities)."""
    from scoring.registry import METRICS
    from scoring.services import explanations_compute_many

    explanations_compute_many(dataset=small_dataset, metrics=METRICS)
    return small_dataset


@pytest.fixture
def bertscore_study(scored_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser) -> Any:
    """rita's study: every scored summary of the small dataset, judged by alice and bob (k = 2)."""
    from studies.services.studies import StudySpec, study_create

    return study_create(
        spec=StudySpec(
            name="Small study",
            dataset=scored_dataset,
            tasks=["bertscore"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study


@pytest.fixture
def crowd_study(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> Any:
    """rita's factuality study, k = 3: alice and bob say yes to the first two items, carol says no (and is
    fast: 2 s against their 30 s)."""
    from studies.models import Assignment, StudyItem
    from studies.services.studies import StudySpec, assignment_submit, study_create

    study = study_create(
        spec=StudySpec(
            name="Crowd",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study
    items = list(StudyItem.objects.filter(study_task__study=study).order_by("pk"))[:2]
    for assignment in Assignment.objects.filter(item__in=items).select_related("annotator"):
        carol_did = assignment.annotator == carol
        assignment_submit(
            assignment=assignment,
            user=assignment.annotator,
            labels={"0": "no" if carol_did else "yes"},
            seconds=2 if carol_did else 30,
        )
    return study


def units_of(assignment: Any) -> list[Any]:
    from studies.selectors.assignments import item_units

    return item_units(assignment.item)


@pytest.fixture
def task_study(scored_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser) -> Any:
    """rita's study with every task over the small dataset, judged by alice and bob (k = 2).

    QGQA and entailment read qags_cloze and entailment explanations built by tests/factories.py (test
    data that follows docs/EXPLANATIONS.md); BUMP edits the three reference summaries.
    """
    from corpus.models import Summary
    from protocols.tasks import STUDY_TASKS
    from studies.services.studies import StudySpec, study_create
    from tests.factories import explain_dataset_for_qgqa_and_entailment

    explain_dataset_for_qgqa_and_entailment(list(Summary.objects.filter(document__dataset=scored_dataset)))
    return study_create(
        spec=StudySpec(
            name="All tasks",
            dataset=scored_dataset,
            tasks=list(STUDY_TASKS),
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study


def study_with_spare_summaries(
    dataset: Dataset, annotator: AbstractUser, researcher: AbstractUser
) -> tuple[Any, Any, list[Any]]:
    """A factuality study over two random summaries of the dataset (k = 1), its task, and the other summaries
    with text: candidates for example items."""
    from corpus.models import Summary
    from studies.selectors.selection import ItemSelection
    from studies.services.studies import StudySpec, study_create

    study = study_create(
        spec=StudySpec(
            name="with examples",
            dataset=dataset,
            tasks=["factuality"],
            annotators=[annotator],
            annotators_per_item=1,
            created_by=researcher,
            selection=ItemSelection(mode="random", size=2, seed=1),
        )
    ).study
    study_task = study.tasks.get()
    spare = list(
        Summary.objects.filter(document__dataset=dataset).exclude(study_items__study_task=study_task).exclude(text="")
    )
    return study, study_task, spare


UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def broker_point(app: Any, url: str | None) -> str | None:
    """Point the Celery app at another broker URL; returns the previous one. Celery keeps the connection pool
    and the producer pool of the URL it first sent to, so the app forgets them too: otherwise a test process whose
    first task went to one broker sends every later task there, whatever the URL says."""
    previous = app.conf.broker_url
    # Only forgotten, not closed: kombu keeps the pools in a registry by connection, and hands the same pool
    # out again when the app points back at that URL.
    app._pool = None
    app.amqp._producer_pool = None
    app.conf.broker_url = url
    return previous


@pytest.fixture
def unreachable_broker(settings: Any) -> Iterator[str]:
    """The project's Celery app (and the settings) point at a broker that does not answer, for this test only;
    returns its URL."""
    from faithanno.celery import app

    settings.CELERY_BROKER_URL = UNREACHABLE_BROKER
    previous = broker_point(app, UNREACHABLE_BROKER)
    yield UNREACHABLE_BROKER
    broker_point(app, previous)


@pytest.fixture
def import_worker(settings: Any, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Uploads go to a private folder and their import tasks run in this process (Celery's eager mode: the
    real task, without a broker) when the request's transaction commits. Returns the context manager that
    runs them: `with import_worker(): client.post(...)`."""
    from django.test import TestCase

    from faithanno.celery import app

    settings.FAITHANNO_UPLOAD_DIR = tmp_path / "uploads"
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield lambda: TestCase.captureOnCommitCallbacks(execute=True)
    app.conf.task_always_eager, app.conf.task_eager_propagates = before
