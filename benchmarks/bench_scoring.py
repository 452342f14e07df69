"""Scoring speed: BERTScore against the bert-score package, the machine's ceiling, every other explainer,
time against document length, and the full `score` pipeline (wall time, peak memory).

    python benchmarks/bench_scoring.py                      # everything, about 15 minutes on 2 cores
    python benchmarks/bench_scoring.py --only bertscore     # sections: bertscore, pipeline, others, lengths, thesis

Data: the 1,255 summaries of the 251 XSum articles in ../shared/data, read by the product's importer
(`frank-xsum`) and split into sentences by the product's spaCy helper, as `import_dataset` does.
Figures go to docs/PERFORMANCE.md (section "Scoring") with the command that printed them.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRATCH = Path(tempfile.mkdtemp(prefix="faithanno-bench-"))
os.environ["DATABASE_URL"] = f"sqlite:///{SCRATCH / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")

import django  # noqa: E402

django.setup()

import torch  # noqa: E402

from corpus.importers import parse  # noqa: E402
from ingest.services.imports import sentence_offsets  # noqa: E402
from scoring.explainers.base import DocumentInput, SummaryInput  # noqa: E402
from scoring.services import DOCUMENTS_PER_BATCH, in_length_order  # noqa: E402

LAYER = 4
MODEL = "packaged:minilm"


def say(text: str = "") -> None:
    print(text, flush=True)


# -- data --------------------------------------------------------------------------------------------------
def load_pairs(data: Path) -> tuple[list[DocumentInput], list[list[SummaryInput]]]:
    batch = parse("frank-xsum", data)
    documents = batch.documents
    texts = [d.text for d in documents] + [s.text for d in documents for s in d.summaries]
    spans = sentence_offsets(texts)
    document_inputs = [DocumentInput(d.text, [tuple(x) for x in spans[i]]) for i, d in enumerate(documents)]
    position = len(documents)
    summary_inputs = []
    for document in documents:
        group = []
        for summary in document.summaries:
            group.append(SummaryInput(summary.text, [tuple(x) for x in spans[position]]))
            position += 1
        summary_inputs.append(group)
    return document_inputs, summary_inputs


def in_batches(
    explain: Callable[[Sequence[DocumentInput], Sequence[Sequence[SummaryInput]]], Any],
    documents: Sequence[DocumentInput],
    summaries: Sequence[Sequence[SummaryInput]],
    size: int = DOCUMENTS_PER_BATCH,
) -> list[Any]:
    """Explain as the pipeline does: batches of `size` documents, in length order, with all of their summaries;
    results in input order."""
    order = in_length_order(range(len(documents)), {i: len(document.text) for i, document in enumerate(documents)})
    results: list[Any] = [None] * len(documents)
    for begin in range(0, len(order), size):
        chunk = order[begin : begin + size]
        explained = explain([documents[i] for i in chunk], [summaries[i] for i in chunk])
        for index, result in zip(chunk, explained, strict=True):
            results[index] = result
    return results


# -- the ceiling -------------------------------------------------------------------------------------------
def matmul_gflops(seconds: float = 3.0, *, onednn: bool = False) -> float:
    """Best GFLOP/s of an fp32 matrix multiply on this machine's threads: a plain torch `a @ b` (the issue's
    ceiling), or with `onednn` oneDNN's GEMM on a packed weight, the kernel the packed encoder runs.

    torch's `a @ b` goes to MKL, which runs its AVX2 code on AMD processors; oneDNN uses AVX-512, so on
    this project's AMD EPYC machines the second figure is about twice the first."""
    from scoring.packed_encoder import Dense

    best = 0.0
    for rows, inner in ((2048, 2048), (8192, 384), (4096, 1536)):
        a, b = torch.randn(rows, inner), torch.randn(inner, inner)
        if onednn:  # a @ b (+ a zero bias) on oneDNN's kernel
            multiply = functools.partial(Dense.of(b.t(), torch.zeros(inner), onednn=True), a)
        else:
            multiply = functools.partial(torch.matmul, a, b)
        multiply()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 3:
            multiply()
            count += 1
        best = max(best, 2 * rows * inner * inner * count / (time.perf_counter() - start) / 1e9)
    return best


