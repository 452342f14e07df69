"""Agreement, correlation and export over 1,000,000 judgements: wall time and peak memory of each.

    DATABASE_URL=postgres://... python benchmarks/analysis.py [--judgements 1000000] [--keep] [--phases a,b]

Builds a synthetic BERTScore study in the database of DATABASE_URL (a dataset named
"benchmark-analysis": summaries with a human and a metric score and a BERTScore explanation score,
3 annotators per item, 10 judged words per item), then runs each phase in a child process of its own so
that the peak memory (max RSS) printed is that phase's alone, next to a child that only loads Django and
the libraries. The data is deleted at the end unless --keep is given. Run it inside the environment
(`source bin/_venv`) against PostgreSQL; it never touches other datasets.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")

DATASET = "benchmark-analysis"
ANNOTATORS = 3
UNITS = 10
SUMMARIES_PER_DOCUMENT = 5


def setup_django() -> None:
    import django

    django.setup()


def build(judgements: int) -> int:
    """Create the synthetic study; returns its id. Rows are written with COPY (bulk_create is 10x slower)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
    from scoring.models import Explanation
    from studies.models import Assignment, Judgement, Study, StudyItem, StudyTask

    items = -(-judgements // (ANNOTATORS * UNITS))  # at least the requested number
    rng = random.Random(0)
    with transaction.atomic():
        dataset = Dataset.objects.create(name=DATASET, source_format="benchmark")
        users = get_user_model().objects
        annotators = [
            users.get_or_create(username=f"benchmark-annotator-{i}", defaults={"is_active": False})[0]
            for i in range(ANNOTATORS)
        ]
        documents = Document.objects.bulk_create(
            [
                Document(dataset=dataset, external_id=f"doc{i:07d}", text="A source text.")
                for i in range(-(-items // SUMMARIES_PER_DOCUMENT))
            ],
            batch_size=5000,
        )
        summaries = Summary.objects.bulk_create(
            [
                Summary(
                    document=documents[i // SUMMARIES_PER_DOCUMENT],
                    external_id=f"s{i % SUMMARIES_PER_DOCUMENT}",
                    system=f"system{i % SUMMARIES_PER_DOCUMENT}",
                    text="A summary of ten words about the source text here.",
                )
                for i in range(items)
            ],
            batch_size=5000,
        )
        # Each summary's "true" faithfulness drives the human score, the metric and the annotators' labels.
        truth = [rng.random() for _ in summaries]
        HumanScore.objects.bulk_create(
            [
                HumanScore(summary=s, name="Faithful", value=min(1.0, max(0.0, t + rng.gauss(0, 0.15))))
                for s, t in zip(summaries, truth, strict=True)
            ],
            batch_size=5000,
        )
        MetricScore.objects.bulk_create(
            [
                MetricScore(summary=s, name="R1", value=t * 0.5 + rng.random() * 0.5)
                for s, t in zip(summaries, truth, strict=True)
            ],
            batch_size=5000,
        )
        explanations = Explanation.objects.bulk_create(
            [
                Explanation(
                    summary=s, metric="bertscore", config_hash="benchmark", code_version="benchmark",
                    score=0.8 + 0.15 * t + rng.gauss(0, 0.03), scores={"precision": 0.0}, payload={},
                )
                for s, t in zip(summaries, truth, strict=True)
            ],
            batch_size=2000,
        )  # fmt: skip
        study = Study.objects.create(name="benchmark", dataset=dataset, annotators_per_item=ANNOTATORS)
        task = StudyTask.objects.create(study=study, task="bertscore")
        study_items = StudyItem.objects.bulk_create(
            [
                StudyItem(study_task=task, summary=s, explanation=e, position=i)
                for i, (s, e) in enumerate(zip(summaries, explanations, strict=True))
            ],
            batch_size=5000,
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            now = cursor.fetchone()[0]
            table = Assignment._meta.db_table
            columns = (
                "item_id, annotator_id, status, position, comment, time_spent, guidelines_version, draft, "
                "touched_at, created_at, updated_at, submitted_at"
            )
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for item in study_items:
                    for annotator in annotators:
                        row = (item.pk, annotator.pk, "submitted", item.position, "", 30.0, 1, "{}", now, now, now, now)
                        copy.write_row(row)
            cursor.execute(f"SELECT id, item_id FROM {table} WHERE item_id >= %s ORDER BY id", [study_items[0].pk])
            assignment_items = cursor.fetchall()
            labels = ("correct", "incorrect", "dont_know")
            position = {item.pk: index for index, item in enumerate(study_items)}
            judgement_columns = "assignment_id, unit_index, unit_text, label, note, data, created_at, updated_at"
            with cursor.copy(f"COPY {Judgement._meta.db_table} ({judgement_columns}) FROM STDIN") as copy:
                for assignment_id, item_id in assignment_items:
                    t = truth[position[item_id]]
                    for unit in range(UNITS):
                        draw = rng.random()
                        label = labels[2] if draw < 0.03 else labels[0] if draw < 0.03 + 0.97 * t else labels[1]
                        copy.write_row((assignment_id, unit * 2, f"word{unit}", label, "", "{}", now, now))
            cursor.execute("ANALYZE")
    return study.pk


def delete() -> None:
    from django.contrib.auth import get_user_model

    from corpus.models import Dataset
    from studies.models import Study

    dataset = Dataset.objects.filter(name=DATASET).first()
    if dataset is not None:
        Study.objects.filter(dataset=dataset).delete()
        dataset.delete()
    get_user_model().objects.filter(username__startswith="benchmark-annotator-").delete()


def phase(name: str, study_id: int) -> None:
    """Run one phase in this process and print its figures (the parent adds the peak memory)."""
    from analysis.selectors.analysis import (
        agreement_compute,
        dataset_correlations,
        study_enhanced_table,
    )
    from analysis.selectors.exports import EXPORT_FIELDS, export_column_types, study_judgement_rows
    from common.exports import export_chunks
    from studies.models import Study

    study = Study.objects.select_related("dataset").get(pk=study_id)
    study_task = study.tasks.get()
    started = time.perf_counter()
    if name == "baseline":
        import numpy  # noqa: F401
        import scipy.stats  # noqa: F401

        detail = "Django, numpy and scipy loaded"
    elif name.startswith("agreement-"):
        coefficient, _, level = name.removeprefix("agreement-").partition("-")
        report = agreement_compute(study_task=study_task, coefficient=coefficient, level=level or "nominal")
        detail = f"value {report.result.value:.4f} over {report.result.n_items} units"
    elif name == "enhanced-correlation":
        rows = study_enhanced_table(study=study, human="Faithful", bootstrap=1000)
        detail = ", ".join(f"{row.method} r={row.pearson.r:.3f}" for row in rows)
    elif name == "metric-correlation":
        rows = dataset_correlations(
            dataset=study.dataset, human="Faithful", metrics=["R1", "bertscore"],
            methods=["pearson", "spearman", "kendall"], bootstrap=1000,
        )  # fmt: skip
        detail = f"{len(rows)} correlations over {rows[0]['n']} summaries, 1000 bootstrap resamples each"
    elif name.startswith("export-"):
        format_name = name.removeprefix("export-")
        rows = study_judgement_rows(study=study)
        chunks = export_chunks(rows, EXPORT_FIELDS, format_name, export_column_types(EXPORT_FIELDS))
        written = 0
        with open(os.devnull, "wb") as sink:
            for chunk in chunks:
                data = chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")
                written += len(data)
                sink.write(data)
        detail = f"{written / 1e6:.0f} MB of {format_name.upper()}"
    else:
        raise SystemExit(f"unknown phase {name}")
    print(f"{time.perf_counter() - started:.1f}\t{detail}")


PHASES = (
    "baseline",
    "agreement-fleiss",
    "agreement-krippendorff-nominal",
    "agreement-krippendorff-interval",
    "agreement-percent",
    "enhanced-correlation",
    "metric-correlation",
    "export-csv",
    "export-jsonl",
    "export-parquet",
)


def run_child(name: str, study_id: int) -> tuple[str, float]:
    """Run a phase in a child process; returns its output and its peak resident memory in MB."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--phase", name, "--study", str(study_id)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"phase {name} failed")
    return output.strip(), usage.ru_maxrss / 1024  # ru_maxrss is in kB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the synthetic data afterwards")
    parser.add_argument("--phases", help=f"comma-separated phases to run (default: all of {', '.join(PHASES)})")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--study", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    setup_django()
    if args.phase:
        phase(args.phase, args.study)
        return

    from django.db import connection

    if connection.vendor != "postgresql":
        raise SystemExit("Run the benchmark against PostgreSQL: set DATABASE_URL=postgres://...")
    delete()
    started = time.perf_counter()
    study_id = build(args.judgements)
    from studies.models import Judgement

    count = Judgement.objects.filter(assignment__item__study_task__study_id=study_id).count()
    print(f"built {count:,} judgements ({count // (ANNOTATORS * UNITS):,} summaries, {ANNOTATORS} annotators, "
          f"{UNITS} words each) in {time.perf_counter() - started:.0f} s")  # fmt: skip
    print(f"{'phase':<34}{'seconds':>9}{'peak MB':>10}  result")
    try:
        for name in args.phases.split(",") if args.phases else PHASES:
            output, peak = run_child(name, study_id)
            seconds, _, detail = output.partition("\t")
            print(f"{name:<34}{seconds:>9}{peak:>10.0f}  {detail}")
    finally:
        if not args.keep:
            delete()


if __name__ == "__main__":
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, line_buffering=True)
    main()
