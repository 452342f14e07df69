"""Property-based: hostile text in every text field of every write endpoint (web and API) and in every query
parameter of every page and API endpoint never answers 5xx. Text that reaches the server with NUL or a lone
surrogate answers 400 and writes nothing; any other refusal (4xx) writes nothing either.

A value reaches the server as it was sent over JSON. In a query string or a form, a lone surrogate cannot be
encoded: it is sent as its UTF-8-like bytes, which Django decodes to replacement characters, so there only
NUL arrives as such. The examples are bounded (a few hundred requests in all) and derandomized.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from analysis.selectors.browse import PARAMETERS as BROWSE_PARAMETERS
from corpus.importers import parse
from corpus.models import ImportJob, Summary
from ingest.services.imports import dataset_import
from protocols.tasks import BUMP_ERROR_TYPES
from studies.models import Assignment, Study, StudyExample
from studies.services.examples import study_example_annotate, study_example_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for, units_of, write_jsonl
from tests.crowd.factories import crowd_study_make
from tests.snapshots import changed_tables, database_state
from tests.studies.test_submissions import item_of

WRITE_EXAMPLES = 10  # per write endpoint
QUERY_EXAMPLES = 3  # per page or API endpoint

UNSTORABLE = ["\x00", "\ud800", "\udbff", "\udc00", "\udfff"]
PIECES = [
    "\u202e",
    "\ufeff",
    "\u200b",
    "\r\n",
    "\t",
    "'",
    '"',
    "<script>alert(1)</script>",
    "=1+2",
    "%00",
    "\\u0000",
    "😀",
    "e\u0301",
    "\uffff",
    "\x7f",
    "\x01",
    " ",
    "0",
    "-1",
    "1e999",
    "nan",
    "9" * 30,
    "x" * 3000,
    "' OR 1=1 --",
]
STORABLE = st.lists(
    st.one_of(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), st.sampled_from(PIECES)),
    max_size=5,
).map("".join)
BROKEN = st.tuples(STORABLE, st.sampled_from(UNSTORABLE), STORABLE).map("".join)
# Query strings and forms carry NUL; a surrogate arrives as replacement characters (see the docstring).
BROKEN_IN_FORM = st.tuples(STORABLE, st.just("\x00"), st.sampled_from(["", *UNSTORABLE]), STORABLE).map("".join)

# Every query parameter any page or endpoint reads, and some they do not.
QUERY_PARAMETERS = sorted(
    {
        *BROWSE_PARAMETERS,
        "page",
        "page_size",
        "q",
        "dont_know",
        "partial",
        "study",
        "task",
        "a",
        "b",
        "dataset",
        "limit",
        "dont_know_as_incorrect",
        "metrics",
        "method",
        "level",
        "partial_by",
        "bootstrap",
        "seed",
        "protocol",
        "by_error_type",
        "format",
        "next",
        "o",
        "p",
        "unknown",
        "below",
        "flagged",
        "open",
    }
)


def arrives(value: str, transport: str) -> str:
    """What the server receives of `value` sent over `transport`."""
    if transport == "json":
        return value
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def form_encoded(data: dict[str, str]) -> str:
    return "&".join(
        f"{quote(name.encode('utf-8', 'surrogatepass'))}={quote(value.encode('utf-8', 'surrogatepass'))}"
        for name, value in data.items()
    )


def answered(response: Any) -> Any:
    """The response with its whole body in `body`: a download fails while it streams, not before."""
    response.body = b"".join(response.streaming_content) if response.streaming else response.content
    return response


def unstorable(text: str) -> bool:
    return any(char == "\x00" or 0xD800 <= ord(char) <= 0xDFFF for char in text)


STATUSES: Counter[int] = Counter()


def expect(response: Any, sent: list[str], transport: str, before: dict[str, Any]) -> None:
    STATUSES[response.status_code] += 1
    assert response.status_code < 500, response.body[:500]
    broken = any(unstorable(arrives(value, transport)) for value in sent)
    if broken:
        assert response.status_code == 400, (sent, response.status_code, response.body[:300])
    if broken or response.status_code >= 400:
        assert changed_tables(before, database_state()) == [], (sent, response.status_code)


@dataclass
class World:
    """The data the endpoints work on, and a signed-in client for each role."""

    study: Study
    example: StudyExample
    imported: Study
    clients: dict[str, Any] = field(default_factory=dict)
    # Runs the import tasks that uploads queue (conftest's import_worker), and a job of rita's to read.
    run_imports: Any = None
    import_job: ImportJob | None = None
    crowd: Any = None  # a public study (crowd.models.CrowdStudy) with a worker's client, "worker"

    def assignment(self, task: str) -> Assignment:
        return item_of(self.study, self.study.annotators.get(username="alice"), task)

    def judge_run(self) -> Any:
        """An LLM judge's run of the study (queued, never run: no endpoint is asked)."""
        from judges.models import JudgeRun
        from judges.services import JudgeSpec, judge_run_create

        run = JudgeRun.objects.filter(study_task__study=self.study).first()
        if run is None:
            task = self.study.tasks.get(task="factuality")
            run = judge_run_create(spec=JudgeSpec(study_task=task, endpoint="http://127.0.0.1:9/v1", model="m"))
        return run


