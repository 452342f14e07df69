"""The encoder pass alone: the packed BERT forward against Hugging Face's, over the XSum texts.

    python benchmarks/encoder_pass.py                 # times, op profile, fp32 accuracy, memory (about 6 minutes)
    python benchmarks/encoder_pass.py --memory        # memory only

Prints, for the packaged MiniLM cut at layer 4 and all 1,506 distinct texts of the 251 XSum articles and
their summaries (cut at 512 tokens, as in package-compatible BERTScore):
- seconds of the encoder pass with the packed forward on oneDNN, the packed forward on torch's linear
  (MKL), and the Hugging Face forward (best of 2 rounds each);
- where the packed forward's time goes (torch ops by self time, cProfile);
- the error of oneDNN's and MKL's fp32 GEMM against float64 on a 8192 x 384 x 1536 product;
- how much each forward grows the process while the sentence embedder embeds every sentence, summary and
  document twice (each in a fresh process; maximum resident set after minus before).
Figures go to docs/PERFORMANCE.md ("Scoring") with this command.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.bench_scoring import LAYER, MODEL, load_pairs, say  # noqa: E402  (sets up Django)
from scoring.encoders import load_sentence_embedder, load_token_encoder  # noqa: E402
from scoring.packed_encoder import Dense, PackedBertEncoder  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
MODES = ("onednn", "torch-linear", "hugging-face")


def use_forward(encoder_pass: object, mode: str) -> None:
    """Point an EncoderPass at one of the three forwards."""
    model = encoder_pass.model  # type: ignore[attr-defined]
    packed = {"onednn": True, "torch-linear": False}
    encoder_pass.packed = PackedBertEncoder(model, onednn=packed[mode]) if mode in packed else None  # type: ignore[attr-defined]


def bench_times() -> None:
    documents, summaries = load_pairs(DATA)
    encoder = load_token_encoder(MODEL, LAYER)
    texts = sorted({d.text for d in documents} | {s.text for group in summaries for s in group})
    inputs = encoder.tokenize_many(texts)
    say(f"Encoder pass: {len(inputs)} texts, {sum(len(i.input_ids) for i in inputs):,} tokens, {MODEL} layer {LAYER}")
    for mode in MODES:
        use_forward(encoder.encoder_pass, mode)
        encoder.embed(inputs[:50])
        rounds = []
        for _ in range(2):
            start = time.perf_counter()
            encoder.embed(inputs)
            rounds.append(time.perf_counter() - start)
        say(f"  {mode:13s} best {min(rounds):6.2f} s (rounds {', '.join(f'{r:.2f}' for r in rounds)})")
    use_forward(encoder.encoder_pass, "onednn")
    profile = cProfile.Profile()
    profile.enable()
    encoder.embed(inputs)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    self_time: dict[str, float] = {}
    for (_, _, name), row in stats.items():
        # Both overloads of _linear_pointwise (GELU fused; residual fused) are oneDNN GEMMs.
        label = "oneDNN GEMMs (GELU and residual additions fused)" if "mkldnn" in name else name
        self_time[label] = self_time.get(label, 0.0) + row[2]
    say(f"  packed forward on oneDNN, by self time (cProfile, {sum(self_time.values()):.2f} s in all):")
    for label, seconds in sorted(self_time.items(), key=lambda item: -item[1])[:6]:
        say(f"    {seconds:6.2f} s  {label}")


def bench_accuracy() -> None:
    torch.manual_seed(0)
    x, weight, bias = torch.randn(8192, 384), torch.randn(1536, 384) * 0.05, torch.randn(1536)
    exact = x.double() @ weight.double().t() + bias.double()
    with torch.inference_mode():
        onednn = Dense.of(weight, bias, onednn=True)(x)
        mkl = torch.nn.functional.linear(x, weight, bias)
    say("fp32 GEMM, 8192 x 384 x 1536, max |error| against float64:")
    onednn_error, mkl_error = ((y.double() - exact).abs().max().item() for y in (onednn, mkl))
    say(f"  oneDNN {onednn_error:.2e}, MKL {mkl_error:.2e}")


def peak_resident_mib() -> float:
    """This process's own peak resident set (Linux VmHWM). ru_maxrss is no use in a child: it starts from
    the high-water mark of the process that started it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status: this measurement needs Linux")


def memory_child(mode: str, texts_file: str) -> None:
    texts = json.loads(Path(texts_file).read_text())
    embedder = load_sentence_embedder(MODEL)
    use_forward(embedder.encoder_pass, mode)
    before = peak_resident_mib()
    start = time.perf_counter()
    for _ in range(2):
        embedder.embed(texts)
    after = peak_resident_mib()
    say(
        f"  {mode:13s} {len(texts)} texts twice in {time.perf_counter() - start:5.1f} s: "
        f"peak {after:,.0f} MiB, +{after - before:,.0f} MiB over the loaded model"
    )


def bench_memory() -> None:
    # The texts are read here: reading and sentence-splitting them peaks higher than the embedding does, and
    # the maximum resident set of a child that did both would only show that peak.
    documents, summaries = load_pairs(DATA)
    texts = [d.text[start:end] for d in documents for start, end in d.sentences]
    texts += [s.text for group in summaries for s in group] + [d.text for d in documents]
    texts_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"faithanno-encoder-pass-{os.getpid()}.json"
    texts_file.write_text(json.dumps(texts))
    say("Sentence embedder, every sentence, summary and document of the XSum data (fresh process each):")
    try:
        for mode in MODES:
            subprocess.run([sys.executable, __file__, "--memory-child", mode, str(texts_file)], check=True)
    finally:
        texts_file.unlink()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory-child"]:
        memory_child(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["--memory"]:
        bench_memory()
    else:
        bench_times()
        bench_accuracy()
        bench_memory()