def encoder_flops(lengths: Sequence[int], config: Any, layers: int) -> float:
    """FLOPs of `layers` transformer layers over sequences of these real lengths (no padding):
    per layer and sequence of n tokens, 2n(4d^2 + 2 d d_ff) for the projections and 4 n^2 d for attention."""
    d, d_ff = config.hidden_size, config.intermediate_size
    return float(sum(layers * (2 * n * (4 * d * d + 2 * d * d_ff) + 4 * n * n * d) for n in lengths))


# -- BERTScore against the package -------------------------------------------------------------------------
def bench_bertscore(documents: list[DocumentInput], summaries: list[list[SummaryInput]], rounds: int) -> None:
    import bert_score

    from corpus.nlp import load_spacy
    from scoring.encoders import load_token_encoder, resolve_model_path
    from scoring.explainers.bertscore import BertScoreConfig, BertScoreExplainer, SourceText

    nlp = load_spacy(django.conf.settings.FAITHANNO_SPACY_MODEL)
    encoder = load_token_encoder(MODEL, LAYER)
    pairs = [(d.text, s.text) for d, group in zip(documents, summaries, strict=True) for s in group]
    candidates, references = [s for _, s in pairs], [d for d, _ in pairs]
    path = resolve_model_path(MODEL)
    scorer = bert_score.BERTScorer(model_type=path, num_layers=LAYER)
    say(
        f"BERTScore, {len(pairs)} pairs ({len(documents)} documents), {MODEL} layer {LAYER}, "
        f"torch threads {torch.get_num_threads()}"
    )

    # What the encoder must compute at least: each distinct text once, cut at 512 tokens (package behaviour).
    unique = sorted(set(candidates) | set(references))
    lengths = [len(encoder.tokenize(text).input_ids) for text in unique]
    needed = encoder_flops(lengths, encoder.model.config, LAYER)
    ceiling = matmul_gflops()
    onednn_ceilings = [matmul_gflops(onednn=True)]
    say(f"  machine ceiling (plain torch fp32 matmul, best of 3 shapes): {ceiling:.1f} GFLOP/s")
    say(f"  oneDNN fp32 GEMM, packed weight (the packed encoder's kernel): {onednn_ceilings[0]:.1f} GFLOP/s")
    say(f"  encoder work needed (package-compatible): {needed / 1e12:.3f} TFLOP over {sum(lengths):,} tokens")

    package_mode = BertScoreExplainer(encoder, BertScoreConfig.package_compatible(MODEL, LAYER), nlp=nlp)
    # Ours and the package alternate, each round after a fresh ceiling measurement; the best of each is
    # kept. On a busy machine, single-threaded CPU seconds are the steadier comparison, so they are
    # printed too (the package's tokenizer and the explanation building run on one core either way).
    wall: dict[str, list[float]] = {"ours": [], "package": []}
    cpu: dict[str, list[float]] = {"ours": [], "package": []}
    ceilings = [ceiling]
    ours: list[Any] = []
    reference: Any = None
    threads = torch.get_num_threads()
    for number in range(rounds):
        ceilings.append(matmul_gflops(1.5))
        for name in ("ours", "package"):
            start, start_cpu = time.perf_counter(), time.process_time()
            if name == "ours":
                ours = [r for group in in_batches(package_mode.explain_batch, documents, summaries) for r in group]
            else:
                reference = scorer.score(candidates, references)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
        say(
            f"  round {number + 1}: ours {wall['ours'][-1]:.2f} s, package (BERTScorer.score, model loaded) "
            f"{wall['package'][-1]:.2f} s; ceiling {ceilings[-1]:.1f} GFLOP/s; load {os.getloadavg()[0]:.1f}"
        )
    start = time.perf_counter()
    bert_score.score(candidates, references, model_type=path, num_layers=LAYER)
    package_call = time.perf_counter() - start
    ceiling = max(ceilings)
    onednn_ceilings.append(matmul_gflops(onednn=True))
    onednn_ceiling = max(onednn_ceilings)
    got = torch.tensor([[r.scores["precision"], r.scores["recall"], r.scores["f1"]] for r in ours])
    expected = torch.stack(reference, dim=1)
    tokens = sum(len(r.payload["tokens"]) for r in ours)
    best_ours, best_package = min(wall["ours"]), min(wall["package"])
    say(
        f"  ceiling used (the best of {len(ceilings)} measurements): {ceiling:.1f} GFLOP/s; oneDNN GEMM (best of "
        f"{len(onednn_ceilings)}): {onednn_ceiling:.1f} GFLOP/s"
    )
    say(f"  identical P/R/F: max |difference| = {(got - expected).abs().max().item():.2e} over {len(pairs)} pairs")
    say(
        f"  ours (package-compatible, with full alignments of {tokens:,} summary tokens and words): "
        f"{best_ours:.2f} s = {len(pairs) / best_ours:.1f} pairs/s, "
        f"{needed / best_ours / 1e9:.1f} GFLOP/s = {needed / best_ours / 1e9 / ceiling:.0%} of the ceiling, "
        f"{needed / best_ours / 1e9 / onednn_ceiling:.0%} of the oneDNN GEMM's rate"
    )
    say(
        f"  bert_score BERTScorer.score: {best_package:.2f} s = {len(pairs) / best_package:.1f} pairs/s, "
        f"{needed / best_package / 1e9 / ceiling:.0%} of the ceiling, "
        f"{needed / best_package / 1e9 / onednn_ceiling:.0%} of the oneDNN GEMM's rate"
    )
    rate = len(pairs) / package_call
    say(f"  bert_score.score() (loads the model each call): {package_call:.2f} s = {rate:.1f} pairs/s")
    say(
        f"  throughput ratio ours / package: {best_package / best_ours:.2f}x "
        f"(against bert_score.score(): {package_call / best_ours:.2f}x); CPU seconds with {threads} threads: "
        f"ours {min(cpu['ours']):.1f}, package {min(cpu['package']):.1f}"
    )
    torch.set_num_threads(1)
    single_ceiling = matmul_gflops(1.5)
    single_onednn = matmul_gflops(1.5, onednn=True)
    single: dict[str, float] = {}
    for name in ("ours", "package"):
        start_cpu = time.process_time()
        if name == "ours":
            in_batches(package_mode.explain_batch, documents, summaries)
        else:
            scorer.score(candidates, references)
        single[name] = time.process_time() - start_cpu
    torch.set_num_threads(threads)
    say(
        f"  one thread, CPU seconds (steadier on a busy machine): ours {single['ours']:.1f}, package "
        f"{single['package']:.1f}, ratio {single['package'] / single['ours']:.2f}x; one-thread ceiling "
        f"{single_ceiling:.1f} GFLOP/s, ours at {needed / single['ours'] / 1e9 / single_ceiling:.0%} of it; "
        f"one-thread oneDNN GEMM {single_onednn:.1f} GFLOP/s, "
        f"ours at {needed / single['ours'] / 1e9 / single_onednn:.0%} of it"
    )

    default = BertScoreExplainer(encoder, BertScoreConfig(MODEL, LAYER), nlp=nlp)
    sentence_lengths = [
        len(item.input_ids) for d in documents for item in default.source_inputs(SourceText(d.text, d.sentences))[0]
    ] + [len(encoder.tokenize(text).input_ids) for text in set(candidates)]
    needed_sentences = encoder_flops(sentence_lengths, encoder.model.config, LAYER)
    start = time.perf_counter()
    in_batches(default.explain_batch, documents, summaries)
    seconds = time.perf_counter() - start
    say(
        f"  default mode (strategy sentences, thesis special tokens, whole documents): {seconds:.2f} s = "
        f"{len(pairs) / seconds:.1f} pairs/s, {needed_sentences / 1e12:.3f} TFLOP needed, "
        f"{needed_sentences / seconds / 1e9 / ceiling:.0%} of the ceiling, "
        f"{needed_sentences / seconds / 1e9 / onednn_ceiling:.0%} of the oneDNN GEMM's rate"
    )
    say(
        f"  measured again: plain torch matmul {matmul_gflops():.1f} GFLOP/s, "
        f"oneDNN GEMM {matmul_gflops(onednn=True):.1f} GFLOP/s"
    )


