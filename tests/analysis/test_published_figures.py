"""The figures the papers publish, reproduced through FaithAnno's own importers and commands.

Each test imports the upstream files in tests/data/published/ (see its README for sources and licenses)
with `import_dataset` and asks `agreement`, `correlate` or `metaeval` for JSON, exactly as a researcher
would script it. Tolerances match the published rounding: half a unit of the last printed digit.
Each data set is imported once, in the one test that checks all of its figures.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.conftest import DATA, write_jsonl

pytestmark = pytest.mark.django_db
PUBLISHED = DATA / "published"
THREE_DECIMALS = 5e-4
ONE_DECIMAL = 0.05


def run_json(*args: str) -> Any:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def import_dataset(path: Path, format_name: str, name: str) -> None:
    call_command("import_dataset", str(path), "--format", format_name, "--name", name, stdout=io.StringIO())


# Maynez et al. (ACL 2020), Table 4: Spearman correlation of each metric with the human scores.
MAYNEZ_TABLE_4 = {
    "Faithful": {"R1": 0.197, "R2": 0.162, "RL": 0.162, "BERTScore": 0.190, "Entailment": 0.431},
    "Factual": {"R1": 0.125, "R2": 0.095, "RL": 0.113, "BERTScore": 0.116, "Entailment": 0.264},
}
# ../shared/data/README.md: Fleiss' kappa of the raw yes/no factuality labels, NULL labels missing,
# over the 1,848 summaries with exactly three labels (not stated in the paper).
MAYNEZ_FACTUALITY_KAPPA = 0.774


def test_it_reproduces_maynez_table_4_and_the_factuality_kappa() -> None:
    import_dataset(PUBLISHED / "xsum_hallucination", "maynez", "Maynez")
    for human, published in MAYNEZ_TABLE_4.items():
        rows = run_json(
            "correlate", "--dataset", "Maynez", "--human", human, "--method", "spearman", "--bootstrap", "100"
        )
        assert {row["metric"] for row in rows} == set(published)
        for row in rows:
            assert row["r"] == pytest.approx(published[row["metric"]], abs=THREE_DECIMALS), (human, row)
            # The 1,992 scored summaries of the four systems; the references have no scores.
            assert (row["n"], row["n_missing"]) == (1992, 0)
            assert row["ci_low"] < row["r"] < row["ci_high"] and row["p"] < 1e-3

    kappa = run_json("agreement", "--dataset", "Maynez", "--task", "factuality")
    assert kappa["coefficient"] == "fleiss" and kappa["raters_per_item"] == 3
    assert kappa["value"] == pytest.approx(MAYNEZ_FACTUALITY_KAPPA, abs=THREE_DECIMALS)
    assert kappa["n_items"] == 1848


# FRANK (Pagnoni et al., NAACL 2021), as listed in ../shared/data/README.md: partial correlation with
# Factuality controlling for the system, over all 2,246 summaries, (Pearson, Spearman).
FRANK_PARTIAL = {
    "Bleu": (0.101, 0.067),
    "Meteor": (0.137, 0.105),
    "Rouge 1": (0.137, 0.102),
    "Rouge 2": (0.119, 0.075),
    "Rouge L": (0.131, 0.089),
    "BertScore P Art": (0.271, 0.243),
    "FEQA": (0.005, 0.011),
    "QAGS": (0.065, 0.081),
    "Dep Entail": (0.162, 0.143),
    "FactCC": (0.204, 0.304),
}
# Missing upstream values, dropped per metric (../shared/data/README.md).
FRANK_MISSING = {"FEQA": 4, "Dep Entail": 83}


def test_it_reproduces_franks_partial_correlations() -> None:
    import_dataset(PUBLISHED / "frank", "frank", "FRANK")
    arguments = ["correlate", "--dataset", "FRANK", "--human", "Factuality", "--partial-by", "system"]
    for metric in FRANK_PARTIAL:
        arguments += ["--metric", metric]
    rows = run_json(*arguments, "--method", "pearson", "--method", "spearman", "--bootstrap", "0")
    assert len(rows) == 2 * len(FRANK_PARTIAL)
    for row in rows:
        pearson, spearman = FRANK_PARTIAL[row["metric"]]
        expected = pearson if row["method"] == "pearson" else spearman
        assert row["r"] == pytest.approx(expected, abs=THREE_DECIMALS), row
        assert row["partial_by"] == "system"
        assert row["n_missing"] == FRANK_MISSING.get(row["metric"], 0)
        assert row["n"] == 2246 - row["n_missing"]


# BUMP (Ma et al., ACL 2023), "Overall" rows of Table 4 (consistency, %) and Table 5 (ROC AUC, %),
# (a) Task 1 and (b) Task 2. Column names: BART = BARTScore, QAFaEv = QAFactEval, BERT = BERTScore,
# QuEv = QuestEval, R-2 = ROUGE-2.
BUMP_OVERALL = {
    "task1_dataset.json": {
        "consistency": {
            "BARTScore": 91.9, "CoCo": 90.8, "DAE": 87.9, "QAFactEval": 84.0, "BERTScore": 81.4, "QuestEval": 78.6,
            "BLEURT": 74.5, "SummaC": 68.4, "ROUGE-2": 67.2, "BLEU": 66.1, "Q2": 65.7, "FactCC": 59.5,
        },
        "roc_auc": {
            "QAFactEval": 71.5, "Q2": 64.2, "DAE": 63.7, "QuestEval": 62.0, "BARTScore": 60.1, "FactCC": 57.2,
            "CoCo": 56.4, "SummaC": 55.9, "BLEURT": 55.1, "BERTScore": 55.0, "ROUGE-2": 53.2, "BLEU": 50.6,
        },
    },
    "task2_dataset.json": {
        "consistency": {
            "BARTScore": 93.4, "QAFactEval": 85.7, "CoCo": 84.7, "BERTScore": 82.1, "BLEURT": 77.6, "DAE": 75.5,
            "QuestEval": 75.5, "SummaC": 73.0, "ROUGE-2": 68.9, "BLEU": 66.8, "Q2": 65.8, "FactCC": 48.0,
        },
        "roc_auc": {
            "QAFactEval": 71.2, "Q2": 61.3, "DAE": 58.8, "QuestEval": 57.4, "BARTScore": 57.4, "SummaC": 56.9,
            "CoCo": 54.5, "BERTScore": 54.1, "ROUGE-2": 54.0, "BLEURT": 52.6, "FactCC": 51.5, "BLEU": 50.3,
        },
    },
}  # fmt: skip
BUMP_PAIRS = {"task1_dataset.json": 693, "task2_dataset.json": 196}


def check_bump_overall_rows(task_file: str) -> None:
    for protocol, published in BUMP_OVERALL[task_file].items():
        rows = run_json("metaeval", "--dataset", task_file, "--protocol", protocol)
        assert {row["metric"] for row in rows} == set(published)
        for row in rows:
            assert row["group"] == "overall" and row["n"] == BUMP_PAIRS[task_file]
            assert row["value"] == pytest.approx(published[row["metric"]], abs=ONE_DECIMAL), (protocol, row)


# Table 5 (a), column QAFaEv: ROC AUC per error type (the corrected error types of task 1).
BUMP_TASK1_QAFACTEVAL_ROC_BY_TYPE = {
    "Intrinsic Predicate Error": 66.7,
    "Extrinsic Predicate Error": 73.5,
    "Intrinsic Entity Error": 77.7,
    "Extrinsic Entity Error": 78.4,
    "Intrinsic Circumstance Error": 71.3,
    "Extrinsic Circumstance Error": 73.9,
    "Coreference Error": 58.2,
}


def test_it_reproduces_bump_task_1_overall_and_roc_auc_per_error_type() -> None:
    import_dataset(PUBLISHED / "bump" / "task1_dataset.json", "bump", "task1_dataset.json")
    check_bump_overall_rows("task1_dataset.json")
    rows = run_json(
        "metaeval", "--dataset", "task1_dataset.json", "--protocol", "roc_auc", "--by", "error_type",
        "--metric", "QAFactEval",
    )  # fmt: skip
    by_group = {row["group"]: row["value"] for row in rows}
    assert by_group.pop("overall") == pytest.approx(71.5, abs=ONE_DECIMAL)
    assert by_group == pytest.approx(BUMP_TASK1_QAFACTEVAL_ROC_BY_TYPE, abs=ONE_DECIMAL)


def test_it_reproduces_bump_task_2_overall() -> None:
    import_dataset(PUBLISHED / "bump" / "task2_dataset.json", "bump", "task2_dataset.json")
    check_bump_overall_rows("task2_dataset.json")


# Agreement examples from the coefficients' own papers, imported as labels of the 5-point entailment
# scale (None ... All), whose order and equal spacing match the data's codes 1 ... 5.
SCALE = {"1": "none", "2": "few", "3": "some", "4": "most", "5": "all"}


def labelled_jsonl(path: Path, units: dict[str, dict[str, str]]) -> Path:
    """One summary per unit, each annotator's code as an entailment label of sentence 0."""
    return write_jsonl(
        path,
        [
            {
                "id": unit,
                "text": f"Unit {unit}.",
                "summaries": [
                    {
                        "system": "coded",
                        "text": f"Unit {unit}.",
                        "labels": [
                            {"annotator": who, "task": "entailment", "units": [{"index": 0, "label": SCALE[code]}]}
                            for who, code in codes.items()
                        ],
                    }
                ],
            }
            for unit, codes in units.items()
        ],
    )


