"""End to end: SIGKILL `glossator serve` in the middle of a job, start it again.

The server runs on the embedded PostgreSQL (its default), which outlives the
killed process. After the kill no file has partial rows (a file's rows are all
there or none are); after the restart the orphaned job is queued again, it
completes, and the rows equal the sidecars of the indexed commit.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pygit2
import pytest

from hooks.gitsource import GitTreeSource
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import EXAMPLE_DIR
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow


def embedded_url(data_dir: Path) -> str:
    """The URL the (possibly dead) server wrote in its data directory's lock file."""
    return (data_dir / "postgres.lock").read_text().splitlines()[1]


def partial_files(url: str, repo: pygit2.Repository, commit: str | None) -> list[str]:
    """Files whose row count differs from their sidecar's chunk count at `commit`."""
    source = GitTreeSource.at(repo, commit) if commit else None
    bad = []
    with psycopg.connect(url) as conn:
        counts = conn.execute(
            "SELECT source_file, count(*) FROM hierarchical_content_nodes"
            " WHERE repository = 'crash' GROUP BY source_file"
        ).fetchall()
    for path, count in counts:
        if source is None or not source.exists(path + ".jsonl"):
            bad.append(f"{path}: rows but no sidecar")
            continue
        manifest = json.loads(source.read(path + ".jsonl").split(b"\n", 1)[0])
        if manifest["chunk_count"] != count:
            bad.append(f"{path}: {count} rows, {manifest['chunk_count']} chunks")
    return bad


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """Outside pytest's tmp_path: that tree is private to root, and the embedded
    PostgreSQL runs as its own system user (as tests/plugins/db.py does)."""
    path = Path(tempfile.mkdtemp(prefix="glossator-e2e-crash-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_kill_during_a_job_then_restart(tmp_path: Path, data_dir: Path) -> None:
    env = server_env(tmp_path, None, GLOSSATOR_DATA_DIR=str(data_dir))  # embedded PostgreSQL
    server = ServeProcess(tmp_path, env).start()
    try:
        create_repo(server, "crash")
        work = tmp_path / "work"
        shutil.copytree(EXAMPLE_DIR, work)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "whole example")
        git("push", "-q", server.url("crash", token=TOKEN), "main", cwd=work)
        [job] = server.jobs("crash")
        # Kill once the indexer has finished and the commit-back / load has begun,
        # or 4 s into the job, whichever comes first.
        deadline = time.monotonic() + 120
        started_at = None
        while time.monotonic() < deadline:
            status = server.jobs("crash")[0]["status"]
            if status == "running" and started_at is None:
                started_at = time.monotonic()
            log = server.log()
            if "indexer.pipeline" in log or "store.vectors" in log:
                time.sleep(0.3)
                break
            if started_at is not None and time.monotonic() - started_at > 4:
                break
            time.sleep(0.05)
        server.kill()
    except BaseException:
        server.stop()
        raise

    url = embedded_url(data_dir)
    bare = pygit2.Repository(str(tmp_path / "repos" / "crash.git"))
    tip = str(bare.references["refs/heads/main"].target)
    with psycopg.connect(url) as conn:
        (status,) = conn.execute(
            "SELECT status::text FROM procrastinate_jobs WHERE id = %s", (job["id"],)
        ).fetchone()
    assert status == "doing", "the job should have been running when the server was killed"
    assert partial_files(url, bare, tip) == []

    server = ServeProcess(tmp_path, env, name="restart").start()
    try:
        jobs = server.wait_idle("crash", timeout=240)
        assert jobs[-1]["id"] == job["id"]
        assert all(j["status"] == "done" for j in jobs), jobs
        assert "was running in a process that died" in server.log()
        tip = str(bare.references["refs/heads/main"].target)
        with psycopg.connect(url) as conn:
            (indexed,) = conn.execute(
                "SELECT commit FROM indexed_commits WHERE repository = 'crash'"
            ).fetchone()
            (files,) = conn.execute(
                "SELECT count(DISTINCT source_file) FROM hierarchical_content_nodes"
                " WHERE repository = 'crash'"
            ).fetchone()
        assert indexed == tip
        assert partial_files(url, bare, tip) == []
        source = GitTreeSource.at(bare, tip)
        mds = [p for p in source.paths() if p.startswith("corpus/") and p.endswith(".md")]
        assert files == len(mds) and all(source.exists(p + ".jsonl") for p in mds)
    finally:
        server.stop()