# -- the other explainers ----------------------------------------------------------------------------------
def offline_explainers() -> dict[str, Any]:
    from django.conf import settings

    from corpus.nlp import load_spacy
    from scoring.encoders import load_sentence_embedder, load_token_encoder
    from scoring.explainers.abstractiveness import AbstractivenessExplainer
    from scoring.explainers.bertscore import BertScoreConfig, BertScoreExplainer
    from scoring.explainers.entailment import EntailmentConfig, TopKEntailmentExplainer
    from scoring.explainers.entities import EntityOverlapExplainer
    from scoring.explainers.qags_cloze import ClozeConfig, ClozeQagsExplainer
    from scoring.explainers.similarity import SentenceSimilarityExplainer

    nlp = load_spacy(settings.FAITHANNO_SPACY_MODEL)
    encoder = load_token_encoder(MODEL, LAYER)
    embedder = load_sentence_embedder(MODEL)
    return {
        "bertscore (sentences)": BertScoreExplainer(encoder, BertScoreConfig(MODEL, LAYER), nlp=nlp),
        "bertscore (windows)": BertScoreExplainer(encoder, BertScoreConfig(MODEL, LAYER, strategy="windows"), nlp=nlp),
        "similarity": SentenceSimilarityExplainer(embedder),
        "entities": EntityOverlapExplainer(nlp),
        "abstractiveness": AbstractivenessExplainer(nlp),
        "entailment (top-k, no NLI)": TopKEntailmentExplainer(embedder, None, EntailmentConfig(MODEL)),
        "qags_cloze": ClozeQagsExplainer(embedder, nlp, ClozeConfig(MODEL)),
    }