@pytest.fixture
def world(
    task_study: Study,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
    admin_user: AbstractUser,
    tmp_path: Any,
    import_worker: Any,
) -> World:
    # A summary that is no item of the study, for an example item.
    extra = {"id": "extra", "text": "An extra document.", "summaries": [{"system": "X", "text": "An extra summary."}]}
    dataset_import(name=task_study.dataset.name, batch=parse("jsonl", write_jsonl(tmp_path / "extra.jsonl", [extra])))
    sentences = task_study.tasks.get(task="sentence_consistency")
    summary = Summary.objects.get(document__external_id="extra")
    example = study_example_create(study_task=sentences, summary=summary, user=rita, explanation_text="Why.")
    study_example_annotate(example=example, labels={0: "yes"}, notes={0: "It says so."})
    imported = Study.objects.get(dataset=task_study.dataset, kind=Study.Kind.IMPORTED)
    result = World(study=task_study, example=example, imported=imported, run_imports=import_worker)
    result.import_job = ImportJob.objects.create(
        created_by=rita, name="a job", format="jsonl", file_name="a.jsonl", path=str(tmp_path / "none")
    )
    result.crowd = crowd_study_make(task_study.dataset, rita).crowd
    worker = Client()
    worker.get(reverse("crowd_start", args=[result.crowd.key]) + "?PROLIFIC_PID=fuzz")
    result.clients = {
        "worker": worker,
        "rita": client_for(rita),
        "alice": client_for(alice),
        "admin": client_for(admin_user),
        "anonymous": Client(),
        "rita-api": api_client_for(rita),
        "alice-api": api_client_for(alice),
    }
    return result


def run_examples(examples: int, strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    @given(drawn=strategy)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        # No shrinking: a failing endpoint is reported with the example that failed, in bounded time.
        phases=[Phase.explicit, Phase.generate],
    )
    def run(drawn: Any) -> None:
        check(drawn)

    run()


# --- write endpoints ---------------------------------------------------------------------------------------


