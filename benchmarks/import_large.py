"""A large JSON-lines import through `manage.py import_dataset`: peak memory and documents per second.

    python benchmarks/import_large.py                    # ~50 MB, scratch SQLite database
    python benchmarks/import_large.py --megabytes 10 --processes 2
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/faithanno_bench python benchmarks/import_large.py --keep-database

Builds a file of CNN/DailyMail-length documents (~700 words: FRANK's CNN/DM articles from
/work/shared/data/frank or, when that is missing, the test sample, each padded with further articles up to
the length and given a distinct sentence order), each with two summaries, until it holds the megabytes
asked for. Then runs the import command in a child process and prints the child's peak resident memory
(ru_maxrss), the wall time and documents per second. Without DATABASE_URL it imports into a scratch
SQLite database (the embedded default). Figures go to docs/PERFORMANCE.md ("Importing a large file").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRANK = Path(os.environ.get("FAITHANNO_FRANK_DIR", "/work/shared/data/frank")) / "articles"
SAMPLE = ROOT / "tests" / "data" / "cnndm_sample.jsonl"
WORDS = 700


def source_articles() -> list[tuple[str, list[str]]]:
    """(article, summaries) of CNN/DM from FRANK, or of the test sample."""
    found: list[tuple[str, list[str]]] = []
    if FRANK.is_dir():
        for path in sorted(FRANK.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            summaries = [data[key] for key in ("bart", "pgn", "bus", "s2s") if isinstance(data.get(key), str)]
            if data.get("article") and summaries:
                found.append((data["article"], summaries))
    if not found:
        for line in SAMPLE.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            found.append((data["text"], [summary["text"] for summary in data["summaries"]]))
    return found


def build(path: Path, megabytes: float, seed: int = 1) -> int:
    """Write documents of about WORDS words until the file holds `megabytes`; returns the documents."""
    articles = source_articles()
    sentences = [sentence.strip() + "." for text, _ in articles for sentence in text.split(". ") if sentence.strip()]
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    written = documents = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < target:
            base, summaries = articles[documents % len(articles)]
            words = base.split()
            text = " ".join(words[:WORDS])
            while len(text.split()) < WORDS:  # pad a short article with sentences of the others
                text += " " + rng.choice(sentences)
            shuffled = text.split(". ")
            rng.shuffle(shuffled)
            record = {
                "id": f"doc{documents}",
                "text": ". ".join(shuffled),
                "summaries": [{"system": f"system{i}", "text": summary} for i, summary in enumerate(summaries[:2])],
            }
            line = json.dumps(record) + "\n"
            handle.write(line)
            written += len(line.encode())
            documents += 1
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--processes", type=int, default=1, help="import_dataset --processes")
    parser.add_argument("--keep-database", action="store_true", help="import into DATABASE_URL as it is")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="faithanno-import-bench-") as folder:
        scratch = Path(folder)
        path = scratch / "large.jsonl"
        started = time.perf_counter()
        documents = build(path, args.megabytes)
        size = path.stat().st_size
        print(f"file: {size / 1024 / 1024:.1f} MiB, {documents:,} documents of ~{WORDS} words, 2 summaries each")
        print(f"  (built in {time.perf_counter() - started:.1f} s)")
        environment = dict(os.environ)
        if not (args.keep_database and environment.get("DATABASE_URL")):
            environment["DATABASE_URL"] = f"sqlite:///{scratch / 'bench.sqlite3'}"
        environment.setdefault("DEBUG", "True")
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], env=environment, check=True, cwd=ROOT)
        command = [*manage, "import_dataset", str(path), "--format", "jsonl", "--name", "large"]
        command += ["--processes", str(args.processes)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, env=environment, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # ru_maxrss of the children is the largest any waited-for child reached: the import, unless the
        # migrate before it was larger (it is not). CPU time is the steadier figure on a shared machine.
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        print(f"import_dataset --processes {args.processes}: {seconds:.1f} s, {documents / seconds:.1f} documents/s")
        print(f"  CPU time of the import: {cpu:.1f} s, {documents / cpu:.1f} documents per CPU second")
        peak, migrate = after.ru_maxrss / 1024, before.ru_maxrss / 1024
        # With --processes N each process has its own peak; this is the largest of them, not their sum.
        print(f"  peak resident memory of the import: {peak:,.0f} MiB (migrate: {migrate:,.0f} MiB)")
        print(f"  machine load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
