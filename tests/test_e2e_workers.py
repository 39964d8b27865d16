"""End to end: `glossator serve --no-worker` and two `glossator worker` processes on one
external PostgreSQL (the tests' own), the real git client pushing to two repositories.

What must hold (issue 17, part 2):

- the two workers share the queue: a job of one branch runs on one worker while
  the jobs of other branches run on the other, side by side;
- a worker SIGKILLed in the middle of a job: the other worker takes the job over
  (its heartbeat goes stale, the job is put back in the queue) and finishes it;
- one branch is never indexed twice at a time (the attempts of a branch, in
  `glossator_job_runs`, never overlap).

Determinism: alpha's job is held in the middle (in its load, waiting for the
advisory lock of the branch's record, which the test holds) until the test has
seen what it needs; nothing waits on a timer, every wait is a condition polled
until a generous deadline.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.gitserver_support import ServeProcess, WorkerProcess, commit_all, git, wait_for
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, indexed_commit, rows, server_env

pytestmark = pytest.mark.slow


def lock_waiters(db_url: str) -> int:
    """Sessions waiting for an advisory lock (the branch's writer lock) in this database."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND NOT l.granted"
            "   AND d.datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def attempts(db_url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        return conn.execute(
            "SELECT repository, branch, job_id, attempt, status, worker, error,"
            "       started_at, finished_at"
            "  FROM glossator_job_runs ORDER BY repository, branch, started_at"
        ).fetchall()


def push_new(tmp: Path, server: ServeProcess, repository: str, chapters: int) -> Path:
    work = make_small_corpus(tmp / repository, chapters)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, f"{chapters} chapters")
    git("push", "-q", server.url(repository, token=TOKEN), "main", cwd=work)
    return work


@pytest.fixture
def cluster(tmp_path: Path, db_url: str) -> Iterator[tuple[ServeProcess, list[WorkerProcess]]]:
    env = server_env(tmp_path, db_url)
    server = ServeProcess(tmp_path, env, args=("--no-worker",))
    workers = [WorkerProcess(tmp_path, env, name=f"worker-{i}") for i in (1, 2)]
    try:
        server.start()
        with ThreadPoolExecutor(len(workers)) as pool:  # side by side: each waits for its own
            for started in [pool.submit(w.start) for w in workers]:
                started.result()
        yield server, workers
    finally:
        for w in workers:
            if w.proc is not None and w.proc.poll() is None:
                os.kill(w.proc.pid, signal.SIGCONT)  # a failed test may leave one stopped
            w.stop()
        server.stop()


