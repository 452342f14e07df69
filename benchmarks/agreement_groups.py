"""Agreement per group against the same coefficient ungrouped, on synthetic ratings (no database).

    python benchmarks/agreement_groups.py              # 1,000,000 judgements, 100 groups, best of 3
    python benchmarks/agreement_groups.py --judgements 300000 --groups 10 --repeats 5
    python benchmarks/agreement_groups.py --resamples 100   # also: seconds of 100 bootstrap resamples

Builds items with 3 rating slots each on a 5-point scale (seeded; 5% of the slots left empty, so Fleiss
drops items and Krippendorff has missing data) until they hold the judgements asked for, each item in one
of the groups (round robin), and prints for
every coefficient the seconds of `agreement` (ungrouped) and of `agreement_by_group`, and their ratio,
as wall time and as CPU time of the process (best of the repeats, the two runs alternating; on a shared
machine the CPU time is the steadier figure). Both include encoding the ratings, the same work in both.
With --resamples N it then prints the wall seconds of `agreement_interval` with N resamples of the items. Figures go to
docs/PERFORMANCE.md ("Agreement per group") with this command.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats.agreement import agreement, agreement_by_group, agreement_interval

RUNS = [
    ("percent", {}),
    ("fleiss", {}),
    ("krippendorff", {"level": "nominal"}),
    ("krippendorff", {"level": "ordinal"}),
    ("krippendorff", {"level": "interval"}),
    ("krippendorff", {"level": "ratio"}),
    ("gwet", {}),
    ("gwet", {"weights": "quadratic"}),
    ("brennan_prediger", {}),
]


def synthetic(judgements: int, n_groups: int, seed: int = 0) -> tuple[dict[int, list[int | None]], dict[int, str]]:
    rng = np.random.default_rng(seed)
    n_items = -(-judgements * 100 // (3 * 95)) + 1000
    truth = rng.integers(1, 6, size=n_items)
    noise = rng.integers(-1, 2, size=(n_items, 3)) * (rng.random((n_items, 3)) < 0.4)
    values = np.clip(truth[:, None] + noise, 1, 5).tolist()
    missing = rng.random((n_items, 3)) < 0.05
    ratings = {}
    made = 0
    for item, (row, absent) in enumerate(zip(values, missing.tolist(), strict=True)):
        if made >= judgements:
            break
        ratings[item] = [None if gone else value for value, gone in zip(row, absent, strict=True)]
        made += 3 - sum(absent)
    groups = {item: f"system-{item % n_groups}" for item in ratings}
    return ratings, groups


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def best_of(repeats: int, plain: Callable[[], object], grouped: Callable[[], object]) -> list[float]:
    """The fastest wall and CPU seconds of each, the two alternating so that both meet the same load."""
    best = [math.inf] * 4
    for _ in range(repeats):
        for offset, run in ((0, plain), (2, grouped)):
            wall, cpu = timed(run)
            best[offset], best[offset + 1] = min(best[offset], wall), min(best[offset + 1], cpu)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=0)
    args = parser.parse_args()
    ratings, groups = synthetic(args.judgements, args.groups)
    n_judgements = sum(value is not None for values in ratings.values() for value in values)
    print(f"{len(ratings):,} items, {n_judgements:,} judgements, {args.groups} groups, best of {args.repeats}")
    print(
        f"{'coefficient':<24} {'ungrouped s':>11} {'grouped s':>9} {'ratio':>5}   "
        f"{'CPU s':>6} {'CPU s':>6} {'ratio':>5}"
    )
    for coefficient, options in RUNS:
        plain_wall, plain_cpu, grouped_wall, grouped_cpu = best_of(
            args.repeats,
            lambda c=coefficient, o=options: agreement(ratings, c, **o),
            lambda c=coefficient, o=options: agreement_by_group(ratings, groups, c, **o),
        )
        label = " ".join([coefficient, *options.values()])
        print(
            f"{label:<24} {plain_wall:>11.2f} {grouped_wall:>9.2f} {grouped_wall / plain_wall:>5.2f}   "
            f"{plain_cpu:>6.2f} {grouped_cpu:>6.2f} {grouped_cpu / plain_cpu:>5.2f}"
        )
    if args.resamples:
        print(f"bootstrap interval, {args.resamples} resamples of the items (wall s)")
        for coefficient, options in RUNS:
            wall, _ = timed(
                lambda c=coefficient, o=options: agreement_interval(ratings, c, resamples=args.resamples, **o)
            )
            print(f"{' '.join([coefficient, *options.values()]):<24} {wall:>11.2f}")


if __name__ == "__main__":
    main()
