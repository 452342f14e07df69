"""Issue 15 through the commands: agreement per group, every coefficient with an interval, alpha_U over
spans, metrics as raters, document-level correlation and balanced accuracy; and their bad requests."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset
from stats.agreement import agreement, fleiss_kappa
from stats.correlation import correlate_documents
from stats.metaeval import balanced_accuracy
from stats.unitizing import unitizing_alpha
from tests.analysis.test_analysis_commands import import_records, run_json

pytestmark = pytest.mark.django_db


def labelled_summary(
    system: str, text: str, labels: dict[str, str], meta: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    return {
        "system": system,
        "text": text,
        "labels": [{"annotator": name, "task": "factuality", "label": label} for name, label in labels.items()],
        "meta": meta or {},
        **fields,
    }


def document(i: int, summaries: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": f"d{i}",
        "text": "A source text about a bridge in Cardiff.",
        "summaries": summaries,
        "meta": meta or {},
    }


# Labels of system A (three raters each) and system B (a single rater: no agreement to measure).
A_LABELS = [
    {"w1": "yes", "w2": "yes", "w3": "yes"},
    {"w1": "no", "w2": "no", "w3": "yes"},
    {"w1": "no", "w2": "no", "w3": "no"},
    {"w1": "yes", "w2": "no", "w3": "yes"},
]
B_LABELS = [{"w1": "yes"}, {"w1": "no"}]


@pytest.fixture
def grouped(tmp_path: Path) -> None:
    records = [
        document(
            i,
            [
                labelled_summary("A", f"A {i}.", labels, meta={"batch": "first" if i < 2 else "second"}),
                *([labelled_summary("B", f"B {i}.", B_LABELS[i])] if i < len(B_LABELS) else []),
            ],
            meta={"batch": "from the document"},
        )
        for i, labels in enumerate(A_LABELS)
    ]
    import_records(tmp_path, records)


def test_it_computes_agreement_per_system_and_the_mean_over_defined_groups(grouped: None) -> None:
    for coefficient in ("percent", "fleiss", "krippendorff", "gwet", "brennan_prediger"):
        result = run_json(
            "agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", coefficient, "--by", "system"
        )
        by_group = {row["group"]: row for row in result["groups"]}
        assert set(by_group) == {"A", "B"} and result["by"] == "system"
        expected = agreement({i: list(labels.values()) for i, labels in enumerate(A_LABELS)}, coefficient)
        if coefficient in ("gwet", "brennan_prediger"):
            # q is the task's two categories, as the overall computation uses.
            expected = agreement(
                {i: list(labels.values()) for i, labels in enumerate(A_LABELS)}, coefficient, categories=["yes", "no"]
            )
        assert by_group["A"]["value"] == pytest.approx(expected.value) and by_group["A"]["n_items"] == 4
        # A group with one rater: undefined, with the coefficient's reason, and left out of the mean.
        assert by_group["B"]["value"] is None and by_group["B"]["reason"]
        assert (result["n_groups"], result["n_undefined"]) == (2, 1)
        assert result["mean"] == pytest.approx(expected.value)


def test_it_groups_by_summary_meta_else_document_meta(grouped: None) -> None:
    result = run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--by", "meta.batch")
    by_group = {row["group"]: row for row in result["groups"]}
    # System B's summaries have no batch of their own: their document's counts.
    assert set(by_group) == {"first", "second", "from the document"}
    first = fleiss_kappa({0: list(A_LABELS[0].values()), 1: list(A_LABELS[1].values())})
    assert by_group["first"]["value"] == pytest.approx(first.value)
    assert by_group["from the document"]["value"] is None and "two raters" in by_group["from the document"]["reason"]
    assert result["mean"] == pytest.approx(
        sum(row["value"] for row in result["groups"] if row["value"] is not None) / 2
    )


def test_it_names_a_group_key_no_summary_has(grouped: None) -> None:
    with pytest.raises(CommandError, match=r"no summary .* has the meta key 'annotator_batch'"):
        run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--by", "meta.annotator_batch")
    with pytest.raises(CommandError, match=r"use 'system' or 'meta\.KEY'"):
        run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--by", "batch")


def test_it_gives_a_seeded_bootstrap_interval_for_every_coefficient(grouped: None) -> None:
    for coefficient in ("fleiss", "gwet", "brennan_prediger"):
        args = ("agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", coefficient)
        first = run_json(*args, "--bootstrap", "200", "--seed", "3")
        again = run_json(*args, "--bootstrap", "200", "--seed", "3")
        assert first["interval"] == again["interval"] and first["interval"]["n_resamples"] == 200
        assert first["interval"]["ci_low"] <= first["interval"]["ci_high"]
    interval = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", "krippendorff", "--level",
        "interval", "--bootstrap", "50",
    )  # fmt: skip
    assert interval["level"] == "interval" and interval["interval"]["seed"] == 0
    # Per group, each group's own items are resampled; the group with one rater has no interval, and says why.
    grouped = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--by", "system", "--bootstrap", "50", "--seed", "3"
    )
    by_group = {row["group"]: row["interval"] for row in grouped["groups"]}
    alone = run_json(
        "agreement",
        "--dataset",
        "tiny",
        "--task",
        "factuality",
        "--bootstrap",
        "50",
        "--seed",
        "3",
        "--by",
        "meta.batch",
    )
    assert by_group["A"]["ci_low"] is not None and by_group["A"]["n_resamples"] == 50
    assert by_group["B"]["ci_low"] is None and by_group["B"]["reason"]
    assert {row["group"] for row in alone["groups"]} == {"first", "second", "from the document"}


SPAN_TEXT = "A bridge in Swansea has been closed after flooding."


def span(piece: str, label: str) -> dict[str, Any]:
    return {"start": SPAN_TEXT.index(piece), "end": SPAN_TEXT.index(piece) + len(piece), "label": label}


def span_summary(system: str, marked: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    labels = [{"annotator": name, "task": "hallucination_spans", "spans": spans} for name, spans in marked.items()]
    return {"system": system, "text": SPAN_TEXT, "labels": labels}


SPAN_MARKS = {
    "M": {"w1": [span("Swansea", "extrinsic")], "w2": [span("in Swansea", "intrinsic")], "w3": []},
    "N": {
        "w1": [span("closed", "intrinsic")],
        "w2": [span("closed", "intrinsic")],
        "w3": [span("flooding", "extrinsic")],
    },
}


def test_it_computes_alpha_u_over_character_spans_with_and_without_type(tmp_path: Path) -> None:
    import_records(tmp_path, [document(0, [span_summary(system, marks) for system, marks in SPAN_MARKS.items()])])
    args = ("agreement", "--dataset", "tiny", "--task", "hallucination_spans", "--coefficient", "alpha_u")
    untyped, typed = run_json(*args), run_json(*args, "--typed")
    as_tuples = {
        system: (
            SPAN_TEXT,
            {name: [(s["start"], s["end"], s["label"]) for s in spans] for name, spans in marks.items()},
        )
        for system, marks in SPAN_MARKS.items()
    }
    assert untyped["value"] == pytest.approx(unitizing_alpha(as_tuples).value)
    assert typed["value"] == pytest.approx(unitizing_alpha(as_tuples, typed=True).value)
    assert typed["typed"] and {c["category"] for c in typed["categories"]} == {"intrinsic", "extrinsic"}
    by_system = run_json(*args, "--by", "system", "--bootstrap", "20")
    assert [row["group"] for row in by_system["groups"]] == ["M", "N"]
    # One summary per group: every resample is that summary, so the interval is the value itself.
    assert by_system["groups"][0]["interval"]["ci_low"] == pytest.approx(by_system["groups"][0]["value"])
    assert by_system["groups"][0]["value"] == pytest.approx(unitizing_alpha({"M": as_tuples["M"]}).value)


def test_it_lets_a_metric_join_the_raters(tmp_path: Path) -> None:
    scores = [0.9, 0.2, 0.1, None]  # the last summary has no score: counted, not crashed
    records = [
        document(
            i,
            [labelled_summary("A", f"A {i}.", labels, metric_scores={"M": score} if score is not None else {})],
        )
        for i, (labels, score) in enumerate(zip(A_LABELS, scores, strict=True))
    ]
    import_records(tmp_path, records)
    result = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", "krippendorff",
        "--metric-rater", "M", "--thresholds", "0.5",
    )  # fmt: skip
    (row,) = result["metric_raters"]
    assert (row["metric"], row["n_items"], row["n_missing"], row["labels"]) == ("M", 3, 1, ["no", "yes"])
    # M says yes, no, no: the majority of the three labelled summaries exactly.
    assert row["majority"]["agreement"] == 1.0 and row["majority"]["n_items"] == 3
    assert {a["rater"]: a["agreement"] for a in row["annotators"]} == {
        "ext.tiny.w1": 1.0,
        "ext.tiny.w2": 1.0,
        "ext.tiny.w3": pytest.approx(2 / 3),
    }
    humans = agreement({i: list(A_LABELS[i].values()) for i in range(3)}, "krippendorff")
    assert row["humans"]["value"] == pytest.approx(humans.value)
    with_metric = agreement({i: [*A_LABELS[i].values(), m] for i, m in enumerate(["yes", "no", "no"])}, "krippendorff")
    assert row["with_metric"]["value"] == pytest.approx(with_metric.value)


def test_it_refuses_thresholds_out_of_order_and_other_bad_metric_raters(tmp_path: Path) -> None:
    import_records(tmp_path, [document(0, [labelled_summary("A", "A.", A_LABELS[0], metric_scores={"M": 0.3})])])
    args = ("agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "M")
    with pytest.raises(CommandError, match="2 labels need 1 thresholds, got 2"):
        run_json(*args, "--thresholds", "0.7,0.3")
    with pytest.raises(CommandError, match="--thresholds must be a finite number, got 'x'"):
        run_json(*args, "--thresholds", "x")
    with pytest.raises(CommandError, match="--thresholds must be a finite number, got 'nan'"):
        run_json(*args, "--thresholds", "nan")
    with pytest.raises(CommandError, match="--metric-rater and --thresholds go together"):
        run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "M")
    with pytest.raises(CommandError, match=r"no metric 'R9' in dataset 'tiny' \(metrics: M\)"):
        run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "R9", "--thresholds", "1")
    with pytest.raises(CommandError, match="alpha_u compares character spans; task 'factuality' has labels"):
        run_json("agreement", "--dataset", "tiny", "--task", "factuality", "--coefficient", "alpha_u")


def test_it_refuses_thresholds_that_do_not_increase() -> None:
    from stats.agreement import bin_scores

    with pytest.raises(ValueError, match=r"thresholds must increase: threshold 2 \(0.3\) is not above threshold 1"):
        bin_scores({1: 0.5}, [0.7, 0.3], ["a", "b", "c"])


def test_it_correlates_at_document_level(tmp_path: Path) -> None:
    metric = [[0.1, 0.5, 0.9], [0.3, 0.2, 0.1], [0.4, 0.4, 0.4], [0.5, 0.6]]
    human = [[1.0, 2.0, 4.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0]]
    records = [
        document(
            d,
            [
                {"system": f"S{s}", "text": f"S {d} {s}.", "metric_scores": {"m": x}, "human_scores": {"h": y}}
                for s, (x, y) in enumerate(zip(xs, ys, strict=True))
            ],
        )
        for d, (xs, ys) in enumerate(zip(metric, human, strict=True))
    ]
    import_records(tmp_path, records)
    rows = run_json("correlate", "--dataset", "tiny", "--human", "h", "--level", "document", "--bootstrap", "100")
    by_method = {row["method"]: row for row in rows}
    assert set(by_method) == {"pearson", "spearman", "kendall"}
    flat = [
        (x, y, d) for d, (xs, ys) in enumerate(zip(metric, human, strict=True)) for x, y in zip(xs, ys, strict=True)
    ]
    expected = correlate_documents(
        [x for x, _, _ in flat], [y for _, y, _ in flat], [d for *_, d in flat], bootstrap=100
    )
    assert by_method["pearson"]["r"] == pytest.approx(expected.r) and by_method["pearson"]["n"] == 2
    assert by_method["spearman"]["r"] == pytest.approx(0.0)  # +1 and -1
    assert by_method["pearson"]["excluded"] == {"fewer_than_3_summaries": 1, "constant_metric": 1, "constant_human": 0}
    assert (
        by_method["pearson"]["ci_low"] <= by_method["pearson"]["ci_high"]
        and by_method["pearson"]["level"] == "document"
    )
    out = io.StringIO()
    call_command("correlate", "--dataset", "tiny", "--human", "h", "--level", "document", stdout=out)
    assert "p=n/a" in out.getvalue() and "fewer_than_3_summaries 1" in out.getvalue()


def binary_records(n: int, split: Any = None, label_in: str = "meta") -> list[dict[str, Any]]:
    """Summaries 0..n-1: the metric is i / n, the label faithful from i >= n / 2 with two errors each way;
    split (a function of i) in the summary meta, or None."""
    records = []
    for i in range(n):
        faithful = (i >= n // 2) != (i in (1, n - 2))
        meta: dict[str, Any] = {"label": 1 if faithful else 0}
        if split is not None:
            meta["split"] = split(i)
        records.append(
            document(
                i,
                [
                    {
                        "system": "AB"[i % 2],
                        "text": f"S {i}.",
                        "metric_scores": {"m": i / n},
                        "human_scores": {"h": 1.0 if faithful else 0.0},
                        "meta": meta,
                    }
                ],
            )
        )
    return records


def test_it_tunes_a_threshold_on_the_validation_split_and_applies_it_to_test(tmp_path: Path) -> None:
    split = lambda i: "val" if i % 2 == 0 else "test"  # noqa: E731
    import_records(tmp_path, binary_records(20, split))
    (row,) = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label", "--bootstrap", "100"
    )
    labels = [1 if (i >= 10) != (i in (1, 18)) else 0 for i in range(20)]
    expected = balanced_accuracy(
        labels, [i / 20 for i in range(20)], splits=[split(i) for i in range(20)], bootstrap=100
    )
    assert row["tuning"] == "split" and row["split_key"] == "split"
    assert (row["value"], row["threshold"], row["n_tune"], row["n_test"]) == (
        pytest.approx(expected.value), pytest.approx(expected.threshold), 10, 10,
    )  # fmt: skip
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    # The same labels from a human score and a threshold.
    (from_human,) = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--human", "h", "--human-threshold",
        "0.5", "--bootstrap", "100",
    )  # fmt: skip
    assert from_human["value"] == pytest.approx(row["value"])
    groups = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "roc_auc", "--label-key", "label", "--by", "system"
    )
    assert [r["group"] for r in groups] == ["overall", "A", "B"] and groups[0]["n"] == 20
    # System A's summaries are all in the validation split: that group is undefined, the others stand.
    per_system = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label", "--by", "system"
    )
    assert [r["value"] is None for r in per_system] == [False, True, True]
    assert "no summary is in the test split 'test'" in per_system[1]["reason"]


def test_it_cross_validates_with_seeded_folds_without_a_split(tmp_path: Path) -> None:
    import_records(tmp_path, binary_records(20))
    args = ("metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label")
    (row,) = run_json(*args, "--folds", "4", "--seed", "7", "--bootstrap", "0")
    assert (row["tuning"], row["folds"], row["seed"], row["split_key"]) == ("cross_validation", 4, 7, None)
    assert len(row["fold_thresholds"]) == 4 and row["n_test"] == 20
    assert run_json(*args, "--folds", "4", "--seed", "7", "--bootstrap", "0") == [row]


def test_it_names_a_split_key_without_a_validation_split(tmp_path: Path) -> None:
    import_records(tmp_path, binary_records(10, lambda i: "test"))
    with pytest.raises(CommandError, match=r"no summary is in the validation split 'val' \(splits present: test\)"):
        run_json("metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label")
    with pytest.raises(CommandError, match="needs a binary label"):
        run_json("metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy")
    with pytest.raises(CommandError, match=r"no summary .* has the meta key 'gold'"):
        run_json("metaeval", "--dataset", "tiny", "--protocol", "roc_auc", "--label-key", "gold")


@pytest.mark.parametrize("threshold", ["nan", "inf", "-inf", "1e999", "x"])
def test_it_refuses_a_human_threshold_that_is_not_a_finite_number(tmp_path: Path, threshold: str) -> None:
    import_records(tmp_path, binary_records(10))
    args = ("metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--human", "h")
    with pytest.raises(CommandError, match=f"--human-threshold must be a finite number, got '{threshold}'"):
        run_json(*args, f"--human-threshold={threshold}")


def test_it_counts_summaries_without_a_metric_score_in_balanced_accuracy(tmp_path: Path) -> None:
    records = binary_records(12)
    for record in records[:3]:
        record["summaries"][0]["metric_scores"] = {}
    import_records(tmp_path, records)
    (row,) = run_json(
        "metaeval", "--dataset", "tiny", "--protocol", "balanced_accuracy", "--label-key", "label", "--bootstrap", "0"
    )
    assert row["n_missing"] == 3 and row["n_test"] == 9


def test_it_puts_bertscore_flagged_tokens_on_the_scale_of_human_spans(tmp_path: Path) -> None:
    import_records(tmp_path, [document(0, [span_summary("M", SPAN_MARKS["M"])])])
    from scoring.services import explanations_compute

    explanations_compute(dataset=Dataset.objects.get(name="tiny"))
    result = run_json(
        "agreement", "--dataset", "tiny", "--task", "hallucination_spans", "--coefficient", "alpha_u",
        "--metric-rater", "bertscore", "--thresholds", "0.95",
    )  # fmt: skip
    (row,) = result["metric_raters"]
    assert row["metric"] == "bertscore" and row["n_items"] == 1 and row["n_missing"] == 0
    assert row["humans"]["value"] == pytest.approx(result["value"])
    assert row["with_metric"]["observers"] == 4 and row["majority"]["n_items"] == len(SPAN_TEXT)
    assert [a["rater"] for a in row["annotators"]] == ["ext.tiny.w1", "ext.tiny.w2", "ext.tiny.w3"]


def test_it_tunes_a_metric_raters_threshold_by_balanced_accuracy(tmp_path: Path) -> None:
    votes = {True: {"w1": "yes", "w2": "yes", "w3": "no"}, False: {"w1": "no", "w2": "no", "w3": "yes"}}
    faithful = [False, False, True, False, True, False, True, True, True, False]
    records = [
        document(i, [labelled_summary("A", f"A {i}.", votes[truth], metric_scores={"M": i / 10})])
        for i, truth in enumerate(faithful)
    ]
    import_records(tmp_path, records)
    result = run_json(
        "agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "M", "--thresholds", "tuned",
        "--seed", "4",
    )  # fmt: skip
    (row,) = result["metric_raters"]
    expected = balanced_accuracy([int(t) for t in faithful], [i / 10 for i in range(10)], seed=4, bootstrap=0)
    assert row["thresholds"] == [pytest.approx(expected.threshold)]
    assert row["tuning"]["tuning"] == "cross_validation" and row["tuning"]["seed"] == 4
    import_records(tmp_path, records[:3], name="few")
    with pytest.raises(CommandError, match="no threshold could be tuned: cross-validation needs at least 2 faithful"):
        run_json(
            "agreement", "--dataset", "few", "--task", "factuality", "--metric-rater", "M", "--thresholds", "tuned"
        )


def test_it_compares_a_metric_rater_with_labels_aggregated_by_a_crowd_model(tmp_path: Path) -> None:
    """A crowd with three spammers among seven workers: Dawid-Skene's labels are closer to the truth than the
    majority, and a metric that tells the truth agrees more with them."""
    from stats.crowd_quality import labels_aggregate
    from tests.stats.test_crowd_quality_math import crowd

    truth, judgements = crowd(30)
    by_unit: dict[Any, dict[str, str]] = {}
    for judgement in judgements:
        by_unit.setdefault(judgement.unit, {})[judgement.worker] = judgement.label
    order = sorted(truth, key=repr)
    records = [
        document(
            i, [labelled_summary("A", f"A {i}.", by_unit[unit], metric_scores={"M": 0.9 * (truth[unit] == "yes")})]
        )
        for i, unit in enumerate(order)
    ]
    import_records(tmp_path, records)
    args = ("agreement", "--dataset", "tiny", "--task", "factuality", "--metric-rater", "M", "--thresholds", "0.5")
    (majority,) = run_json(*args)["metric_raters"]
    (modelled,) = run_json(*args, "--aggregation", "dawid_skene")["metric_raters"]
    assert (majority["aggregation"], majority["majority"]["rater"]) == ("majority", "majority")
    assert (modelled["aggregation"], modelled["majority"]["rater"]) == ("dawid_skene", "dawid_skene")
    expected = labels_aggregate(judgements=judgements, method="dawid_skene").labels
    agreeing = sum(expected[unit] == truth[unit] for unit in order) / len(order)
    assert modelled["majority"]["agreement"] == pytest.approx(agreeing)
    assert modelled["majority"]["agreement"] > majority["majority"]["agreement"]
    # the rest of the rows do not depend on the reference
    assert modelled["humans"] == majority["humans"] and modelled["annotators"] == majority["annotators"]
    with pytest.raises(CommandError, match="invalid choice: 'vote'"):
        run_json(*args, "--aggregation", "vote")
