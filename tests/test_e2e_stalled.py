"""End to end: a live worker silent longer than STALLED_S (SIGSTOPped in the middle of a
job, as a suspended laptop, a host at load 30 or `serve`'s searches-first would leave
it) is taken for dead; its job is put back in the queue and run again by the other
worker. When it wakes (SIGCONT) it must notice and write nothing: one commit-back,
one load, the job ended once, by the attempt that runs it now (hooks.lease).

`glossator serve --no-worker` and two `glossator worker` processes on the tests'
PostgreSQL, the real git client pushing. Determinism as in test_e2e_workers: the job
is held at its first write under the branch's writer lock (an advisory lock the test
holds), so the stopped worker is stopped in the middle of its job, and the second
attempt reaches the same lock before either may go on; every wait is a condition
polled until a generous deadline.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psycopg
import pytest

from tests.gitserver_support import ServeProcess, WorkerProcess, git, wait_for
from tests.plugins.serve import create_repo, indexed_commit, rows
from tests.test_e2e_workers import attempts, cluster, lock_waiters, push_new  # noqa: F401 - the fixture

# its subject is the queue's leases, not the keyword engine: once, on the default one
# (not again in `make test-fallback`, where it would cost another ~80 s)
pytestmark = [pytest.mark.slow, pytest.mark.pg_backends("pg_search")]


def job_row(db_url: str, job_id: int) -> tuple[str, int]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT status::text, attempts FROM procrastinate_jobs WHERE id = %s", (job_id,)
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def test_a_worker_stopped_longer_than_stalled_s_wakes_and_writes_nothing(
    cluster: tuple[ServeProcess, list[WorkerProcess]],  # noqa: F811 - tests.test_e2e_workers' fixture
    db_url: str,
    tmp_path: Path,
) -> None:
    server, workers = cluster
    create_repo(server, "alpha")
    bare = tmp_path / "repos" / "alpha.git"

    hold = psycopg.connect(db_url, autocommit=True)
    stopped: WorkerProcess | None = None
    try:
        hold.execute("SELECT pg_advisory_lock(hashtextextended('alpha/main', 0))")
        push_new(tmp_path, server, "alpha", 3)
        pushed = git("rev-parse", "main", cwd=bare).stdout.strip()
        wait_for("alpha's job waits for the branch's writer lock", lambda: lock_waiters(db_url))
        [job] = server.jobs("alpha")
        runner = next(w for w in workers if w.name == job["worker"])
        other = next(w for w in workers if w is not runner)
        assert runner.proc is not None
        first_attempt = job_row(db_url, job["id"])[1]

        os.kill(runner.proc.pid, signal.SIGSTOP)  # alive, silent: no heartbeat
        stopped = runner
        # the other worker's maintenance takes it for dead after STALLED_S (+ a round)
        wait_for(
            "the other worker puts the job back in the queue",
            lambda: "was running in a process that died: queued again" in other.log(),
        )
        # ... and runs it again, up to the same lock: two attempts at once
        wait_for("the second attempt waits for the lock too", lambda: lock_waiters(db_url) == 2)
        status, second_attempt = job_row(db_url, job["id"])
        assert (status, second_attempt) == ("doing", first_attempt + 1)
        hold.close()  # the stopped worker, first in line, is granted the lock
        os.kill(runner.proc.pid, signal.SIGCONT)
        stopped = None
    finally:
        hold.close()
        if stopped is not None and stopped.proc is not None:
            os.kill(stopped.proc.pid, signal.SIGCONT)

    jobs = server.wait_idle("alpha")
    assert [(j["id"], j["status"]) for j in jobs] == [(job["id"], "done")], jobs
    assert jobs[0]["worker"] == other.name
    # the woken attempt noticed, and wrote nothing: not the job's end either
    wait_for("the woken worker says so", lambda: "stopped without writing" in runner.log())
    wait_for("and leaves the job's end alone", lambda: "not ended here" in runner.log())
    assert job_row(db_url, job["id"]) == ("succeeded", second_attempt + 1)  # ended once
    runs = [r for r in attempts(db_url) if r[2] == job["id"]]
    assert [(r[3], r[4], r[5]) for r in runs] == [
        (first_attempt, "failed", runner.name),
        (second_attempt, "done", other.name),
    ], runs
    assert "interrupted" in runs[0][6]

    # one commit-back on the pushed tip, the branch on it, its rows loaded once
    tip = git("rev-parse", "main", cwd=bare).stdout.strip()
    log = git("rev-list", f"{pushed}..{tip}", cwd=bare).stdout.split()
    assert log == [tip], log
    assert indexed_commit(db_url, "alpha", "main") == tip
    loaded = {path: len(chunks) for path, chunks in rows(db_url, "alpha").items()}
    sidecars = [
        p
        for p in git("ls-tree", "-r", "--name-only", tip, cwd=bare).stdout.split()
        if p.endswith(".md.jsonl")
    ]
    expected = {
        p.removesuffix(".jsonl"): len(git("show", f"{tip}:{p}", cwd=bare).stdout.splitlines()) - 1
        for p in sidecars
    }
    assert loaded == {p: n for p, n in expected.items() if n}  # the manifest, then one line a row
    # the runner is alive and works on: nothing left it stuck
    assert runner.proc.poll() is None