def with_value(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of `body` with `value` at `path`; a path ending in None adds `value` as a new key."""
    copy = json.loads(json.dumps(body))
    target = copy
    for step in path[:-1]:
        target = target[step]
    if path[-1] is None:
        target[value] = "x"
    else:
        target[path[-1]] = value
    return copy


@dataclass
class JsonTarget:
    name: str
    client: str
    url: str
    body: dict[str, Any]
    paths: list[tuple[Any, ...]]

    def check(self, world: World, drawn: tuple[tuple[Any, ...], str]) -> None:
        path, value = drawn
        client = world.clients[self.client]
        before = database_state()
        body = json.dumps(with_value(self.body, path, value))
        expect(answered(client.post(self.url, body, content_type="application/json")), [value], "json", before)


@dataclass
class FormTarget:
    name: str
    client: str
    url: str
    data: dict[str, str]
    fields: list[str]

    def check(self, world: World, drawn: tuple[str, str]) -> None:
        name, value = drawn
        data = {**self.data, name: value}
        before = database_state()
        response = world.clients[self.client].post(
            self.url, form_encoded(data), content_type="application/x-www-form-urlencoded"
        )
        expect(answered(response), [value], "form", before)


def jsonl_with(path: tuple[Any, ...], value: str) -> str:
    line = {
        "id": "upload",
        "title": "T",
        "text": "An uploaded document.",
        "meta": {"source": "s"},
        "summaries": [
            {
                "system": "S",
                "text": "An uploaded summary.",
                "human_scores": {"Faithful": 0.5},
                "meta": {"k": "v"},
                "labels": [{"annotator": "w", "task": "factuality", "label": "yes", "comment": "c"}],
            }
        ],
    }
    return json.dumps(with_value(line, path, value)) + "\n"


IMPORT_PATHS: list[tuple[Any, ...]] = [
    ("id",),
    ("title",),
    ("text",),
    ("meta", "source"),
    ("meta", None),
    ("summaries", 0, "system"),
    ("summaries", 0, "text"),
    ("summaries", 0, "meta", "k"),
    ("summaries", 0, "human_scores", None),
    ("summaries", 0, "labels", 0, "annotator"),
    ("summaries", 0, "labels", 0, "comment"),
    ("summaries", 0, "labels", 0, "label"),
]


@dataclass
class ImportTarget:
    """An upload (API or web page): a hostile form field answers 400 at once; a hostile text in the file is
    the worker's to find, and its job fails naming the line and field, having written nothing."""

    name: str
    client: str

    def check(self, world: World, drawn: tuple[str, tuple[Any, ...], str]) -> None:
        where, path, value = drawn
        fields = {"format": "jsonl", "name": "uploaded"}
        content = jsonl_with(path, value) if where == "file" else jsonl_with(("title",), "T")
        if where != "file":
            fields[where] = arrives(value, "multipart")  # the test client cannot encode a surrogate at all
        before = database_state()
        upload = SimpleUploadedFile("upload.jsonl", content.encode())
        latest = ImportJob.objects.order_by("pk").last()
        with world.run_imports():
            response = world.clients[self.client].post(reverse(self.name), {**fields, "file": upload})
        job = ImportJob.objects.order_by("pk").last()
        if where != "file" or job == latest:
            expect(answered(response), [value if where == "file" else fields[where]], "json", before)
            return
        STATUSES[response.status_code] += 1
        assert response.status_code in (202, 302), answered(response).body[:300]
        if unstorable(value):
            assert job.status == ImportJob.Status.FAILED, job.errors
            [error] = job.errors
            assert (error["file"], error["line"]) == ("upload.jsonl", 1), error
            assert changed_tables(before, database_state()) == ["annotations_importjob"]
        else:
            assert job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED), job.errors


@dataclass
class PlatformFileTarget:
    """A crowd platform's export uploaded (the crowd page or the API): a hostile cell answers 400 naming the
    file and line, and changes nothing."""

    name: str
    client: str
    url: str

    def check(self, world: World, drawn: tuple[str, str]) -> None:
        column, value = drawn
        cells = {"Submission id": "s1", "Participant id": "fuzz", "Status": "AWAITING REVIEW", column: value}
        buffer = io.StringIO()
        csv.writer(buffer).writerows([list(cells), list(cells.values())])
        upload = SimpleUploadedFile("export.csv", buffer.getvalue().encode("utf-8", "surrogatepass"))
        before = database_state()
        response = world.clients[self.client].post(self.url, {"file": upload})
        expect(answered(response), [value], "json", before)
        if response.status_code == 400:
            assert "export.csv, line" in response.content.decode(), response.content[:300]


