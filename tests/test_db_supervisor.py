"""The database supervised (glossator.supervision.database): the server's own embedded PostgreSQL
killed with SIGKILL under a running server, then started again by itself.

Each test starts a private embedded server (never the session's: it is killed). To
keep it down for as long as the test looks, a backend of the dead server is stopped
(SIGSTOP) before the postmaster is killed: it still holds the old shared memory, so
PostgreSQL refuses to start again (what a slow orphaned backend does for real) until
it is let go (SIGCONT) and exits. Every wait is on a condition, with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from gitserver.repos import RepoStore
from glossator.server import build_app
from glossator.settings import Settings
from hooks.reuse import pipeline_index
from tests.fakes import FAKES
from tests.gitserver_support import ServeProcess, ServerThread, commit_all, git, wait_for
from tests.plugins.corpus import make_small_corpus

TOKEN = "tok"


def embedded_settings(root: Path) -> Settings:
    return Settings.from_env(FAKES).replace(
        data_dir=root / "data",
        repos_dir=root / "repos",
        embedder="fake",
        summarizer="fake",
        push_tokens=(TOKEN,),
        job_retries=3,
    )


def server_conninfo(data_dir: Path) -> str:
    return (data_dir / "postgres.lock").read_text().splitlines()[1]


@contextlib.contextmanager
def killed_and_held(data_dir: Path) -> Iterator[None]:
    """SIGKILL the postmaster while one of its backends is stopped; let it go at exit."""
    conn = psycopg.connect(server_conninfo(data_dir), autocommit=True)
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    backend = int(row[0])
    postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    os.kill(backend, signal.SIGSTOP)
    try:
        os.kill(postmaster, signal.SIGKILL)
        yield
    finally:
        os.kill(backend, signal.SIGCONT)  # it sees its postmaster gone, and exits
        with contextlib.suppress(Exception):
            conn.close()


def healthz(base: str) -> tuple[int, str]:
    r = httpx.get(f"{base}/healthz", timeout=30)
    return r.status_code, r.text


def status_cli(data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    env["GLOSSATOR_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-c", "from glossator.cli import main; main()", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def mcp_search(base: str, query: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(f"{base}/mcp/", http_client=http)) as client,
    ):
        return await client.call_tool("search", {"query": query})


def add_paragraph(work: Path, text: str) -> None:
    chapter = sorted(work.glob("corpus/**/source.md"))[0]
    chapter.write_text(chapter.read_text("utf-8") + f"\n{text}\n", "utf-8")


def has_text(data_dir: Path, word: str) -> bool:
    with psycopg.connect(server_conninfo(data_dir)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM hierarchical_content_nodes WHERE content LIKE %s",
            (f"%{word}%",),
        ).fetchone()
    return bool(row and row[0])


def failed_runs(data_dir: Path, job_id: int) -> list[tuple[str, str]]:
    with psycopg.connect(server_conninfo(data_dir)) as conn:
        return conn.execute(
            "SELECT status, error FROM glossator_job_runs"
            " WHERE job_id = %s AND status = 'failed' AND error IS NOT NULL",
            (job_id,),
        ).fetchall()


def jobs(base: str, repository: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{base}/api/jobs", params={"repository": repository}, timeout=30)
    return r.json()["jobs"] if r.status_code == 200 else []


def test_killed_database_is_started_again_and_the_job_it_broke_is_recorded(
    private_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = embedded_settings(private_dir)
    data_dir = private_dir / "data"
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    store.create("veille")
    started, go = threading.Event(), threading.Event()

    def gated(source: Any, **kwargs: Any) -> Any:
        # the first job waits here until the database is dead, then goes on (and fails)
        if not go.is_set():
            started.set()
            go.wait(timeout=300)
        return pipeline_index()(source, **kwargs)

    work = make_small_corpus(private_dir / "work", 1)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "one chapter")
    app = build_app(settings, worker="thread", index_fn=gated)  # the gate needs this process
    caplog.set_level(logging.INFO, logger="glossator.supervision.database")
    caplog.set_level(logging.INFO, logger="hooks")  # the jobs' starts and ends, if it fails
    with ServerThread(app, lifespan="on") as server:
        supervisor = app.state.service["supervisor"]
        git("push", "-q", server.url("veille", token=TOKEN), "main", cwd=work)
        assert started.wait(timeout=120), "the job never started"
        [first] = jobs(server.base, "veille")

        with killed_and_held(data_dir):
            # the supervisor first: a /healthz asked before it has seen the outage waits
            # for a pooled connection (store.db.POOL_WAIT_S, 10 s) before its 503
            wait_for("two restarts refused", lambda: supervisor._attempts >= 2)
            wait_for("/healthz says the database is down", lambda: healthz(server.base)[0] == 503)
            _, text = healthz(server.base)
            assert "embedded PostgreSQL stopped" in text and "starting it again" in text, text
            r = httpx.get(f"{server.base}/api/jobs", timeout=30)
            assert r.status_code == 503 and r.json()["error"] == supervisor.problem
            for line in (text, r.json()["error"]):
                assert "\n" not in line.strip() and str(private_dir) not in line
            # the first job goes on and meets the outage (its rows come before its
            # commit-back: it writes nothing to git before it fails), while three clients
            # ask, side by side: the job, the search and the push each wait for a pooled
            # connection (store.db.POOL_WAIT_S, 10 s) before they say the database is down
            go.set()
            with ThreadPoolExecutor(2) as clients:
                cli_run = clients.submit(status_cli, data_dir)
                search = clients.submit(asyncio.run, mcp_search(server.base, "chapitre"))
                # a push meanwhile: accepted, its job could not be queued, and it says so
                add_paragraph(work, "Écrit pendant la panne : anémomètre.")
                commit_all(work, "during the outage")
                pushed = git("push", server.url("veille", token=TOKEN), "main", cwd=work)
                cli, result = cli_run.result(), search.result()
            assert cli.returncode == 1, cli
            assert "does not answer" in cli.stderr and len(cli.stderr.strip().splitlines()) == 1
            assert result.is_error
            said = result.content[0].text
            assert "does not answer" in said and "\n" not in said and "Traceback" not in said
            said = [ln for ln in pushed.stderr.splitlines() if "not queued" in ln]
            assert len(said) == 1 and "does not answer" in said[0], pushed.stderr
            service = app.state.service["indexing"]
            wait_for("the job's failure kept for later", lambda: service.history.unrecorded, 180)

        wait_for("the database back", lambda: healthz(server.base) == (200, "ok\n"), 180)
        assert supervisor.problem is None and supervisor.restarts >= 1
        # the attempt that met the outage is in the history, with the reason
        # (a later attempt of the same job, re-queued when its worker was seen stalled,
        # may have failed too: the outage's is the one that says the database is gone)
        wait_for(
            "the failed attempt recorded",
            lambda: any("does not answer" in e for _, e in failed_runs(data_dir, first["id"])),
            120,
        )
        # the server indexes the branch by itself (follow-up, reconciliation), with the
        # commit pushed during the outage
        try:
            wait_for("the outage's push searchable", lambda: has_text(data_dir, "anémomètre"), 600)
        except TimeoutError as e:  # what the queue shows then, for whoever reads the failure
            raise TimeoutError(f"{e}; jobs: {jobs(server.base, 'veille')}") from None
        # and a push after it is indexed as usual. The rows are searchable before the
        # job's commit-back moves the branch (hooks.job: "the rows first"), so a push
        # right then may be refused (the more so since the rows land before the vectors:
        # issue 41): its writer pulls and pushes again, as anyone would
        # (the commit-back yields to a push refused a moment ago: core.receiving)
        add_paragraph(work, "Écrit après la panne : baromètre.")
        commit_all(work, "after the outage")
        for attempt in range(3):  # bounded: a commit-back is one more commit at most
            git("pull", "-q", "--rebase", server.url("veille", token=TOKEN), "main", cwd=work)
            pushed = git(
                "push", "-q", server.url("veille", token=TOKEN), "main", cwd=work, check=False
            )
            if pushed.returncode == 0:
                break
            # refused before its pack ("fetch first") or at the ref's compare-and-swap, the
            # commit-back having landed between git's ref listing and its push ("failed to
            # update ref"): the same race, seen at two moments; either way nothing is lost
            moved = "fetch first" in pushed.stderr or "failed to update ref" in pushed.stderr
            assert moved and attempt < 2, pushed.stderr
        wait_for("the next push searchable", lambda: has_text(data_dir, "baromètre"), 600)

    downs = [r.getMessage() for r in caplog.records if "database down" in r.getMessage()]
    backs = [r.getMessage() for r in caplog.records if "database back" in r.getMessage()]
    assert downs and "embedded PostgreSQL stopped" in downs[0], downs
    assert len(downs) <= 3, downs  # per change of state, not per attempt (there were >= 2)
    assert len(backs) == 1, backs
    assert not [r for r in caplog.records if "postgresql://" in r.getMessage()]
    # an outage is expected: one line each, never a traceback at ERROR (at DEBUG only)
    loud = [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.ERROR and (r.exc_info or "Traceback" in r.getMessage())
    ]
    assert not loud, loud
    # nor a line per reconnection attempt of the pools (glossator.logs.PoolReconnecting)
    pools = [r.getMessage() for r in caplog.records if r.name == "psycopg.pool"]
    assert not [m for m in pools if "error connecting" in m], pools[:3]


@contextlib.contextmanager
def small_disk(path: Path, size: str = "256m") -> Iterator[None]:
    """A tmpfs of `size` mounted on `path` (needs root with CAP_SYS_ADMIN: skipped
    otherwise, saying so); unmounted at exit."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root (mount -t tmpfs); not here")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path) -> Path:
    """Write zeros into `path/ballast` until the filesystem refuses (ENOSPC).

    Unbuffered: a buffered file kept the tail of the last, partial write and raised
    ENOSPC again when closed, whenever the free space ended within a buffer of a MiB
    boundary (a data directory's size decides it, not the test)."""
    ballast = path / "ballast"
    with open(ballast, "wb", buffering=0) as f, contextlib.suppress(OSError):
        for _ in range(1 << 14):  # bounded: 16 GiB
            f.write(b"\0" * (1 << 20))
    return ballast