def bench_others(documents: list[DocumentInput], summaries: list[list[SummaryInput]]) -> None:
    pairs = sum(len(group) for group in summaries)
    say(f"Other explainers, the same {pairs} pairs, batches of {DOCUMENTS_PER_BATCH} documents (packaged models)")
    for name, explainer in offline_explainers().items():
        if name.startswith("bertscore"):
            continue
        start = time.perf_counter()
        in_batches(explainer.explain_batch, documents, summaries)
        seconds = time.perf_counter() - start
        say(f"  {name:28s} {seconds:7.2f} s  {pairs / seconds:8.1f} pairs/s")


def bench_lengths(documents: list[DocumentInput], summaries: list[list[SummaryInput]]) -> None:
    """Seconds per pair for documents of about 250, 500, 1,000 and 2,000 words, built by joining articles."""
    from corpus.nlp import load_spacy, sentence_spans

    nlp = load_spacy(django.conf.settings.FAITHANNO_SPACY_MODEL)
    targets = (250, 500, 1000, 2000)
    per_length = 8
    built: dict[int, tuple[list[DocumentInput], list[list[SummaryInput]]]] = {}
    for target in targets:
        docs, sums = [], []
        for start in range(per_length):
            text, index = "", start
            while len(text.split()) < target:
                text += (" " if text else "") + documents[index % len(documents)].text
                index += per_length
            words = text.split()[:target]
            text = " ".join(words)
            docs.append(DocumentInput(text, sentence_spans(nlp, [text])[0]))
            sums.append(summaries[start])
        built[target] = (docs, sums)
    explainers = offline_explainers()
    say(f"Time per pair by document length ({per_length} documents x 5 summaries each; milliseconds per pair)")
    say("  " + f"{'explainer':28s}" + "".join(f"{t:>9,d} w" for t in targets))
    for name, explainer in explainers.items():
        cells = []
        for target in targets:
            docs, sums = built[target]
            pairs = sum(len(group) for group in sums)
            start = time.perf_counter()
            explainer.explain_batch(docs, sums)
            cells.append(f"{(time.perf_counter() - start) / pairs * 1000:10.1f}")
        say(f"  {name:28s}" + "".join(cells))