def write_targets(world: World) -> list[Any]:
    study, example = world.study, world.example
    sentences, bump, spans = map(world.assignment, ("sentence_consistency", "bump", "hallucination_spans"))
    labels = {str(unit.index): "yes" for unit in units_of(sentences)}
    notes = dict.fromkeys(labels, "Supported.")
    edit = {"text": bump.item.summary.text + " Not.", "label": bump.item.params["error_type"], "note": "n"}
    submissions = [
        (sentences, {"labels": labels, "notes": notes, "comment": "", "seconds": 5, "guidelines_version": 1}),
        (bump, {"edit": edit, "comment": ""}),
        (spans, {"spans": [{"start": 0, "end": 3, "label": "extrinsic"}]}),
    ]
    paths = {
        sentences.pk: [("comment",), ("notes", "0"), ("labels", "0"), ("seconds",), ("guidelines_version",), (None,)],
        bump.pk: [("edit", "text"), ("edit", "note"), ("edit", "label"), ("edit", None)],
        spans.pk: [("spans", 0, "label"), ("spans", 0, "start")],
    }
    targets: list[Any] = []
    for assignment, body in submissions:
        for name, client in (("api_assignment_submit", "alice"), ("api_assignment_submit", "alice-api")):
            targets.append(JsonTarget(name, client, reverse(name, args=[assignment.pk]), body, paths[assignment.pk]))
    skipped = world.assignment("factuality")  # "cannot judge": an item no other target writes
    for name, client in (("api_assignment_skip", "alice"), ("api_assignment_skip", "alice-api")):
        url = reverse(name, args=[skipped.pk])
        targets.append(JsonTarget(name, client, url, {"reason": "other", "note": "Garbled."}, [("note",), ("reason",)]))
    draft = {"savedAt": 1, "seconds": 3, "comment": "", "task": {"edit": {"text": "t", "label": "freestyle"}}}
    targets.append(
        JsonTarget(
            "api_assignment_draft",
            "alice",
            reverse("api_assignment_draft", args=[bump.pk]),
            {"draft": draft},
            [("draft", "comment"), ("draft", "task", "edit", "text"), ("draft", None), ("draft", "seconds")],
        )
    )
    # Adjudication: a final label of the first unit of a BERTScore item (a replay answers 409 and changes nothing).
    judged = world.assignment("bertscore").item
    decision = {"unit_index": units_of(world.assignment("bertscore"))[0].index, "version": 0, "label": "correct"}
    decision_paths = [("note",), ("label",), ("unit_index",), ("version",), ("accept",)]
    url = reverse("api_adjudication_item", args=[study.pk, judged.pk])
    targets.append(
        JsonTarget("api_adjudication_item", "rita-api", url, {**decision, "note": "Checked."}, decision_paths)
    )
    # A span task's item is decided whole: the adjudicator's own spans, checked as a submission's.
    marked = world.assignment("hallucination_spans").item
    spans = {"version": 0, "spans": [{"start": 0, "end": 3, "label": "intrinsic"}], "note": "Checked."}
    span_paths = [("spans", 0, "label"), ("spans", 0, "start"), ("spans", 0), ("note",), ("version",)]
    url = reverse("api_adjudication_item", args=[study.pk, marked.pk])
    targets.append(JsonTarget("api_adjudication_item", "rita-api", url, spans, span_paths))
    compute = reverse("api_final_labels_compute", args=[study.pk])
    targets.append(JsonTarget("api_final_labels_compute", "rita-api", compute, {"method": "majority"}, [("method",)]))
    targets.append(
        JsonTarget(
            "api_study_example_submit",
            "rita",
            reverse("api_study_example_submit", args=[study.pk, example.pk]),
            {"labels": {"0": "yes"}, "notes": {"0": "Because."}, "comment": "Why."},
            [("comment",), ("notes", "0"), ("labels", "0"), (None,)],
        )
    )
    study_body = {
        "name": "Fuzzed",
        "dataset": study.dataset_id,
        "tasks": ["factuality"],
        "annotators": ["alice", "bob"],
        "annotators_per_item": 2,
        "guidelines": {"factuality": "Read."},
    }
    targets.append(
        JsonTarget(
            "api_studies",
            "rita-api",
            reverse("api_studies"),
            study_body,
            [
                ("name",),
                ("guidelines", "factuality"),
                ("guidelines", None),
                ("annotators", 0),
                ("tasks", 0),
                ("human_score",),
                ("metrics",),
                ("selection_mode",),
                ("bump_mode",),
                ("seed",),
                ("sample_size",),
                ("reclaim_after_hours",),
            ],
        )
    )
    targets.append(
        JsonTarget(
            "api_scoring",
            "rita-api",
            reverse("api_scoring", args=[study.dataset_id]),
            {"metrics": ["abstractiveness"], "mode": "sync", "strategy": "sentences"},
            [("metrics", 0), ("mode",), ("strategy",), ("special_tokens",), ("layer",), ("k",)],
        )
    )
    targets.append(
        JsonTarget(
            "api_study_annotators",
            "rita-api",
            reverse("api_study_annotators", args=[study.pk]),
            {"annotators": ["alice"], "extend": False},
            [("annotators", 0), ("extend",), (None,)],
        )
    )
    # An LLM judge's run: taken runs stay queued (the task would run once the test's transaction commits).
    judge_body = {
        "task": "factuality",
        "endpoint": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key": "k",
        "parameters": {"temperature": 0, "max_tokens": 16},
        "max_requests": 5,
    }
    targets.append(
        JsonTarget(
            "api_study_judge_runs",
            "rita-api",
            reverse("api_study_judge_runs", args=[study.pk]),
            judge_body,
            [
                ("task",),
                ("endpoint",),
                ("model",),
                ("api_key",),
                ("api_key_variable",),
                ("parameters", "temperature"),
                ("parameters", "seed"),
                ("max_requests",),
            ],
        )
    )
    targets.append(
        JsonTarget(
            "api_study_annotator_standing",
            "rita-api",
            reverse("api_study_annotator_standing", args=[study.pk, study.annotators.get(username="bob").pk]),
            {"action": "exclude", "reason": "Fuzzed."},
            [("reason",), ("action",), ("amount",)],
        )
    )
    targets.append(ImportTarget("api_datasets", "rita-api"))
    targets.append(ImportTarget("dataset_import_upload", "rita"))
    task = study.tasks.get(task="sentence_consistency")
    alice_id = str(world.clients["alice"].session["_auth_user_id"])
    targets += [
        FormTarget(
            "study_new",
            "rita",
            reverse("study_new"),
            {
                "dataset": str(study.dataset_id),
                "name": "Form study",
                "tasks": "factuality",
                "selection_mode": "all",
                "seed": "0",
                "annotators_per_item": "1",
                "bump_mode": "taxonomy",
                "annotators": alice_id,
            },
            [
                "name",
                "guidelines_factuality",
                "seed",
                "sample_size",
                "human_score",
                "metrics",
                "selection_mode",
                "tasks",
                "annotators",
                "max_sentences",
                "reclaim_after_hours",
                "dataset",
                "annotators_per_item",
                "bump_mode",
            ],
        ),
        FormTarget(
            "study_settings",
            "rita",
            reverse("study_settings", args=[study.pk]),
            {"annotators_per_item": "2"},
            ["annotators_per_item", "reclaim_after_hours"],
        ),
        FormTarget(
            "study_annotators",
            "rita",
            reverse("study_annotators", args=[study.pk]),
            {},
            ["remove", "annotators"],
        ),
        FormTarget("study_reclaim", "rita", reverse("study_reclaim", args=[study.pk]), {}, ["unknown"]),
        FormTarget("study_adjudicators", "rita", reverse("study_adjudicators", args=[study.pk]), {}, ["add", "remove"]),
        FormTarget("adjudication_compute", "rita", reverse("adjudication_compute", args=[study.pk]), {}, ["method"]),
        FormTarget(
            "study_judge_run",
            "rita",
            reverse("study_judge_run", args=[study.pk]),
            {
                "judge-task": str(study.tasks.get(task="factuality").pk),
                "judge-endpoint": "http://127.0.0.1:9/v1",
                "judge-model": "m",
                "judge-temperature": "0",
                "judge-max_answer_tokens": "16",
                "judge-max_requests": "5",
                "judge-max_tokens": "100",
                "judge-max_minutes": "1",
            },
            ["judge-task", "judge-endpoint", "judge-model", "judge-api_key", "judge-temperature", "judge-seed"],
        ),
        FormTarget(
            "study_task_guidelines",
            "rita",
            reverse("study_task_guidelines", args=[study.pk, task.pk]),
            {},
            ["text"],
        ),
        FormTarget(
            "study_task_examples",
            "rita",
            reverse("study_task_examples", args=[study.pk, task.pk]),
            {"summary": str(example.summary_id), "error_type": BUMP_ERROR_TYPES[0]},
            ["summary", "error_type", "explanation_text"],
        ),
        FormTarget("api_token", "alice", reverse("api_token"), {}, ["rotate", "unknown"]),
        FormTarget(
            "crowd_study_new",
            "rita",
            reverse("crowd_study_new"),
            {
                "dataset": str(study.dataset_id),
                "name": "Public form study",
                "tasks": "factuality",
                "selection_mode": "all",
                "seed": "0",
                "annotators_per_item": "2",
                "settings": '{"check_rate": 0}',
            },
            ["name", "settings", "pre_survey", "post_survey", "checks", "annotators_per_item"],
        ),
        FormTarget(
            "crowd_study_public",
            "rita",
            reverse("crowd_study_public", args=[world.crowd.study_id]),
            {"public": "yes"},
            ["public", "unknown"],
        ),
        FormTarget(
            "crowd_study_make_public",
            "rita",
            reverse("crowd_study_make_public", args=[world.crowd.study_id]),
            {"platform": "prolific"},
            ["platform", "unknown"],
        ),
        # A worker's answers, in the order of the phases (each page takes answers only in its phase).
        FormTarget("crowd_consent", "worker", reverse("crowd_consent", args=[world.crowd.key]), {}, ["accept"]),
        FormTarget(
            "crowd_pre_survey",
            "worker",
            reverse("crowd_pre_survey", args=[world.crowd.key]),
            {"english": "Yes"},
            ["english", "news"],
        ),
        FormTarget("crowd_instructions", "worker", reverse("crowd_instructions", args=[world.crowd.key]), {}, ["x"]),
        FormTarget(
            "crowd_training",
            "worker",
            reverse("crowd_training", args=[world.crowd.key]),
            {"answer": "faithful"},
            ["item", "answer"],
        ),
        FormTarget(
            "crowd_post_survey",
            "worker",
            reverse("crowd_post_survey", args=[world.crowd.key]),
            {"clear": "Agree"},
            ["clear", "remarks"],
        ),
        JsonTarget(
            "crowd_paste",
            "worker",
            reverse("crowd_paste", args=[world.crowd.key]),
            {"assignment": 1},
            [("assignment",), (None,)],
        ),
        FormTarget(
            "study_quality_action",
            "rita",
            reverse("study_quality_action", args=[study.pk, alice_id, "exclude"]),
            {"reason": "Fuzzed."},
            ["reason", "amount"],
        ),
        FormTarget(
            "study_payment_rules",
            "rita",
            reverse("study_payment_rules", args=[study.pk]),
            {
                "per_item": "0.10",
                "per_accepted_item": "0",
                "gold_bonus": "0",
                "gold_min_percent": "100",
                "currency": "GBP",
            },
            ["per_item", "per_accepted_item", "gold_bonus", "gold_min_percent", "currency"],
        ),
        PlatformFileTarget(
            "crowd_platform_status", "rita", reverse("crowd_platform_status", args=[world.crowd.study_id])
        ),
        PlatformFileTarget(
            "api_crowd_platform_status", "rita-api", reverse("api_crowd_platform_status", args=[world.crowd.study_id])
        ),
        # Last: a refused deletion must leave the example in place, an accepted one removes it.
        FormTarget(
            "study_example_delete",
            "rita",
            reverse("study_example_delete", args=[study.pk, example.pk]),
            {},
            ["unknown"],
        ),
    ]
    return targets