def test_full_disk_panic_is_one_line_and_the_server_recovers_once_space_is_back(
    private_dir: Path,
) -> None:
    """The embedded PostgreSQL on a 256 MB tmpfs, filled: its WAL writer PANICs
    (ENOSPC on a new WAL segment), crash recovery fails for the same reason and the
    postmaster exits. Everything says the disk is full in one line; once the ballast
    is gone the server starts the database again by itself and indexes what waited."""
    from tests.plugins.serve import ADMIN, server_env
    from tests.plugins.serve import TOKEN as PUSH

    data_dir = private_dir / "data"
    with small_disk(data_dir):
        server = ServeProcess(private_dir, server_env(private_dir, None)).start(timeout=180)
        try:
            assert server.create_repo("plein", admin=ADMIN).status_code == 201
            work = make_small_corpus(private_dir / "work", 1)
            git("init", "-q", "-b", "main", str(work))
            commit_all(work, "one chapter")
            git("push", "-q", server.url("plein", token=PUSH), "main", cwd=work)
            server.wait_idle("plein", timeout=240)

            conn = psycopg.connect(server_conninfo(data_dir), autocommit=True)
            ballast = fill(data_dir)
            with contextlib.suppress(psycopg.Error), conn:
                for _ in range(200):  # WAL without data pages: the next segment fails
                    conn.execute("SELECT pg_logical_emit_message(false, 'x', repeat('x', 1 << 20))")
            # the supervisor's line first: a /healthz asked before it has seen the full
            # disk waits for a pooled connection (store.db.POOL_WAIT_S, 10 s) for its 503
            down = "database down: the database's disk is full"
            wait_for("the server says the disk is full", lambda: down in server.log())
            code_text = wait_for(
                "/healthz says the disk is full",
                lambda: (ht := healthz(server.base))[0] == 503 and "disk is full" in ht[1] and ht,
            )
            assert "\n" not in code_text[1].strip() and str(private_dir) not in code_text[1]
            r = httpx.get(f"{server.base}/api/jobs", timeout=30)
            assert r.status_code == 503 and "disk is full" in r.json()["error"], r.text
            with ThreadPoolExecutor(1) as clients:  # beside the push (POOL_WAIT_S: above)
                cli_run = clients.submit(status_cli, data_dir)
                add_paragraph(work, "Écrit disque plein : hygromètre.")
                commit_all(work, "while the disk is full")
                git("pull", "-q", "--rebase", server.url("plein", token=PUSH), "main", cwd=work)
                pushed = git("push", server.url("plein", token=PUSH), "main", cwd=work)
                cli = cli_run.result()
            assert cli.returncode == 1 and len(cli.stderr.strip().splitlines()) == 1, cli
            assert "disk is full" in cli.stderr, cli.stderr
            said = [ln for ln in pushed.stderr.splitlines() if "not queued" in ln]
            assert len(said) == 1 and "\n" not in said[0], pushed.stderr

            ballast.unlink()  # space is back
            wait_for("the database back", lambda: healthz(server.base) == (200, "ok\n"), 240)
            wait_for("the waiting push searchable", lambda: has_text(data_dir, "hygromètre"), 300)
            log = server.log()
            assert down in log, log[-3000:]
            assert log.count(down) <= 2
            assert "database back after" in log and "postgresql://" not in log
            assert "error connecting in" not in log  # the pools' attempts: at DEBUG
            assert "Traceback" not in log, log[max(0, log.index("Traceback") - 2000) :][:6000]
        finally:
            server.stop()