# -- thesis checkpoints: timed with randomly initialised models of the same size -----------------------------
def bench_thesis(documents: list[DocumentInput], summaries: list[list[SummaryInput]]) -> None:
    """The thesis profile's QG (T5-base), QA (RoBERTa-large) and NLI (BART-large) cannot be downloaded here,
    so their architectures' speed is timed with randomly initialised models of the same width and depth
    (QA and NLI as BERT-architecture stand-ins), on a sample, and the per-summary cost is derived from the
    number of calls each summary needs in the pipeline."""
    from corpus.nlp import load_spacy
    from scoring.explainers.qags import candidates_of
    from scoring.nlp_models import ExtractiveQA, NliModel, QuestionGenerator
    from tests.scoring.random_models import save_nli_model, save_qa_model, save_qg_model

    nlp = load_spacy(django.conf.settings.FAITHANNO_SPACY_MODEL)
    large = {"hidden": 1024, "layers": 24, "heads": 16, "intermediate": 4096}
    t5_base = {"hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072}
    directory = SCRATCH / "thesis-size"
    say("Thesis-size models (random weights; speed only), CPU, on a sample")
    sample_docs, sample_sums = documents[:4], summaries[:4]
    flat = [(d, s) for d, group in zip(sample_docs, sample_sums, strict=True) for s in group]
    candidates = candidates_of(nlp, [s.text for _, s in flat], 10)
    per_summary_candidates = sum(len(c) for c in candidates) / len(flat)

    qg = QuestionGenerator(str(save_qg_model(directory / "qg", **t5_base)))
    requests = [(s.text, c.start, c.end) for (_, s), found in zip(flat, candidates, strict=True) for c in found][:16]
    start = time.perf_counter()
    qg.generate(requests, max_question_tokens=24)  # a random model never stops early: 24 tokens each
    qg_seconds = (time.perf_counter() - start) / len(requests)
    say(f"  QG (T5-base size, 4 beams, 24 new tokens): {qg_seconds:.2f} s per question")
    del qg

    qa = ExtractiveQA(str(save_qa_model(directory / "qa", zero_head=False, **large)))
    questions = [("What happened to the person in the story?", d.text) for d, _ in flat[:8]]
    start = time.perf_counter()
    qa.answer(questions)
    qa_source = (time.perf_counter() - start) / len(questions)
    start = time.perf_counter()
    qa.answer([(q, s.text) for (q, _), (_, s) in zip(questions, flat[:8], strict=True)])
    qa_summary = (time.perf_counter() - start) / len(questions)
    say(
        f"  QA (RoBERTa-large size, 384-token windows): {qa_source:.2f} s per question on a document, "
        f"{qa_summary:.2f} s on a summary"
    )
    del qa
    qags = per_summary_candidates * (qg_seconds + qa_summary + qa_source)
    say(
        f"  => QAGS with the thesis models: about {qags:.0f} s per summary ({per_summary_candidates:.1f} "
        f"candidates each) = {1 / qags:.3f} pairs/s on this machine's CPU"
    )

    nli = NliModel(str(save_nli_model(directory / "nli", **large)))
    sentence_pairs = [(d.text[a:b], s.text) for d, s in flat[:5] for a, b in d.sentence_spans()]
    start = time.perf_counter()
    nli.entailment(sentence_pairs)
    per_sentence_pair = (time.perf_counter() - start) / len(sentence_pairs)
    start = time.perf_counter()
    nli.entailment([(d.text, s.text) for d, s in flat[:5]])
    per_document_pair = (time.perf_counter() - start) / 5
    sentences = sum(len(d.sentence_spans()) for d, _ in flat) / len(flat)
    entailment = sentences * per_sentence_pair + per_document_pair + per_sentence_pair * 3
    say(
        f"  NLI (BART-large size): {per_sentence_pair:.3f} s per sentence pair, {per_document_pair:.2f} s per "
        f"document pair => entailment (s2s over {sentences:.0f} sentences, d2s, top2s) about {entailment:.1f} s "
        f"per one-sentence summary = {1 / entailment:.2f} pairs/s"
    )
    say("  (a GPU worker runs these; see the worker section of the README)")


# -- the full pipeline -------------------------------------------------------------------------------------
# Runs the command given after the first argument and writes its peak resident memory (KiB) to the file named by
# the first argument. Being a fresh small process, it forks the command without lending it this benchmark's
# memory: a child forked (or vforked) straight from here counts the models this process holds as its own.
PEAK_MEMORY_WRAPPER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def run_measured(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident memory (MiB) and output of one command in a child process."""
    output_file, peak_file = SCRATCH / "command-output.txt", SCRATCH / "command-peak.txt"
    start = time.perf_counter()
    with output_file.open("w") as output, open(os.devnull, "w") as errors:
        returncode = subprocess.call(
            [sys.executable, "-c", PEAK_MEMORY_WRAPPER, str(peak_file), *command], stdout=output, stderr=errors
        )
    seconds = time.perf_counter() - start
    text = output_file.read_text()
    if returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{text}")
    return seconds, int(peak_file.read_text()) / 1024, text


def bench_pipeline(data: Path) -> None:
    manage = [sys.executable, str(ROOT / "manage.py")]
    say(f"The full pipeline: manage.py commands on a scratch SQLite database ({SCRATCH})")
    run_measured([*manage, "migrate", "--no-input"])
    steps = [
        ("import_dataset --format frank-xsum", ["import_dataset", "--format", "frank-xsum", str(data), "--name", "X"]),
        ("score --metric bertscore (default: sentences)", ["score", "--dataset", "X", "--metric", "bertscore"]),
        (
            "score --metric bertscore --strategy first512 --special-tokens package",
            [
                "score",
                "--dataset",
                "X",
                "--metric",
                "bertscore",
                "--strategy",
                "first512",
                "--special-tokens",
                "package",
            ],
        ),
        ("score --metric bertscore again (nothing to do)", ["score", "--dataset", "X", "--metric", "bertscore"]),
        ("score --metric all (offline profile)", ["score", "--dataset", "X", "--metric", "all"]),
    ]
    for label, arguments in steps:
        seconds, peak, output = run_measured([*manage, *arguments])
        say(f"  {label:70s} {seconds:7.1f} s  peak {peak:7.0f} MiB")
        for line in output.strip().splitlines():
            if "computed now" in line:
                say(f"      {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of ours and the package")
    parser.add_argument("--only", nargs="*", choices=["bertscore", "pipeline", "others", "lengths", "thesis"])
    args = parser.parse_args()
    sections = set(args.only or ["bertscore", "pipeline", "others", "lengths", "thesis"])
    say(
        f"FaithAnno scoring benchmark; {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    try:
        if sections - {"pipeline"}:
            start = time.perf_counter()
            documents, summaries = load_pairs(args.data)
            say(
                f"Read {len(documents)} documents and {sum(map(len, summaries))} summaries with sentence offsets "
                f"in {time.perf_counter() - start:.1f} s"
            )
            say()
        if "bertscore" in sections:
            bench_bertscore(documents, summaries, args.rounds)
            say()
        if "others" in sections:
            bench_others(documents, summaries)
            say()
        if "lengths" in sections:
            bench_lengths(documents, summaries)
            say()
        if "thesis" in sections:
            bench_thesis(documents, summaries)
            say()
        if "pipeline" in sections:
            bench_pipeline(args.data)
        say(
            f"peak memory of the benchmark process itself: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
            f"load average now {os.getloadavg()[0]:.1f}"
        )
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