def write_strategy(target: Any) -> st.SearchStrategy[Any]:
    if isinstance(target, JsonTarget):
        return st.tuples(st.sampled_from(target.paths), st.one_of(STORABLE, BROKEN))
    if isinstance(target, FormTarget):
        return st.tuples(st.sampled_from(target.fields), st.one_of(STORABLE, BROKEN_IN_FORM))
    if isinstance(target, PlatformFileTarget):
        return st.tuples(st.sampled_from(["Participant id", "Status"]), st.one_of(STORABLE, BROKEN))
    return st.tuples(
        st.sampled_from(["file", "name", "format"]), st.sampled_from(IMPORT_PATHS), st.one_of(STORABLE, BROKEN)
    )


@pytest.mark.django_db
def test_it_never_fails_on_hostile_text_in_any_write_endpoint(world: World) -> None:
    targets = write_targets(world)
    failures = []
    STATUSES.clear()
    for target in targets:
        try:
            run_examples(
                WRITE_EXAMPLES, write_strategy(target), lambda drawn, target=target: target.check(world, drawn)
            )
        except Exception as exc:  # every failing endpoint is reported, not just the first
            failures.append(f"{target.name}: {type(exc).__name__}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)
    assert covered_names({target.name for target in targets}, writes=True) == set()
    # The requests reached the views: some were taken, some refused.
    assert STATUSES[400] > 30 and STATUSES[200] + STATUSES[201] + STATUSES[302] > 30, STATUSES


# --- query parameters --------------------------------------------------------------------------------------


def page_targets(world: World) -> Iterator[tuple[str, str, str]]:
    """(URL name, client, URL) of every page and API endpoint that answers GET."""
    study, dataset = world.study, world.study.dataset
    task = study.tasks.get(task="sentence_consistency")
    assignment = world.assignment("bertscore")
    summary = assignment.item.summary
    other = Summary.objects.filter(document=summary.document).exclude(pk=summary.pk).first()
    item = world.imported.tasks.first().items.first()
    researcher_pages = {
        "home": [],
        "studies": [],
        "study_new": [],
        "study_detail": [study.pk],
        "study_export": [study.pk, "jsonl"],
        "study_task_guidelines": [study.pk, task.pk],
        "study_task_examples": [study.pk, task.pk],
        "study_example_annotate": [study.pk, world.example.pk],
        "study_analysis": [study.pk],
        "study_summaries_export": [study.pk, "csv"],
        "datasets": [],
        "dataset_analysis": [dataset.pk],
        "dataset_summaries_export": [dataset.pk, "jsonl"],
        "dataset_judgements_export": [dataset.pk, "csv"],
        "analysis_item": [item.pk],
        "dataset_documents": [dataset.pk],
        "dataset_summaries": [dataset.pk],
        "summary_inspect": [summary.pk],
        "summary_compare": [],
        "api_token": [],
        "import_job": [world.import_job.pk],
        "study_quality": [study.pk],
        "study_payment_file": [study.pk, "mturk"],
        "adjudication_queue": [study.pk],
        "adjudication_item": [study.pk, assignment.item_id],
    }
    for name, args in researcher_pages.items():
        url = reverse(name, args=args)
        if name == "summary_compare":
            url += f"?a={summary.pk}&b={other.pk}"
        yield name, "rita", url
    for name in ("admin:index", "admin:corpus_summary_changelist", "admin:studies_assignment_changelist"):
        yield name, "admin", reverse(name)
    for name, args in {"dashboard": [], "annotate_next": [], "annotate": [assignment.pk]}.items():
        yield name, "alice", reverse(name, args=args)
    for name in ("login", "password_reset"):
        yield name, "anonymous", reverse(name)
    api = {
        "api_datasets": [],
        "api_dataset": [dataset.pk],
        "api_documents": [dataset.pk],
        "api_summaries": [dataset.pk],
        "api_dataset_agreement": [dataset.pk],
        "api_correlations": [dataset.pk],
        "api_meta_evaluation": [dataset.pk],
        "api_highlighter": [dataset.pk],
        "api_dataset_summaries_export": [dataset.pk, "csv"],
        "api_dataset_judgements_export": [dataset.pk, "jsonl"],
        "api_document": [summary.document_id],
        "api_summary": [summary.pk],
        "api_explanations": [summary.pk],
        "api_studies": [],
        "api_study": [study.pk],
        "api_study_items": [study.pk],
        "api_study_assignments": [study.pk],
        "api_study_judgements": [study.pk],
        "api_study_agreement": [study.pk],
        "api_study_conditions": [study.pk],
        "api_study_summaries_export": [study.pk, "jsonl"],
        "api_study_judgements_export": [study.pk, "csv"],
        "api_study_bundle": [study.pk],
        "api_bundles": [],  # POST only: a GET answers 405
        "api_adjudication_queue": [study.pk],
        "api_adjudication_item": [study.pk, assignment.item_id],
        "api_schema": [],
        "api_import_job": [world.import_job.pk],
        "api_study_judge_runs": [study.pk],
        "api_judge_run": [world.judge_run().pk],
        "api_judge_run_items": [world.judge_run().pk],
        "api_study_quality": [study.pk],
        "api_study_payment_rules": [study.pk],
        "api_study_payment_file": [study.pk, "prolific-bonus"],
        "api_study_crowd_export": [world.crowd.study_id, "workers", "csv"],
    }
    for name, args in api.items():
        yield name, "rita-api", reverse(name, args=args)
    for name, args in {"api_assignments": [], "api_assignment": [assignment.pk]}.items():
        yield name, "alice-api", reverse(name, args=args)
    key = world.crowd.key
    for name in (
        "crowd_start",
        "crowd_go",
        "crowd_consent",
        "crowd_pre_survey",
        "crowd_instructions",
        "crowd_training",
        "crowd_next",
        "crowd_post_survey",
        "crowd_end",
    ):
        yield name, "worker", reverse(name, args=[key])
    crowd_pages = {
        "crowd_study_new": [],
        "crowd_study": [world.crowd.study_id],
        "crowd_export": [world.crowd.study_id, "workers", "csv"],
    }
    for name, args in crowd_pages.items():
        yield name, "rita", reverse(name, args=args)


QUERY = st.tuples(
    st.booleans(),  # one parameter carries NUL
    st.lists(STORABLE, min_size=len(QUERY_PARAMETERS) + 1, max_size=len(QUERY_PARAMETERS) + 1),
    st.integers(min_value=0, max_value=len(QUERY_PARAMETERS)),
    BROKEN_IN_FORM,
    STORABLE,  # the name of a parameter nobody reads
)


@pytest.mark.django_db
def test_it_never_fails_on_hostile_query_parameters_of_any_page_or_endpoint(world: World) -> None:
    failures = []
    names = set()
    STATUSES.clear()
    for name, client, url in page_targets(world):
        names.add(name)

        def check(drawn: Any, client: str = client, url: str = url) -> None:
            broken, values, position, bad, odd_name = drawn
            if broken:
                values[position] = bad
            keys = [*QUERY_PARAMETERS, f"x-{odd_name}"]
            parameters = dict(zip(keys, values, strict=True))
            before = database_state()
            separator = "&" if "?" in url else "?"
            response = world.clients[client].get(url + separator + form_encoded(parameters))
            expect(answered(response), [*values, odd_name], "query", before)
            if broken and position < len(QUERY_PARAMETERS):
                assert keys[position] in response.body.decode()  # the answer names the parameter

        try:
            run_examples(QUERY_EXAMPLES, QUERY, check)
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)
    assert covered_names(names, writes=False) == set()
    assert STATUSES[400] > 20 and STATUSES[200] > 20, STATUSES


