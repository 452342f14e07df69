"""The agreement, correlate, metaeval and highlighter commands on small imported data, and bad requests."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset
from stats.spans import word_offsets
from tests.conftest import DATA, write_jsonl

pytestmark = pytest.mark.django_db


def run_json(*args: str) -> Any:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def import_records(tmp_path: Path, records: list[dict[str, Any]], name: str = "tiny") -> None:
    path = write_jsonl(tmp_path / f"{name}.jsonl", records)
    call_command("import_dataset", str(path), "--format", "jsonl", "--name", name, stdout=io.StringIO())


def summary(system: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"system": system, "text": text, **fields}


def documents(*summaries_per_document: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": f"d{i}", "text": "A source text about a bridge in Cardiff.", "summaries": summaries}
        for i, summaries in enumerate(summaries_per_document)
    ]


def test_it_computes_every_coefficient_on_imported_span_labels() -> None:
    call_command(
        "import_dataset", str(DATA / "frank_xsum_sample" / "xsum_hallucination"), "--format", "maynez",
        "--name", "spans", stdout=io.StringIO(),
    )  # fmt: skip
    words = run_json(
        "agreement", "--dataset", "spans", "--task", "hallucination_spans", "--coefficient", "krippendorff"
    )
    summaries = run_json(
        "agreement", "--dataset", "spans", "--task", "hallucination_spans", "--coefficient", "fleiss",
        "--span-unit", "summary",
    )  # fmt: skip
    assert words["coefficient"] == "krippendorff" and words["span_unit"] == "word"
    assert -1.0 <= words["value"] <= 1.0 and words["n_dropped"] == 0
    # 15 summaries, three workers each (one summary of the full data has two; not in this sample).
    assert summaries["n_items"] == 15 and summaries["span_unit"] == "summary"
    assert set(summaries["category_proportions"]) <= {"any span", "no span"}
    percent = run_json("agreement", "--dataset", "spans", "--task", "factuality", "--coefficient", "percent")
    assert 50.0 <= percent["value"] <= 100.0 and percent["unit"] == "percent"


def test_it_counts_words_of_a_span_for_every_annotator(tmp_path: Path) -> None:
    text = "A bridge in Swansea has been closed after flooding."
    swansea = {"start": text.index("Swansea"), "end": text.index(" has"), "label": "extrinsic"}
    labels = [
        {"annotator": "w1", "task": "hallucination_spans", "spans": [swansea]},
        {"annotator": "w2", "task": "hallucination_spans", "spans": [swansea]},
        {"annotator": "w3", "task": "hallucination_spans", "spans": []},
    ]
    import_records(tmp_path, documents([summary("M", text, labels=labels)]))
    result = run_json("agreement", "--dataset", "tiny", "--task", "hallucination_spans", "--coefficient", "percent")
    # One word of nine is split 2:1, the other eight agree.
    assert len(word_offsets(text)) == 9
    assert result["value"] == pytest.approx(100 * (8 + 2 / 3) / 9)


def test_it_explains_agreement_on_a_single_label_value(tmp_path: Path) -> None:
    labels = [{"annotator": w, "task": "factuality", "label": "yes"} for w in ("w1", "w2", "w3")]
    import_records(tmp_path, documents([summary("M", "One.", labels=labels)], [summary("M", "Two.", labels=labels)]))
    for coefficient in ("fleiss", "krippendorff"):
        result = run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", coefficient)
        assert (result["value"] is None and "yes" in result["reason"]) or "same label" in result["reason"]
    out = io.StringIO()
    call_command("agreement", "--dataset", "tiny", "--task", "factuality", stdout=out)
    assert "undefined" in out.getvalue() and "NaN" not in out.getvalue()


def test_it_refuses_bad_agreement_requests(tmp_path: Path) -> None:
    labels = [{"annotator": "w1", "task": "factuality", "label": "yes"}]
    import_records(tmp_path, documents([summary("M", "One.", labels=labels)]))
    with pytest.raises(CommandError, match="no task 'entailment' in the imported judgements of dataset 'tiny'"):
        run_json("agreement", "--dataset", "tiny", "--task", "entailment")
    with pytest.raises(CommandError, match="--dataset needs --task"):
        run_json("agreement", "--dataset", "tiny")
    with pytest.raises(CommandError, match="No dataset named 'nope'"):
        run_json("agreement", "--dataset", "nope", "--task", "factuality")


def test_it_refuses_a_numeric_level_for_categorical_labels(tmp_path: Path) -> None:
    spans = [{"annotator": "w1", "task": "hallucination_spans", "spans": []}]
    import_records(tmp_path, documents([summary("M", "One.", labels=spans)]))
    with pytest.raises(CommandError, match="span tasks have nominal labels"):
        run_json(
            "agreement", "--dataset", "tiny", "--task", "hallucination_spans", "--coefficient", "krippendorff",
            "--level", "interval",
        )  # fmt: skip


def scored(n: int, metric: Any, human: Any) -> list[list[dict[str, Any]]]:
    return [[summary(f"S{i % 2}", f"Summary {i}.", metric_scores=metric(i), human_scores=human(i))] for i in range(n)]


def test_it_correlates_and_reports_missing_scores(tmp_path: Path) -> None:
    import_records(
        tmp_path,
        documents(
            *scored(
                8,
                lambda i: {"good": float(i), **({"sparse": float(i % 3)} if i < 6 else {})},
                lambda i: {"human": i * 0.1},
            )
        ),
    )
    rows = run_json("correlate", "--dataset", "tiny", "--human", "human", "--method", "spearman", "--bootstrap", "50")
    by_metric = {row["metric"]: row for row in rows}
    assert by_metric["good"]["r"] == pytest.approx(1.0) and by_metric["good"]["n"] == 8
    assert (by_metric["sparse"]["n"], by_metric["sparse"]["n_missing"]) == (6, 2)
    for row in rows:
        assert {"metric", "method", "r", "p", "n", "ci_low", "ci_high"} <= set(row)
    system = run_json("correlate", "--dataset", "tiny", "--human", "human", "--metric", "good", "--level", "system")
    assert {row["n"] for row in system} == {2} and "fewer than 3 systems" in system[0]["reason"]


def test_it_explains_fewer_than_three_pairs_and_constant_scores(tmp_path: Path) -> None:
    import_records(
        tmp_path,
        documents(
            *scored(4, lambda i: {"flat": 0.5, **({"two": float(i)} if i < 2 else {})}, lambda i: {"human": i * 0.1})
        ),
    )
    out = io.StringIO()
    call_command("correlate", "--dataset", "tiny", "--human", "human", "--method", "pearson", "--json", stdout=out)
    assert "NaN" not in out.getvalue()
    rows = {row["metric"]: row for row in json.loads(out.getvalue())}
    assert rows["two"]["r"] is None and "fewer than 3 complete pairs (2)" in rows["two"]["reason"]
    assert rows["flat"]["r"] is None and "constant" in rows["flat"]["reason"]


def test_it_names_the_metrics_that_exist_when_one_does_not(tmp_path: Path) -> None:
    import_records(tmp_path, documents(*scored(3, lambda i: {"R1": float(i)}, lambda i: {"human": float(i)})))
    with pytest.raises(CommandError, match=r"no metric 'R9' in dataset 'tiny' \(metrics: R1\)"):
        run_json("correlate", "--dataset", "tiny", "--human", "human", "--metric", "R9")
    with pytest.raises(CommandError, match=r"no human score 'Faithful' in dataset 'tiny' \(human scores: human\)"):
        run_json("correlate", "--dataset", "tiny", "--human", "Faithful")
    with pytest.raises(CommandError, match="has no faithful/unfaithful pairs"):
        run_json("metaeval", "--dataset", "tiny", "--protocol", "consistency")


def test_it_meta_evaluates_pairs_given_in_summary_meta(tmp_path: Path) -> None:
    def pair(i: int, faithful: float, unfaithful: float, error: str) -> list[dict[str, Any]]:
        meta = {"pair": str(i), "error_type": error}
        return [
            summary("ref", f"Ref {i}.", metric_scores={"m": faithful}, meta={**meta, "faithful": True}),
            summary("edit", f"Edit {i}.", metric_scores={"m": unfaithful}, meta={**meta, "faithful": False}),
        ]

    import_records(tmp_path, documents(pair(1, 0.9, 0.1, "A"), pair(2, 0.5, 0.5, "A"), pair(3, 0.2, 0.8, "B")))
    rows = run_json("metaeval", "--dataset", "tiny", "--protocol", "ranking", "--by", "error_type")
    assert [(row["group"], row["value"], row["n"]) for row in rows] == [
        ("overall", 100 / 3, 3),
        ("A", 50.0, 2),
        ("B", 0.0, 1),
    ]


def test_it_scores_bertscore_as_a_highlighter(tmp_path: Path, settings: Any) -> None:
    text = "A bridge in Swansea has been closed after flooding."
    swansea = {"start": text.index("Swansea"), "end": text.index(" has"), "label": "extrinsic"}
    labels = [
        {"annotator": "w1", "task": "hallucination_spans", "spans": [swansea]},
        {"annotator": "w2", "task": "hallucination_spans", "spans": [swansea]},
        {"annotator": "w3", "task": "hallucination_spans", "spans": []},
    ]
    import_records(tmp_path, documents([summary("M", text, labels=labels)]))
    with pytest.raises(CommandError, match="has no BERTScore explanations"):
        run_json("highlighter", "--dataset", "tiny")
    from scoring.services import explanations_compute

    explanations_compute(dataset=Dataset.objects.get(name="tiny"))
    rows = run_json("highlighter", "--dataset", "tiny")
    assert [row["threshold"] for row in rows] == [round(0.80 + 0.01 * i, 2) for i in range(20)]
    characters = len(text.replace(" ", ""))
    for row in rows:
        assert row["tp"] + row["fp"] + row["fn"] + row["tn"] == characters
        assert row["tp"] + row["fn"] == len("Swansea")  # the majority: two of three annotators
    recalls = [row["recall"] for row in rows]
    assert recalls == sorted(recalls)  # a higher threshold flags more