# Fleiss (1971), the worked example: kappa = .430 for its 30 patients x 6 raters x 5 diagnoses.
FLEISS_1971_KAPPA = 0.430


def test_it_reproduces_fleiss_1971(tmp_path: Path) -> None:
    with (PUBLISHED / "fleiss_1971_diagnoses.csv").open() as handle:
        units = {row.pop("patient"): {rater: code for rater, code in row.items()} for row in csv.DictReader(handle)}
    import_dataset(labelled_jsonl(tmp_path / "fleiss.jsonl", units), "jsonl", "Fleiss 1971")
    kappa = run_json("agreement", "--dataset", "Fleiss 1971", "--task", "entailment", "--coefficient", "fleiss")
    assert kappa["value"] == pytest.approx(FLEISS_1971_KAPPA, abs=THREE_DECIMALS)
    assert (kappa["n_items"], kappa["n_dropped"], kappa["raters_per_item"]) == (30, 0, 6)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": the 4 observers x 12 units example
# with missing values; alpha = .743 (nominal), .815 (ordinal), .849 (interval). Unit 12 has one value only.
KRIPPENDORFF_2011 = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}


def test_it_reproduces_krippendorffs_examples(tmp_path: Path) -> None:
    with (PUBLISHED / "krippendorff_2011_reliability.csv").open() as handle:
        observers = {row.pop("observer"): row for row in csv.DictReader(handle)}
    units = {
        unit: {observer: values[unit] for observer, values in observers.items() if values[unit]}
        for unit in observers["A"]
    }
    import_dataset(labelled_jsonl(tmp_path / "krippendorff.jsonl", units), "jsonl", "Krippendorff 2011")
    for level, published in KRIPPENDORFF_2011.items():
        alpha = run_json(
            "agreement", "--dataset", "Krippendorff 2011", "--task", "entailment", "--coefficient", "krippendorff",
            "--level", level,
        )  # fmt: skip
        assert alpha["value"] == pytest.approx(published, abs=THREE_DECIMALS), level
        assert (alpha["n_items"], alpha["n_dropped"], alpha["level"]) == (11, 1, level)