def covered_names(names: set[str], *, writes: bool) -> set[str]:
    """The URL names of the app and the API that `names` leaves out (GET pages, or write endpoints)."""
    writes_only = {
        "api_assignment_submit",
        "api_assignment_draft",
        "api_assignment_skip",
        "study_settings",
        "study_annotators",
        "study_adjudicators",
        "study_reclaim",
        "api_study_example_submit",
        "study_judge_run",
        "study_example_delete",
        "api_study_annotators",
        "api_scoring",
        "dataset_import_upload",
        "crowd_study_public",
        "crowd_study_make_public",
        "crowd_platform_status",
        "api_crowd_platform_status",
        "crowd_paste",
        "study_quality_action",
        "study_payment_rules",
        "api_study_annotator_standing",
        "adjudication_compute",
        "api_adjudication_item",
        "api_final_labels_compute",
    }
    forms = {"study_new", "study_task_guidelines", "study_task_examples", "api_token", "api_studies", "api_datasets"}
    forms |= {"crowd_study_new", "crowd_consent", "crowd_pre_survey", "crowd_instructions", "crowd_training"}
    forms |= {"crowd_post_survey"}
    every: set[str] = set()

    def walk(patterns: list[Any]) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace is None:
                    walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern) and pattern.name:
                every.add(pattern.name)

    walk(get_resolver().url_patterns)
    accounts = {"logout", "password_change", "password_change_done", "password_reset_done"}
    accounts |= {"password_reset_confirm", "password_reset_complete", "api_docs"}
    if writes:
        return (writes_only | forms) - names
    return every - writes_only - accounts - names
