"""End to end: SIGKILL `glossator serve` in the middle of a job, start it again.

The server runs on the embedded PostgreSQL (its default), which outlives the
killed process. After the kill no file has partial rows (a file's rows are all
there or none are, and of one version: the tip's sidecar's, or the job's own loaded
before its vectors, issue 41); after the restart the orphaned job is queued again, it
completes, and the rows equal the sidecars of the indexed commit.

The job is held in the middle for certain, not caught by a timer: its embedder is
an OpenAI-compatible HTTP server of the test's own (127.0.0.1, port 0) whose first
request after the push (`arm`: the server's start-up asks it too) does not answer
until the test has killed the server; every other request is answered with the
fake embedder's vectors. (Until session 8 the test killed "once
the indexer logged, or 4 s in", a race the job won once it got faster.)
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import pygit2
import pytest

from hooks.gitsource import GitTreeSource
from tests.fakes import hashed_vector
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import EXAMPLE_DIR
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow


def embedded_url(data_dir: Path) -> str:
    """The URL the (possibly dead) server wrote in its data directory's lock file."""
    return (data_dir / "postgres.lock").read_text().splitlines()[1]


def partial_files(url: str, repo: pygit2.Repository, commit: str | None) -> list[str]:
    """Files whose row count differs from their sidecar's chunk count at `commit`, unless
    their rows are a whole version the killed job loaded before its vectors (issue 41:
    a `partial:` record holding their count)."""
    source = GitTreeSource.at(repo, commit) if commit else None
    bad = []
    with psycopg.connect(url) as conn:
        counts = conn.execute(
            "SELECT source_file, count(*) FROM hierarchical_content_nodes"
            " WHERE repository = 'crash' GROUP BY source_file"
        ).fetchall()
        early = dict(
            conn.execute(
                "SELECT source_file, chunk_count FROM loaded_files"
                " WHERE repository = 'crash' AND sidecar_hash LIKE 'partial:%%'"
            ).fetchall()
        )
    for path, count in counts:
        if early.get(path) == count:
            continue  # the job's own version of the file, whole
        if source is None or not source.exists(path + ".jsonl"):
            bad.append(f"{path}: rows but no sidecar")
            continue
        manifest = json.loads(source.read(path + ".jsonl").split(b"\n", 1)[0])
        if manifest["chunk_count"] != count:
            bad.append(f"{path}: {count} rows, {manifest['chunk_count']} chunks")
    return bad


class HeldEmbeddings:
    """An OpenAI-compatible /v1/embeddings whose first request once armed waits for
    `release`."""

    def __init__(self) -> None:
        self.armed = threading.Event()
        self.reached = threading.Event()  # the first request has arrived (the job is in it)
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.first_taken = False

    def arm(self) -> None:
        self.armed.set()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        held = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with held.lock:
                    first = held.armed.is_set() and not held.first_taken
                    held.first_taken = held.first_taken or first
                if first:
                    held.reached.set()
                    held.release.wait(timeout=300)  # bounded: the test releases it
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                answer = json.dumps({
                    "object": "list",
                    "model": body.get("model", "held"),
                    "data": [
                        {"object": "embedding", "index": i, "embedding": hashed_vector(t, 384)}
                        for i, t in enumerate(texts)
                    ],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }).encode()  # fmt: skip
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the killed server's connection is gone

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@pytest.fixture
def held_embeddings() -> Iterator[tuple[HeldEmbeddings, str]]:
    held = HeldEmbeddings()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), held.handler())
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield held, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        held.release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """Outside pytest's tmp_path: that tree is private to root, and the embedded
    PostgreSQL runs as its own system user (as tests/plugins/db.py does)."""
    path = Path(tempfile.mkdtemp(prefix="glossator-e2e-crash-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_kill_during_a_job_then_restart(
    tmp_path: Path, data_dir: Path, held_embeddings: tuple[HeldEmbeddings, str]
) -> None:
    held, base_url = held_embeddings
    env = server_env(
        tmp_path,
        None,  # embedded PostgreSQL
        GLOSSATOR_DATA_DIR=str(data_dir),
        GLOSSATOR_EMBEDDER=f"openai-compatible:{base_url}",
        GLOSSATOR_EMBEDDER_MODEL="held",
        NO_PROXY="127.0.0.1",
    )
    server = ServeProcess(tmp_path, env).start()
    try:
        create_repo(server, "crash")
        held.arm()
        work = tmp_path / "work"
        shutil.copytree(EXAMPLE_DIR, work)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "whole example")
        git("push", "-q", server.url("crash", token=TOKEN), "main", cwd=work)
        [job] = server.jobs("crash")
        # the job is inside its first embedding request, which does not answer: kill now
        assert held.reached.wait(timeout=240), "the job never asked for embeddings"
        server.kill()
    except BaseException:
        server.stop()
        raise
    finally:
        held.release.set()  # every later request (the restarted job's) is answered

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
            (early,) = conn.execute(
                "SELECT count(*) FROM loaded_files WHERE repository = 'crash'"
                " AND sidecar_hash LIKE 'partial:%%'"
            ).fetchone()
            (files,) = conn.execute(
                "SELECT count(DISTINCT source_file) FROM hierarchical_content_nodes"
                " WHERE repository = 'crash'"
            ).fetchone()
        assert indexed == tip and early == 0
        assert partial_files(url, bare, tip) == []
        source = GitTreeSource.at(bare, tip)
        mds = [p for p in source.paths() if p.startswith("corpus/") and p.endswith(".md")]
        assert files == len(mds) and all(source.exists(p + ".jsonl") for p in mds)
    finally:
        server.stop()