def test_two_workers_share_the_queue_and_take_over_a_killed_job(
    cluster: tuple[ServeProcess, list[WorkerProcess]], db_url: str, tmp_path: Path
) -> None:
    server, workers = cluster
    assert "no indexing worker in this server" in server.log()
    create_repo(server, "alpha")
    create_repo(server, "beta")

    hold = psycopg.connect(db_url, autocommit=True)
    try:
        # alpha's job will index, commit back, then wait in its load for this lock
        hold.execute("SELECT pg_advisory_lock(hashtextextended('alpha/main', 0))")
        push_new(tmp_path, server, "alpha", 3)
        wait_for("alpha's job waits in its load", lambda: lock_waiters(db_url) > 0)
        [alpha_job] = server.jobs("alpha")
        assert alpha_job["status"] == "running", alpha_job
        runner = next(w for w in workers if w.name == alpha_job["worker"])
        other = next(w for w in workers if w is not runner)

        # meanwhile the other worker indexes beta's two branches
        beta = push_new(tmp_path, server, "beta", 2)
        git("checkout", "-q", "-b", "draft", cwd=beta)
        draft = sorted(beta.glob("corpus/*/*/*/source.md"))[0]
        draft.write_text(draft.read_text() + "\nUn paragraphe du brouillon seulement.\n")
        commit_all(beta, "a draft")
        git("push", "-q", server.url("beta", token=TOKEN), "draft", cwd=beta)
        beta_jobs = server.wait_idle("beta", timeout=240)
        assert {j["branch"] for j in beta_jobs} == {"main", "draft"}
        assert all(j["status"] == "done" for j in beta_jobs), beta_jobs
        assert {j["worker"] for j in beta_jobs} == {other.name}
        assert server.jobs("alpha")[0]["status"] == "running"  # side by side

        runner.kill()  # in the middle of alpha's job
    finally:
        hold.close()

    jobs = server.wait_idle("alpha", timeout=240)
    assert [j["id"] for j in jobs] == [alpha_job["id"]], jobs
    assert jobs[0]["status"] == "done", jobs
    assert jobs[0]["worker"] == other.name
    assert "was running in a process that died: queued again" in other.log()
    runs = [r for r in attempts(db_url) if r[2] == alpha_job["id"]]
    assert [(r[4], r[5]) for r in runs] == [("failed", runner.name), ("done", other.name)], runs
    assert "interrupted" in runs[0][6]

    # indexed: alpha at its tip (the killed job's commit-back), beta's two branches
    bare = tmp_path / "repos"
    for repository, branch in (("alpha", "main"), ("beta", "main"), ("beta", "draft")):
        tip = git("rev-parse", branch, cwd=bare / f"{repository}.git").stdout.strip()
        assert indexed_commit(db_url, repository, branch) == tip, (repository, branch)
        assert rows(db_url, repository, branch), (repository, branch)
    for branch, expected in (("draft", True), ("main", False)):
        texts = [c for chunks in rows(db_url, "beta", branch).values() for _, c in chunks]
        assert any("du brouillon seulement" in t for t in texts) is expected, branch

    # never one branch twice at a time: each attempt of a branch ended before the next
    by_branch: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for r in attempts(db_url):
        by_branch.setdefault((r[0], r[1]), []).append(r)
    for key, branch_runs in by_branch.items():
        for before, after in itertools.pairwise(branch_runs):
            assert before[8] is not None and before[8] <= after[7], (key, before, after)

    # the survivor goes on: a new push to alpha is indexed
    work = tmp_path / "alpha"
    git("pull", "-q", "--no-rebase", server.url("alpha"), "main", cwd=work)
    chapter = sorted(work.glob("corpus/*/*/*/source.md"))[0]
    chapter.write_text(chapter.read_text() + "\nUn paragraphe ajouté après la panne.\n")
    commit_all(work, "after the crash")
    git("push", "-q", server.url("alpha", token=TOKEN), "main", cwd=work)
    later = server.wait_idle("alpha", after=alpha_job["id"], timeout=240)
    assert all(j["status"] == "done" and j["worker"] == other.name for j in later), later
    texts = [c for chunks in rows(db_url, "alpha").values() for _, c in chunks]
    assert any("ajouté après la panne" in t for t in texts)


def started_children(log: str) -> list[int]:
    return [int(p) for p in re.findall(r"indexing worker started \(pid (\d+)\)", log)]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    return True


def test_serve_supervises_its_worker_process(tmp_path: Path, db_url: str) -> None:
    """`glossator serve`'s worker is a child process: restarted when it dies, and gone
    when the server is SIGKILLed (no orphan)."""
    server = ServeProcess(tmp_path, server_env(tmp_path, db_url)).start()
    try:
        [first] = wait_for("the worker child", lambda: started_children(server.log()))
        wait_for("the child ready", lambda: "glossator: worker " in server.log())
        os.kill(first, signal.SIGKILL)
        [second] = wait_for(
            "a new child", lambda: [p for p in started_children(server.log()) if p != first]
        )
        assert "exited (killed by SIGKILL); restarting it" in server.log()
        # pushed once the new child has reconciled (else the push gets a second job)
        wait_for("the new child ready", lambda: server.log().count("glossator: worker ") == 2)
        create_repo(server, "garde")
        push_new(tmp_path, server, "garde", 1)
        [job] = server.wait_idle("garde", timeout=240)
        assert job["status"] == "done" and job["worker"].endswith(f":{second}"), job
        server.kill()  # no cleanup: the child must not outlive it
        wait_for("the child gone with the server", lambda: not alive(second), timeout=60)
    finally:
        server.stop()
