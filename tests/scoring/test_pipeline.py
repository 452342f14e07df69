"""The scoring pipeline over the database: every metric through `score`, profiles, failures, bad input."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from corpus.importers import parse
from corpus.models import Dataset, Summary
from ingest.services.imports import dataset_import
from protocols.tasks import entailment_units, qgqa_units
from scoring import services
from scoring.explainers import similarity
from scoring.models import Explanation, ScoringClaim
from scoring.packed_encoder import onednn_unavailable
from tests.conftest import write_jsonl
from tests.scoring.conftest import ROOT, database_url

pytestmark = pytest.mark.django_db

OFFLINE_METRICS = {"bertscore", "similarity", "entities", "abstractiveness", "entailment", "qags_cloze"}


def score(dataset: Dataset, *args: str) -> str:
    out = io.StringIO()
    call_command("score", "--dataset", dataset.name, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def assert_offsets(explanation: Explanation) -> None:
    """Every highlight of every payload is a valid span of the text it points into."""
    summary = explanation.summary.text
    document = explanation.summary.document.text
    payload = explanation.payload

    def check(text: str, span: dict[str, Any] | None) -> None:
        if span is None or span.get("start") is None:
            return
        assert 0 <= span["start"] <= span["end"] <= len(text)
        if "text" in span:
            assert text[span["start"] : span["end"]] == span["text"]

    for sentence in payload.get("sentences", []):
        check(summary, sentence)
        for entry in sentence.get("top", []) + sentence.get("source", []):
            check(document, entry)
        if "best" in sentence:
            check(document, sentence["best"])
    for question in payload.get("questions", []):
        check(summary, question["candidate"])
        check(summary, question["summary_answer"])
        check(document, question["source_answer"])
    for entity in payload.get("entities", []):
        check(summary, entity)
        check(document, entity["match"])
    for token in payload.get("tokens", []):
        check(summary, token)
        if token["aligned"]:
            assert document[token["aligned"][0] : token["aligned"][1]] == token["aligned_text"]


def test_it_runs_every_metric_offline_with_the_documented_fallbacks(small_dataset: Dataset) -> None:
    output = score(small_dataset, "--metric", "all")
    assert "QAGS (cloze fallback): no question generation (FAITHANNO_QG_MODEL)" in output
    assert "Top-k entailment: no NLI model is configured" in output
    summaries = Summary.objects.filter(document__dataset=small_dataset).count()
    for metric in OFFLINE_METRICS:
        rows = Explanation.objects.filter(metric=metric)
        assert rows.count() == summaries, metric
        assert rows.values("config_hash").distinct().count() == 1
        for row in rows.select_related("summary__document"):
            assert row.code_version == row.config["code_version"]
            assert row.model_ids
            assert_offsets(row)
            if not row.summary.text.strip():
                assert row.score is None and row.error == "the summary is empty"
    assert not Explanation.objects.filter(metric="qags").exists()  # a fallback never takes the real name
    cloze = Explanation.objects.filter(metric="qags_cloze").exclude(score=None).first()
    assert cloze.payload["variant"] == "qags_cloze" and cloze.payload["questions"]
    entailment = Explanation.objects.filter(metric="entailment").exclude(summary__text="").first()
    assert entailment.score is None and entailment.payload["nli"]["computed"] is False
    assert "FAITHANNO_NLI_MODEL" in entailment.payload["nli"]["reason"]
    # The packaged MiniLM runs on the packed forward wherever this torch has oneDNN's kernels.
    forward = "packed" if onednn_unavailable() is None else f"Hugging Face ({onednn_unavailable()})"
    assert entailment.model_ids == {
        "sentence": entailment.model_ids["sentence"],
        "sentence_forward": forward,
        "nli": "",
    }
    assert Explanation.objects.filter(metric="bertscore").first().model_ids["encoder_forward"] == forward
    # The annotation tasks build their units from these payloads.
    units = entailment_units(entailment.payload)
    assert units and all(len(unit.extra["top"]) == 3 for unit in units)
    assert qgqa_units(cloze.payload)

    again = score(small_dataset, "--metric", "all")
    assert again.count("0 computed now") == len(OFFLINE_METRICS)


def test_it_runs_qags_and_entailment_with_configured_models(
    small_dataset: Dataset, tiny_model_settings: dict[str, str]
) -> None:
    output = score(small_dataset, "--metric", "qags")
    assert "cloze" not in output
    score(small_dataset, "--metric", "entailment", "--k", "2")
    qags = Explanation.objects.filter(metric="qags").select_related("summary__document")
    assert qags.count() == 7
    for row in qags:
        assert_offsets(row)
        assert (
            row.config["qg_model"] == tiny_model_settings["qg"] and row.config["qa_model"] == tiny_model_settings["qa"]
        )
        assert row.model_ids["qg"] == tiny_model_settings["qg"]
    scored = [row for row in qags if row.score is not None]
    assert scored
    for row in scored:
        kept = [q for q in row.payload["questions"] if q["kept"]]
        assert row.score == pytest.approx(sum(q["f1"] for q in kept) / len(kept))
        units = qgqa_units(row.payload)
        assert len(units) == 2 * len(kept)
        assert units[0].extra["summary_answer"] == kept[0]["summary_answer"]
    entailment = Explanation.objects.filter(metric="entailment").exclude(score=None)
    assert entailment.count() == 6  # every summary but the empty one
    for row in entailment:
        assert row.payload["k"] == 2 and row.payload["nli"]["computed"]
        assert row.model_ids["nli"] == tiny_model_settings["nli_random"]
        assert row.score == row.scores["top2s"] and 0 <= row.score <= 1


def test_it_reports_a_model_that_cannot_be_loaded_and_runs_the_other_metrics(
    small_dataset: Dataset, settings: Any
) -> None:
    settings.FAITHANNO_NLI_MODEL = "/nonexistent/nli-model"
    settings.FAITHANNO_QG_MODEL = "/nonexistent/qg-model"
    settings.FAITHANNO_QA_MODEL = "/nonexistent/qa-model"
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("score", "--dataset", small_dataset.name, "--metric", "all", stdout=out, stderr=io.StringIO())
    message = str(raised.value)
    assert "Cannot load the NLI (entailment) model '/nonexistent/nli-model'" in message
    assert "Cannot load the question generation (QG) model '/nonexistent/qg-model'" in message
    assert message.count("To fix: point the setting at an existing local model directory") == 2
    assert "Top-k entailment: not computed." in out.getvalue() and "QAGS: not computed." in out.getvalue()
    stored = set(Explanation.objects.values_list("metric", flat=True))
    assert stored == {"bertscore", "similarity", "entities", "abstractiveness"}  # no silent fallback either


def test_it_records_a_failing_summary_and_finishes_the_run(
    small_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = similarity.SentenceSimilarityExplainer._explain

    def fragile(self: Any, document: Any, spans: Any, vectors: Any, summary: Any, *rest: Any) -> Any:
        if "Swansea" in summary.text:
            raise RuntimeError("out of memory")
        return real(self, document, spans, vectors, summary, *rest)

    monkeypatch.setattr(similarity.SentenceSimilarityExplainer, "_explain", fragile)
    output = score(small_dataset, "--metric", "similarity")
    assert "6 computed now" not in output and "5 computed now, 2 without a score" in output
    failed = Explanation.objects.get(summary__text__contains="Swansea")
    assert failed.score is None and failed.error == "failed: RuntimeError: out of memory"
    # The other summaries of the same document and batch were explained.
    assert Explanation.objects.exclude(score=None).count() == 5

    monkeypatch.setattr(similarity.SentenceSimilarityExplainer, "_explain", real)
    assert "0 computed now" in score(small_dataset, "--metric", "similarity")  # a failure is not retried ...
    output = score(small_dataset, "--metric", "similarity", "--retry-failed")  # ... unless asked
    assert "1 computed now" in output
    assert Explanation.objects.get(summary__text__contains="Swansea").score is not None


def test_it_recomputes_alongside_when_the_configuration_changes(
    small_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    score(small_dataset, "--metric", "entailment")
    score(small_dataset, "--metric", "entailment", "--k", "1")
    assert Explanation.objects.filter(metric="entailment").values("config_hash").distinct().count() == 2
    for row in Explanation.objects.filter(metric="entailment", config__k=1).exclude(summary__text=""):
        assert all(len(sentence["top"]) == 1 for sentence in row.payload["sentences"])

    def no_model(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a finished run must not load a model")

    monkeypatch.setattr("scoring.encoders.load_sentence_embedder", no_model)
    assert "7 already computed" in score(small_dataset, "--metric", "entailment", "--k", "1")


def test_it_leaves_summaries_claimed_by_a_live_worker_to_that_worker(small_dataset: Dataset) -> None:
    plan = services.metric_plan("entities")
    digest = services.config_hash(plan.config)
    ids = list(Summary.objects.filter(document__dataset=small_dataset).values_list("pk", flat=True))
    other = "elsewhere:1:worker"  # another machine: its claims stand until they lapse
    assert services.summaries_claim(summary_ids=ids[:2], metric=plan.metric, digest=digest, owner=other) == set(ids[:2])
    report = services.explanations_compute(dataset=small_dataset, metric="entities")
    assert report.left_to_others == 2 and report.computed + report.failed == 5
    assert any(line.endswith(", 2 computed by other workers") for line in report.lines())
    assert not Explanation.objects.filter(summary_id__in=ids[:2]).exists()


def test_it_takes_over_claims_that_lapsed_or_whose_process_died(small_dataset: Dataset, settings: Any) -> None:
    import socket

    plan = services.metric_plan("entities")
    digest = services.config_hash(plan.config)
    ids = list(Summary.objects.filter(document__dataset=small_dataset).values_list("pk", flat=True))
    dead = f"{socket.gethostname()}:999999999:dead"  # this host, a process id that cannot exist
    services.summaries_claim(summary_ids=ids[:1], metric=plan.metric, digest=digest, owner=dead)
    settings.FAITHANNO_SCORING_CLAIM_SECONDS = -1  # claims made now have already lapsed
    services.summaries_claim(summary_ids=ids[1:2], metric=plan.metric, digest=digest, owner="elsewhere:1:x")
    mine = services.summaries_claim(summary_ids=ids, metric=plan.metric, digest=digest, owner="me:1:y")
    assert mine == set(ids)


def test_it_refuses_to_enqueue_without_a_broker(small_dataset: Dataset, unreachable_broker: str) -> None:
    with pytest.raises(CommandError, match=f"Cannot reach the Celery broker at {re.escape(unreachable_broker)}"):
        score(small_dataset, "--metric", "bertscore", "--enqueue")
    assert not Explanation.objects.exists()


LONG_PARAGRAPH = (
    "The council approved the new budget on Tuesday after a long debate. "
    "Opposition members said the plan would hurt schools in Cardiff and Swansea. "
    "The finance chief, Mary Jones, said spending would rise by 3% next year. "
)


@pytest.fixture
def awkward_dataset(db: None, tmp_path: Path) -> Dataset:
    long_text = LONG_PARAGRAPH * 250  # about 10,750 wordpieces
    records = [
        {
            "id": "long",
            "text": long_text,
            "summaries": [
                {"system": "A", "text": "Mary Jones said spending would rise by 3% next year."},
                {"system": "Whitespace", "text": "   \n  "},
                {"system": "NoEntities", "text": "Run away quickly!"},
            ],
        },
        {
            "id": "foreign",
            "text": "Der Stadtrat hat am Dienstag den Haushalt beschlossen. 市议会周二批准了预算。",
            "summaries": [
                {"system": "German", "text": "Der Rat hat den Haushalt abgelehnt."},
                {"system": "Chinese", "text": "市议会批准了预算。"},
                {"system": "Emoji", "text": "😀😀😀 🎉"},
            ],
        },
    ]
    return dataset_import(name="awkward", batch=parse("jsonl", write_jsonl(tmp_path / "a.jsonl", records))).dataset


def test_it_explains_awkward_input_with_every_metric(
    awkward_dataset: Dataset, tiny_model_settings: dict[str, str], encoder: Any
) -> None:
    long_document = awkward_dataset.documents.get(external_id="long")
    assert len(encoder.tokenizer(long_document.text)["input_ids"]) > 10_000
    score(awkward_dataset, "--metric", "all")
    metrics = {"bertscore", "similarity", "entities", "abstractiveness", "entailment", "qags"}
    assert set(Explanation.objects.values_list("metric", flat=True)) == metrics
    for row in Explanation.objects.select_related("summary__document"):
        assert_offsets(row)
        text = row.summary.text
        if not text.strip():
            assert row.score is None and row.error == "the summary is empty", row.metric
        else:
            assert not row.error.startswith("failed"), (row.metric, row.error)
    by = {(row.summary.system, row.metric): row for row in Explanation.objects.select_related("summary")}
    # The long document is embedded sentence by sentence, in full.
    bertscore = by[("A", "bertscore")]
    assert not bertscore.payload["truncated"]["source"] and bertscore.payload["source_token_count"] > 10_000
    assert bertscore.score > 0.9  # the summary copies a sentence of it
    assert by[("A", "entailment")].payload["nli"]["d2s_truncated"] is True
    # No entity, no noun chunk: undefined with the reason, never 0.
    for metric, reason in [("entities", "no named entities"), ("qags", "no named entities or noun chunks")]:
        assert by[("NoEntities", metric)].score is None and reason in by[("NoEntities", metric)].error
        assert by[("Emoji", metric)].score is None and reason in by[("Emoji", metric)].error
    for system in ("German", "Chinese", "Emoji"):
        assert by[(system, "bertscore")].score is not None
        assert by[(system, "similarity")].score is not None
        assert by[(system, "abstractiveness")].payload["sentences"]


@pytest.mark.django_db(transaction=True)
def test_it_resumes_after_being_killed(tmp_path: Path) -> None:
    """`score` killed with SIGKILL mid-run (no cleanup at all) loses at most its current batch; the next run
    takes over the dead process's claims at once and finishes."""
    records = [
        {
            "id": f"d{n}",
            "text": f"Town {n} approved a budget of {n} million pounds. The mayor was pleased.",
            "summaries": [
                {"system": "A", "text": f"Town {n} approved a budget."},
                {"system": "B", "text": f"Town {n} cut it."},
            ],
        }
        for n in range(16)
    ]
    dataset = dataset_import(name="killed", batch=parse("jsonl", write_jsonl(tmp_path / "k.jsonl", records))).dataset
    env = {**os.environ, "DATABASE_URL": database_url()}
    command = [sys.executable, "manage.py", "score", "--dataset", "killed", "--metric", "bertscore"]
    process = subprocess.Popen(
        [*command, "--documents-per-batch", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while Explanation.objects.filter(summary__document__dataset=dataset).count() < 4:
            assert process.poll() is None and time.monotonic() < deadline, "score ended or stalled before the kill"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    stored = Explanation.objects.filter(summary__document__dataset=dataset).count()
    assert 4 <= stored < 32
    output = score(dataset, "--metric", "bertscore")
    assert f"{stored} already computed" in output and f"{32 - stored} computed now" in output
    assert Explanation.objects.filter(summary__document__dataset=dataset).count() == 32
    assert not ScoringClaim.objects.exists()


def test_it_batches_documents_shortest_first_so_batches_pad_little() -> None:
    from scoring.services import in_length_order

    assert in_length_order([3, 1, 2, 4], {1: 50, 2: 10, 3: 10, 4: 0}) == [4, 2, 3, 1]
