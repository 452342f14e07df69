"""Aggregated labels and worker competence: wall time of each method of stats.crowd_quality.labels_aggregate.

    python benchmarks/crowd_quality.py [--units 1000] [--workers 10] [--per-unit 3] [--methods a,b]

A synthetic crowd (no database): `--workers` workers, each unit labelled yes/no by `--per-unit` of them
drawn at random; a fifth of the workers are spammers (half answer "yes" to everything, half at random), the
rest are right with probability 0.7-0.95. Prints per method the seconds, the share of units whose label is
the true one, and whether the spammers have the lowest competence. The first model method also pays for
importing crowd-kit (printed separately).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats.crowd_quality import METHODS, CrowdJudgement, labels_aggregate


def crowd(units: int, workers: int, per_unit: int, seed: int = 0) -> tuple[dict, list[CrowdJudgement], set[str]]:
    rng = random.Random(seed)
    names = [f"w{n:03d}" for n in range(workers)]
    spammers = set(names[: max(1, workers // 5)])
    accuracy = {name: rng.uniform(0.7, 0.95) for name in names}
    truth = {unit: rng.choice(["yes", "no"]) for unit in range(units)}
    judgements = []
    for unit, true in truth.items():
        for worker in rng.sample(names, per_unit):
            if worker in spammers:
                label = "yes" if int(worker[1:]) % 2 == 0 else rng.choice(["yes", "no"])
            else:
                label = true if rng.random() < accuracy[worker] else {"yes": "no", "no": "yes"}[true]
            judgements.append(CrowdJudgement(worker, unit, label))
    return truth, judgements, spammers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--per-unit", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    truth, judgements, spammers = crowd(args.units, args.workers, args.per_unit)
    print(
        f"{len(judgements)} judgements, {args.units} units, {args.workers} workers ({len(spammers)} spammers), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    started = time.perf_counter()
    import crowdkit.aggregation  # noqa: F401

    print(f"import crowd-kit: {time.perf_counter() - started:.2f} s")
    for method in args.methods.split(","):
        started = time.perf_counter()
        result = labels_aggregate(judgements=judgements, method=method, seed=0)
        seconds = time.perf_counter() - started
        right = sum(result.labels[unit] == label for unit, label in truth.items()) / len(truth)
        lowest = {worker.worker for worker in result.workers[: len(spammers)]}
        print(
            f"{method:<22} {seconds:7.2f} s  true labels {right:.3f}  ties {len(result.ties):4d}  "
            f"spammers lowest: {lowest == spammers}"
        )


if __name__ == "__main__":
    main()
