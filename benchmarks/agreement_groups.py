"""Agreement per group against the same coefficient ungrouped, on synthetic ratings (no database).

    python benchmarks/agreement_groups.py              # 1,000,000 judgements, 100 groups, best of 3
    python benchmarks/agreement_groups.py --judgements 300000 --groups 10 --repeats 5

Builds items with 3 rating slots each on a 5-point scale (seeded; 5% of the slots left empty, so Fleiss
drops items and Krippendorff has missing data) until they hold the judgements asked for, each item in one
of the groups (round robin), and prints for
every coefficient the seconds of `agreement` (ungrouped) and of `agreement_by_group`, and their ratio.
Both times include encoding the ratings, which is the same work in both. Figures go to
docs/PERFORMANCE.md ("Agreement per group") with this command.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotations.analysis.agreement import agreement, agreement_by_group

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


def best_of(repeats: int, run: object) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ratings, groups = synthetic(args.judgements, args.groups)
    n_judgements = sum(value is not None for values in ratings.values() for value in values)
    print(f"{len(ratings):,} items, {n_judgements:,} judgements, {args.groups} groups, best of {args.repeats}")
    print(f"{'coefficient':<32} {'ungrouped s':>12} {'grouped s':>10} {'ratio':>6}")
    for coefficient, options in RUNS:
        plain = best_of(args.repeats, lambda c=coefficient, o=options: agreement(ratings, c, **o))
        grouped = best_of(args.repeats, lambda c=coefficient, o=options: agreement_by_group(ratings, groups, c, **o))
        label = " ".join([coefficient, *options.values()])
        print(f"{label:<32} {plain:>12.2f} {grouped:>10.2f} {grouped / plain:>6.2f}")


if __name__ == "__main__":
    main()
