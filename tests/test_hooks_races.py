"""The queue under forced interleavings, on the real PostgreSQL and procrastinate worker.

No timing is involved: a seam in the indexer moves the branch (as a push would)
or fails an attempt at a chosen point, then the real procrastinate worker runs
every due job (`JobRunner.drain`, retries with no delay). What must hold
whatever the interleaving: no job stays `doing`, a job that lost the race ends
`done` (never `failed`), a failure while a push's job holds the queueing lock is
no UniqueViolation, and at the end the indexed commit is the tip and every edit
is in the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gitserver.repos import RepoStore
from glossator.commands.repos import job_detail
from hooks.job_runner import JobRunner
from hooks.maintenance import STALLED_S, stalled_hold_after_start
from hooks.queue import defer_sync, ensure_schema, list_jobs
from hooks.retries import SLOW_RETRIES, gives_up, retry_delay
from hooks.reuse import pipeline_index
from tests.gitserver_support import commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.test_hooks_worker import branch_indexer


class Branch:
    """The bare repository `livre` and a clone that pushes to it (no hook queues: a
    seam that wants the push's job defers it itself)."""

    def __init__(self, tmp: Path) -> None:
        self.store = RepoStore(tmp / "repos", data_dir=tmp / "data")
        self.bare = self.store.create("livre")
        self.work = make_small_corpus(tmp / "work", 3)
        self.env = {"GLOSSATOR_DATA_DIR": str(tmp)}  # no database: the hook queues nothing
        git("init", "-q", "-b", "main", str(self.work))
        commit_all(self.work, "corpus")
        self.push()
        self.chapters = sorted(self.work.glob("corpus/*/*/*/source.md"))
        self.markers: list[str] = []

    def push(self) -> None:
        git("push", "-q", "-f", str(self.bare), "HEAD:main", cwd=self.work, env=self.env)

    def edit_and_push(self) -> str:
        """A user's push made while a job runs: a new paragraph in a chapter."""
        git("fetch", "-q", str(self.bare), "main", cwd=self.work)
        git("reset", "-q", "--hard", "FETCH_HEAD", cwd=self.work)
        marker = f"MARQUEUR{len(self.markers):03d}"
        chapter = self.chapters[len(self.markers) % len(self.chapters)]
        chapter.write_text(chapter.read_text().rstrip("\n") + f"\n\nParagraphe {marker}.\n")
        commit_all(self.work, f"edit {marker}")
        self.push()
        self.markers.append(marker)
        return marker

    def tip(self) -> str:
        return self.store.branches("livre")["main"]


def service_for(
    branch: Branch, database: Any, embedder: Any, summarizer: Any, index_fn: Callable[..., Any]
) -> JobRunner:
    indexer = branch_indexer(branch.store, database.pool, embedder, summarizer, index_fn)
    ensure_schema(database.conninfo)
    return JobRunner(
        conninfo=database.conninfo,
        store=branch.store,
        indexer=indexer,
        retries=3,
        retry_base_s=0.0,  # follow-ups are due at once: drain() runs them all
    )


async def drain(service: JobRunner) -> None:
    await service.app.open_async()
    try:
        await service.drain()
    finally:
        await service.app.close_async()


def jobs(conninfo: str) -> list[tuple[int, str, dict[str, Any]]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT id, status::text, args FROM procrastinate_jobs ORDER BY id"
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def runs(conninfo: str) -> list[tuple[int, str, str | None, dict[str, Any] | None]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT job_id, status, error, stats FROM glossator_job_runs ORDER BY job_id, attempt"
        ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def assert_settled(branch: Branch, conninfo: str) -> None:
    """Nothing waits or runs, the rows are the tip's, every marker is findable."""
    assert [j for j in jobs(conninfo) if j[1] in ("todo", "doing")] == []
    with psycopg.connect(conninfo) as conn:
        (indexed,) = conn.execute(
            "SELECT commit FROM indexed_commits WHERE repository = 'livre' AND branch = 'main'"
        ).fetchone()
        assert indexed == branch.tip()
        for marker in branch.markers:
            (n,) = conn.execute(
                "SELECT count(*) FROM hierarchical_content_nodes WHERE content LIKE %s",
                (f"%{marker}%",),
            ).fetchone()
            assert n == 1, marker


@pytest.fixture
def branch(tmp_path: Path) -> Branch:
    return Branch(tmp_path)


@pytest.mark.parametrize("moves", [1, 3])
async def test_branch_moved_during_attempts_is_finished_by_the_next_job(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any, moves: int
) -> None:
    """The first three attempts each see `moves` pushes land while they index; no
    push's hook reaches the queue, so only the jobs' own follow-ups keep it going."""
    real = pipeline_index()
    calls = 0

    def index_while_pushing(source: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        result = real(source, **kwargs)
        if calls <= 3:
            for _ in range(moves):
                branch.edit_and_push()
        return result

    service = service_for(branch, database, fake_embedder, fake_summarizer, index_while_pushing)
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)

    assert_settled(branch, database.conninfo)
    statuses = [status for _, status, _ in jobs(database.conninfo)]
    assert statuses == ["succeeded"] * 4  # three lost races, then the job that finished
    history = runs(database.conninfo)
    assert [r[1] for r in history] == ["done"] * 4
    for _, _, _, stats in history[:3]:
        assert stats and stats["races"] == 1 and stats["moved"] and stats["next_job"]
    assert history[3][3] and not history[3][3]["moved"]


async def test_failure_while_a_push_holds_the_queueing_lock(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """What wedged the branch: the attempt fails after a push queued the next job.
    Procrastinate's own retry would put the failed row back to `todo` next to the
    waiting one (UniqueViolation, job left `doing`); ours ends it `failed` and the
    waiting job is its follow-up."""
    real = pipeline_index()
    calls = 0
    pushed: list[int] = []

    def fail_after_a_push(source: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            branch.edit_and_push()
            pushed.append(defer_sync(database.conninfo, "livre", "main").job_id)  # its hook
            raise RuntimeError("the embedding provider went away")
        return real(source, **kwargs)

    service = service_for(branch, database, fake_embedder, fake_summarizer, fail_after_a_push)
    first = defer_sync(database.conninfo, "livre", "main").job_id
    await drain(service)

    assert_settled(branch, database.conninfo)
    assert [(i, s) for i, s, _ in jobs(database.conninfo)] == [
        (first, "failed"),
        (pushed[0], "succeeded"),
    ]
    failed = runs(database.conninfo)[0]
    assert failed[1] == "failed" and "the embedding provider went away" in (failed[2] or "")
    assert failed[3] and failed[3]["next_job"] == pushed[0]


async def test_failures_are_retried_by_follow_up_jobs(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    real = pipeline_index()
    calls = 0

    def fail_twice(source: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise RuntimeError(f"failure {calls}")
        return real(source, **kwargs)

    service = service_for(branch, database, fake_embedder, fake_summarizer, fail_twice)
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)

    assert_settled(branch, database.conninfo)
    found = jobs(database.conninfo)
    assert [s for _, s, _ in found] == ["failed", "failed", "succeeded"]
    assert [a.get("failures", 0) for _, _, a in found] == [0, 1, 2]


def test_retry_delays() -> None:
    delays = [retry_delay(n, 3) for n in (1, 2, 3, 4, 5, 6, 9)]
    assert delays == [2.0, 4.0, 8.0, 300.0, 600.0, 1200.0, 3600.0]  # quick, then slowing
    assert retry_delay(1, 0) == 300.0  # no quick retries: the slow pace at once
    assert not gives_up(3 + SLOW_RETRIES, 3) and gives_up(4 + SLOW_RETRIES, 3)


async def test_a_failure_that_never_clears_stops_after_the_bound(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Issue 14: a problem that never clears was retried every 5 minutes for ever. Now
    the retries slow down and stop after a bound; reconciliation leaves the branch
    alone at that tip, `glossator status` says so, and a push starts again."""

    def always_fail(source: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the provider refuses this key")

    service = service_for(branch, database, fake_embedder, fake_summarizer, always_fail)
    service.follow_ups.slow_retry_s = (
        0.0  # every follow-up due at once: drain() runs the whole chain
    )
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)

    found = jobs(database.conninfo)
    assert [s for _, s, _ in found] == ["failed"] * (1 + 3 + SLOW_RETRIES)
    last = runs(database.conninfo)[-1]
    assert last[3] and last[3]["gave_up"] and last[3]["next_job"] is None
    assert last[3]["gave_up_at"] == branch.tip()
    await service.app.open_async()
    try:
        assert await service.maintenance.reconcile() == 0  # given up at this tip: not queued again
    finally:
        await service.app.close_async()
    with psycopg.connect(database.conninfo) as conn:
        listed = list_jobs(conn, repository="livre")
    detail = job_detail(listed[0])
    assert "refuses this key" in detail and f"gave up after {4 + SLOW_RETRIES} attempts" in detail

    service.attempts.job.indexer.index_fn = pipeline_index()  # the key is fixed, and someone pushes
    branch.edit_and_push()
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)
    assert_settled(branch, database.conninfo)
    assert jobs(database.conninfo)[-1][1] == "succeeded"


async def test_a_job_whose_outcome_was_lost_is_closed(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Procrastinate could not persist the outcome (database gone at that instant):
    the job stays `doing` under a live worker and its lock blocks the branch."""
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", (job,))
    service.local_jobs.returned(job, True, at=0.0)  # our thread returned long ago
    await service.app.open_async()
    try:
        assert await service.maintenance.close_unfinished() == 1
        assert await service.maintenance.close_unfinished() == 0
    finally:
        await service.app.close_async()
    assert jobs(database.conninfo)[0][:2] == (job, "succeeded")


async def test_an_attempt_taken_over_does_not_end_the_job_another_attempt_runs(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Attempt 0's worker was taken for dead, the job put back (attempts 1) and fetched
    again: attempt 0's end, by procrastinate's worker or by `close_unfinished`, is not
    written; attempt 1's is. End to end: tests/test_e2e_stalled.py."""
    from procrastinate.jobs import Job, Status

    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', attempts = 1 WHERE id = %s", (job,)
        )
    service.local_jobs.returned(job, True, at=0.0, attempt=0)  # the old attempt ended
    await service.app.open_async()
    try:
        assert await service.maintenance.close_unfinished() == 0
        assert jobs(database.conninfo)[0][:2] == (job, "doing")
        old = Job(id=job, queue="q", lock=None, queueing_lock=None, task_name="t", attempts=0)
        await service.app.job_manager.finish_job(old, Status.SUCCEEDED, delete_job=False)
        assert jobs(database.conninfo)[0][:2] == (job, "doing")  # not ended under attempt 1
        await service.app.job_manager.finish_job(
            old.evolve(attempts=1), Status.SUCCEEDED, delete_job=False
        )
    finally:
        await service.app.close_async()
    assert jobs(database.conninfo)[0][:2] == (job, "succeeded")


def running_under_a_silent_worker(conninfo: str, job: int) -> None:
    """`job` shown running under a worker whose last heartbeat is an hour old."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat)"
            " VALUES (now() - interval '1 hour') RETURNING id"
        ).fetchone()
        assert row is not None
        conn.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
            (row[0], job),
        )


async def test_a_job_this_process_runs_is_not_taken_for_stalled(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """After a database outage our own worker's heartbeat is stale until it is next
    written: a job a thread of ours runs must not be re-queued under its running
    attempt (the attempt's end would overwrite that `todo`, leaving the branch with no
    job; seen in the supervised-database e2e test). A dead worker's job still is."""
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    running_under_a_silent_worker(database.conninfo, job)
    service.local_jobs.started(job)  # a thread of this process runs it
    await service.app.open_async()
    try:
        assert await service.maintenance.recover_stalled() == 0
        assert jobs(database.conninfo)[0][:2] == (job, "doing")
        service.local_jobs.returned(job, True)  # now nobody runs it: a dead worker's job
        assert await service.maintenance.recover_stalled() == 1
    finally:
        await service.app.close_async()
    assert jobs(database.conninfo)[0][:2] == (job, "todo")


async def test_no_job_is_taken_for_stalled_while_heartbeats_resume(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Right after a database outage every worker's heartbeat is stale, a live other
    worker's too: its running job must not be re-queued under its attempt. Recovery
    holds for one stalled timeout from the database's return; a dead worker's job is
    re-queued once the hold ends."""
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    running_under_a_silent_worker(database.conninfo, job)
    await service.app.open_async()
    try:
        service.maintenance.hold_stalled_recovery(
            3600
        )  # what _watch_stalled does when the database is back
        assert await service.maintenance.recover_stalled() == 0
        assert jobs(database.conninfo)[0][:2] == (job, "doing")
        service.maintenance.hold_stalled_recovery(0)  # the hold is over: that worker really is dead
        assert await service.maintenance.recover_stalled() == 1
    finally:
        await service.app.close_async()
    assert jobs(database.conninfo)[0][:2] == (job, "todo")


def test_a_starting_worker_holds_recovery_on_a_database_just_started() -> None:
    assert stalled_hold_after_start(0.0) == STALLED_S
    assert stalled_hold_after_start(STALLED_S / 4) == STALLED_S * 3 / 4
    assert stalled_hold_after_start(3600.0) == 0.0


async def test_reconciliation_leaves_a_busy_branch_alone(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", (job,))
    await service.app.open_async()
    try:
        assert (
            await service.maintenance.reconcile() == 0
        )  # running: it will queue its own follow-up
        with psycopg.connect(database.conninfo, autocommit=True) as conn:
            conn.execute("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = %s", (job,))
        assert await service.maintenance.reconcile() == 1  # nothing will run: queue one
    finally:
        await service.app.close_async()


async def test_reconciliation_looks_again_while_a_finished_job_still_shows_running(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """After an outage: our thread's job has ended (failed, its follow-up not queued:
    the database was down) but still shows running, its end not yet written. It covers
    nothing any more, so the reconciliation that left the branch to it says to look
    again; once its end is there the branch is queued (seen in test_db_supervisor
    under load: the branch waited RECONCILE_S)."""
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    job = defer_sync(database.conninfo, "livre", "main").job_id
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", (job,))
    await service.app.open_async()
    try:
        assert await service.maintenance.reconcile() == 0
        assert not service.maintenance.reconcile_again  # running here or elsewhere: it covers it
        service.local_jobs.returned(job, False)  # our thread is done with it
        assert await service.maintenance.reconcile() == 0
        assert service.maintenance.reconcile_again  # its end is on its way: look again
        with psycopg.connect(database.conninfo, autocommit=True) as conn:
            conn.execute("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = %s", (job,))
        assert await service.maintenance.reconcile() == 1
        assert not service.maintenance.reconcile_again
    finally:
        await service.app.close_async()


async def test_work_survives_a_lost_race(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """A push lands during the second job: the third job indexes a tip that lacks the
    second's sidecars and summaries, yet no text is embedded twice and no summary is
    asked for twice (the recording fakes count every real call)."""
    real = pipeline_index()
    calls = 0

    def index(source: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        result = real(source, **kwargs)
        if calls == 2:
            branch.edit_and_push()
        return result

    service = service_for(branch, database, fake_embedder, fake_summarizer, index)
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)  # the first index of the corpus
    branch.edit_and_push()
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)  # job 2 loses the race; job 3 takes the rest

    assert_settled(branch, database.conninfo)
    history = runs(database.conninfo)
    assert [r[3]["moved"] for r in history if r[3]] == [False, True, False]
    texts = [t for batch, kind in fake_embedder.history if kind == "document" for t in batch]
    repeated = {t[:60] for t in texts if texts.count(t) > 1}
    assert repeated == set(), f"{len(repeated)} texts embedded twice"
    asked = [(r.path, r.user_message()) for r in fake_summarizer.history]
    assert len(asked) == len(set(asked)), "a summary was asked for twice"


def test_jobs_run_in_their_own_lower_priority_thread() -> None:
    """A job's thread is niced (searches keep the CPU), errors reach the caller."""
    import os
    import threading

    from hooks.jobthread import in_job_thread

    seen: list[tuple[str, int]] = []

    def work() -> None:
        tid = threading.get_native_id()
        seen.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, tid)))

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    in_job_thread("glossator-job-1", 10, work)
    assert seen == [("glossator-job-1", min(before + 10, 19))]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # ours unchanged

    def fail() -> None:
        raise RuntimeError("in the job")

    with pytest.raises(RuntimeError, match="in the job"):
        in_job_thread("glossator-job-2", 10, fail)


def test_job_nice_setting_is_checked() -> None:
    from glossator.settings import Settings, SettingsError

    assert Settings.from_env({}).job_nice == 10
    assert Settings.from_env({"GLOSSATOR_JOB_NICE": "0"}).job_nice == 0
    with pytest.raises(SettingsError, match="0 to 19"):
        Settings.from_env({"GLOSSATOR_JOB_NICE": "25"})


async def test_a_dead_predecessors_job_is_put_back_at_start_a_live_workers_is_not(
    branch: Branch, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """`serve`'s restarted child (`glossator worker --replaces <pid>`) puts the jobs its
    dead predecessor ran back in the queue at its start, though their heartbeat is fresh;
    another worker's running job, with as fresh a heartbeat, stays with it. End to end:
    tests/test_e2e_landing.py."""
    from store.jobs import start_run

    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    service.maintenance.predecessor = "here:111"
    dead = defer_sync(database.conninfo, "livre", "main").job_id
    live = defer_sync(database.conninfo, "livre", "brouillon").job_id
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now()) RETURNING id"
        ).fetchone()
        assert row is not None
        for job, branch_name, worker in (
            (dead, "main", "here:111"),
            (live, "brouillon", "here:222"),
        ):
            conn.execute(
                "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
                (row[0], job),
            )
            start_run(conn, job, 0, "livre", branch_name, worker)
    await service.app.open_async()
    try:
        assert await service.maintenance.recover_stalled() == 0  # not at start: heartbeats
        assert await service.maintenance.recover_stalled(startup=True) == 1
    finally:
        await service.app.close_async()
    statuses = {job: status for job, status, _ in jobs(database.conninfo)}
    assert statuses == {dead: "todo", live: "doing"}
