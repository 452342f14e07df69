"""Comparing a study's conditions: wall time of stats.conditions.compare_conditions (what a study analysis page
computes once per change of the submitted work; later views read the cache).

    python benchmarks/conditions.py [--items 2000] [--raters 5] [--conditions 3] [--resamples 1000]

Synthetic work (no database): `--raters` annotators per condition label each item yes/no (yes with probability
0.7), 5-60 s per item, every item with a final label; between annotators each condition has its own annotators,
within annotators the same ones see every condition on other items. Prints the seconds per design (between:
conditions shuffled over annotators; within: over each annotator's assignments).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats.conditions import DESIGNS, WITHIN, ConditionLabels, compare_conditions


def work(design: str, items: int, raters: int, conditions: int, rng: np.random.Generator) -> list[ConditionLabels]:
    """Between: each condition has its own `raters` annotators, on every item. Within: `raters` annotators per
    condition as well, but the same people: annotator r sees item i under condition (i + r) mod conditions."""
    labels: list[dict[tuple[object, int], dict[str, str]]] = [{} for _ in range(conditions)]
    seconds: list[dict[tuple[object, str], float]] = [{} for _ in range(conditions)]
    people = [f"a{number}" for number in range(raters * conditions)]
    for item in range(items):
        for number, who in enumerate(people):
            arm = (item + number) % conditions if design == WITHIN else number // raters
            labels[arm].setdefault((item, 0), {})[who] = "yes" if rng.random() < 0.7 else "no"
            seconds[arm][(item, who)] = float(rng.integers(5, 60))
    return [ConditionLabels(f"c{arm}", labels[arm], seconds[arm]) for arm in range(conditions)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--raters", type=int, default=5)
    parser.add_argument("--conditions", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    gold: dict[tuple[object, int], str | None] = {(item, 0): "yes" for item in range(args.items)}
    print(
        f"{args.items * args.raters * args.conditions} judgements, {args.conditions} conditions, "
        f"{args.resamples} resamples, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    started = time.perf_counter()
    import scipy.stats  # noqa: F401

    print(f"import scipy.stats (the chi-square test's, once per process): {time.perf_counter() - started:.2f} s")
    for design in DESIGNS:
        conditions = work(design, args.items, args.raters, args.conditions, rng)
        started = time.perf_counter()
        compare_conditions(conditions, gold=gold, design=design, resamples=args.resamples, seed=0)
        print(f"{design}: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
