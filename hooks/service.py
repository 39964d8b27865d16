"""The indexing service: procrastinate's worker, recovery, reconciliation.

    service = IndexingService(conninfo=url, store=repos, indexer=indexer, retries=5)
    await service.start()      # schema, stalled jobs, reconcile, worker task
    ...
    await service.stop()

It runs in `glossator worker` (glossator/worker.py): N of them, on one machine
or several, share the queue in one PostgreSQL; `glossator serve` starts one as
its child process by default (or runs the service in its own event loop with
`--worker thread`). Each job is synchronous (git, the indexer, COPY) and runs in
a thread of its own, so the worker's event loop keeps its heartbeat going. Its collaborators and
values come from the composition root (glossator/worker.py; the settings are
read there, not here).

N workers. Procrastinate's `lock` (`<repo>/<branch>`, hooks.queue) is checked by
the database when a worker fetches a job: a job whose branch has a job `doing`
is not fetched, whichever worker runs that one, so one branch is never indexed
twice at a time while jobs of different branches run side by side on different
workers. Every worker also runs recovery and reconciliation; both are safe to
run concurrently (below).

Recovery. A job that was running when its process died stays `doing` in
procrastinate_jobs, and its `lock` would block every later job of its branch.
Procrastinate finds such jobs by their worker's stale heartbeat; we look at
start-up (immediately when this is the only worker of an embedded database,
which no other process can share: its data directory is locked) and then
periodically, and put them back in the queue. Two workers may find the same
stalled job: the second's retry fails (the job is no longer `doing`) and it
leaves the job alone. Reconciliation then queues a job for every branch whose
tip is not its indexed commit, and for every indexed branch that no longer
exists, unless a job of that branch already waits or runs; it runs at start and
every five minutes (a push whose hook could not reach the queue is picked up
again); the queueing lock makes two workers' reconciliations queue one job.

The invariant: a branch whose tip differs from its indexed commit always has one
job that will run, until its retries are used up (hooks.queue.gives_up: shown
by `glossator status`, and a push starts again). A job that fails defers its own follow-up before it ends
(hooks.queue.retry_delay), a job that lost the race against a push defers one
too (usually the push's job already waits: `AlreadyEnqueued`), and a job whose
outcome procrastinate could not persist (the database went away at that moment)
would stay `doing` under a live worker and block its branch: we remember the jobs
our thread finished and close any still `doing` a few seconds later.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
import traceback
from typing import Any

import procrastinate
import psycopg
from procrastinate import utils as pc_utils

from hooks import runs
from hooks.jobthread import JOB_NICE, in_job_thread, worker_name
from hooks.progress import JobProgress
from hooks.queue import (
    QUEUE,
    SLOW_RETRY_S,
    TASK_NAME,
    defer_async,
    defer_sync,
    ensure_schema,
    gives_up,
    retry_delay,
)
from hooks.repositories import Repositories
from hooks.worker import BranchIndexer
from store.errors import describe_failure
from store.tips import sync_tips

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
STALLED_S = 20.0  # a worker silent this long is dead; its running jobs are re-queued
RECONCILE_S = 300.0  # also catches a push whose post-receive could not reach the queue
# A job our thread finished but procrastinate still shows `doing` this long after:
# persisting its outcome failed; we close it (a healthy finish takes milliseconds).
UNFINISHED_S = 10.0


def stalled_hold_after_start(uptime_s: float) -> float:
    """How long a starting worker holds stalled recovery on a database up `uptime_s`:
    the rest of one STALLED_S, the time every live worker has to write a heartbeat
    since the database came back (0 for a database up longer)."""
    return max(0.0, STALLED_S - uptime_s)


def retry_line(retry: dict[str, Any]) -> str:
    """The end of a failed attempt's log line: what happens next."""
    if retry.get("gave_up"):
        return "that was the last retry: the branch waits for a push"
    return f"next try: job {retry['next_job']} in {retry['retry_in_s']:.0f} s"


class JobFailed(RuntimeError):
    """Raised to procrastinate for a failed attempt: one line, the follow-up already queued."""


class IndexingService:
    def __init__(
        self,
        *,
        conninfo: str,
        store: Repositories,
        indexer: BranchIndexer,
        retries: int = 5,
        exclusive_database: bool = False,
        concurrency: int = 1,
        retry_base_s: float = 2.0,
        slow_retry_s: float = SLOW_RETRY_S,
        job_nice: int = JOB_NICE,
        name: str | None = None,
    ) -> None:
        """`exclusive_database`: no other worker can use this database (the embedded
        one, whose only worker this is), so every job `doing` at start is an orphan."""
        self.conninfo = conninfo
        self.name = name or worker_name()
        self.store = store
        self.indexer = indexer
        self.retries = retries
        self.retry_base_s = retry_base_s
        self.slow_retry_s = slow_retry_s
        self.job_nice = job_nice
        self.exclusive_database = exclusive_database
        self.concurrency = concurrency
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=conninfo, min_size=1, max_size=4)
        )
        self._register()
        self._tasks: list[asyncio.Task[None]] = []
        # job id -> (monotonic time our thread returned, succeeded?); see UNFINISHED_S
        self._returned: dict[int, tuple[float, bool]] = {}
        self._returned_lock = threading.Lock()
        # jobs a thread of this process runs now: alive whatever their heartbeat says
        # (after an outage our own heartbeat is stale until it is next written)
        self._running: set[int] = set()
        # outcomes the database could not take when the attempt ended (it was down):
        # written once it is back (flush_unrecorded); bounded, jobs need it to start
        self._unrecorded: collections.deque[dict[str, Any]] = collections.deque(maxlen=100)
        self._db_started: object = None  # pg_postmaster_start_time(): a restart changes it
        # After a database outage every worker's heartbeat is stale until each writes it
        # again (within HEARTBEAT_S of the database's return): until this monotonic time
        # no job is taken for stalled, or another live worker's running job would be
        # re-queued under its attempt (hold_stalled_recovery)
        self._hold_stalled_until = 0.0

    def _register(self) -> None:
        # retry=False: our own follow-up jobs instead (hooks.queue docstring)
        @self.app.task(name=TASK_NAME, queue=QUEUE, pass_context=True, retry=False)
        def index_branch(
            context: procrastinate.JobContext, repository: str, branch: str, failures: int = 0
        ) -> None:
            job = context.job
            job_id, attempt = job.id, job.attempts
            assert job_id is not None  # a job fetched from the database has its id
            ok = False
            with self._returned_lock:
                self._running.add(job_id)
            try:
                in_job_thread(
                    f"glossator-job-{job_id}",
                    self.job_nice,
                    lambda: self._run_job(job_id, attempt, repository, branch, failures),
                )
                ok = True
            finally:
                with self._returned_lock:
                    self._running.discard(job_id)
                    self._returned[job_id] = (time.monotonic(), ok)

    def _run_job(
        self, job_id: int, attempt: int, repository: str, branch: str, failures: int
    ) -> None:
        runs.record_start(self.conninfo, job_id, attempt, repository, branch, self.name)
        progress = JobProgress(
            lambda snap: runs.record_progress(self.conninfo, job_id, attempt, snap),
            log=lambda line: log.info("job %s (%s/%s): %s", job_id, repository, branch, line),
        )
        try:
            outcome = self.indexer.run(repository, branch, job_id=job_id, progress=progress)
        except BaseException as e:
            # the database's failures in one line of ours (the driver's may quote the URL)
            error = describe_failure(e) if isinstance(e, psycopg.Error) else runs.one_line(e)
            retry = self._retry(repository, branch, failures + 1, self._tip(repository, branch))
            self._record_end(
                job_id,
                attempt,
                "failed",
                error=error,
                tip=None,
                stats={"failures": failures + 1, **retry},
            )
            log.warning(
                "job %s (%s/%s) failed: %s; %s",
                job_id,
                repository,
                branch,
                error,
                retry_line(retry),
            )
            log.debug("job %s traceback:\n%s", job_id, traceback.format_exc())
            raise JobFailed(error) from None
        stats = outcome.stats()
        status = "problems" if outcome.problems else "done"
        if outcome.moved:
            # The branch moved on: the push's job normally waits already; make sure.
            stats["next_job"] = self._follow_up(repository, branch, 0, 0.0)
        elif outcome.problems:
            # Not fully indexed: try again later (an LLM back, a file fixed by a push).
            retry = self._retry(repository, branch, failures + 1, outcome.tip)
            stats.update(failures=failures + 1, **retry)
            log.warning(
                "job %s (%s/%s) done with %d problem(s), first: %s; %s",
                job_id,
                repository,
                branch,
                len(outcome.problems),
                outcome.problems[0],
                retry_line(retry),
            )
        self._record_end(
            job_id,
            attempt,
            status,
            error=None,
            tip=outcome.tip,
            result_commit=outcome.indexed,
            stats=stats,
        )

    def _record_end(self, job_id: int, attempt: int, status: str, **fields: Any) -> None:
        """runs.record_end, or kept for flush_unrecorded when the database is down."""
        try:
            runs.record_end(self.conninfo, job_id, attempt, status, **fields)
        except psycopg.Error:
            self._unrecorded.append(
                {"job_id": job_id, "attempt": attempt, "status": status, **fields}
            )
            log.warning("job %s ended %s; recorded once the database is back", job_id, status)

    def flush_unrecorded(self) -> int:
        """Write the outcomes kept while the database was down; how many were written."""
        written = 0
        while self._unrecorded:
            item = self._unrecorded[0]
            fields = {k: v for k, v in item.items() if k not in ("job_id", "attempt", "status")}
            runs.record_end(
                self.conninfo, item["job_id"], item["attempt"], item["status"], **fields
            )
            self._unrecorded.popleft()
            written += 1
        return written

    def _retry(
        self, repository: str, branch: str, failures: int, tip: str | None
    ) -> dict[str, Any]:
        """The follow-up of an attempt that failed or met problems, as stats: the next
        job and its delay, or `gave_up` (hooks.queue.gives_up) at `tip`."""
        if gives_up(failures, self.retries):
            return {"next_job": None, "gave_up": True, "gave_up_at": tip}
        delay = retry_delay(failures, self.retries, self.retry_base_s, self.slow_retry_s)
        return {
            "next_job": self._follow_up(repository, branch, failures, delay),
            "retry_in_s": delay,
        }

    def _tip(self, repository: str, branch: str) -> str | None:
        try:
            ref = self.store.open(repository).references.get(f"refs/heads/{branch}")
            return str(ref.resolve().target) if ref is not None else None
        except Exception:  # the repository is gone or unreadable: no tip to remember
            return None

    def _follow_up(self, repository: str, branch: str, failures: int, delay: float) -> int | None:
        """The job that will take over this branch (a new one, or the one that waits)."""
        try:
            return defer_sync(
                self.conninfo, repository, branch, failures=failures, delay_s=delay
            ).job_id
        except Exception as e:  # the database is gone: reconciliation will queue it
            log.warning("could not queue the follow-up of %s/%s: %s", repository, branch, e)
            return None

    async def start(self) -> None:
        await asyncio.to_thread(ensure_schema, self.conninfo)
        await self.app.open_async()
        if not self.exclusive_database:  # other workers: were they just cut off too?
            uptime = await asyncio.to_thread(self._database_uptime)
            self.hold_stalled_recovery(stalled_hold_after_start(uptime))
        await self.recover_stalled(startup=True)
        await self.reconcile()
        self._tasks.append(asyncio.create_task(self._run_worker(), name="glossator-worker"))
        self._tasks.append(asyncio.create_task(self._watch_stalled(), name="glossator-stalled"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.app.close_async()

    def _worker_options(self) -> dict[str, Any]:
        return {
            "queues": [QUEUE],
            "concurrency": self.concurrency,
            "install_signal_handlers": False,
            "update_heartbeat_interval": HEARTBEAT_S,
            "stalled_worker_timeout": STALLED_S,
            "fetch_job_polling_interval": 2.0,
            "shutdown_graceful_timeout": 10.0,
            "name": f"glossator {self.name}",
        }

    async def _run_worker(self) -> None:
        """Procrastinate's worker, restarted with backoff when it dies: a lost database
        connection (a restart, a full disk, a PANIC) stops it, and nothing else would
        run a job again until `glossator serve` restarts."""
        delay = 1.0
        while True:
            started = time.monotonic()
            try:
                await self.app.run_worker_async(wait=True, **self._worker_options())
                why = "it stopped"
            except Exception as e:
                why = describe_failure(e) if isinstance(e, psycopg.Error) else runs.one_line(e)
            if time.monotonic() - started > 60:
                delay = 1.0  # it had been running fine: start again quickly
            log.warning("indexing worker stopped (%s); restarting in %.0f s", why, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 60.0)

    async def drain(self) -> None:
        """Run every job that is due, then return (tests, one-shot tools)."""
        await self.app.run_worker_async(wait=False, **self._worker_options())

    async def _watch_stalled(self) -> None:
        loop = asyncio.get_running_loop()
        last_reconcile = loop.time()
        failing = False
        while True:
            await asyncio.sleep(STALLED_S / 2)
            try:
                restarted = await asyncio.to_thread(self._database_restarted)
                if failing or restarted:  # the database is back: let heartbeats resume
                    self.hold_stalled_recovery(STALLED_S)
                await asyncio.to_thread(self.flush_unrecorded)
                await self.recover_stalled()
                await self.close_unfinished()
                # after an outage at once: a push then could not queue its job
                if failing or restarted or loop.time() - last_reconcile >= RECONCILE_S:
                    last_reconcile = loop.time()
                    await self.reconcile()
                if failing:
                    log.info("queue maintenance works again")
                failing = False
            except Exception as e:  # the database may be restarting: try again later
                if not failing:  # once per outage, not every round
                    log.warning("queue maintenance failed: %s; retrying", type(e).__name__)
                failing = True

    def hold_stalled_recovery(self, seconds: float) -> None:
        """Take no job for stalled for `seconds` from now (0: lift the hold).

        Called when the database comes back from an outage (or was started less than
        STALLED_S ago when this worker starts): every worker's heartbeat is stale then,
        the live ones' for at most HEARTBEAT_S more. A worker that really died during
        the outage has its job re-queued once the hold ends.
        """
        self._hold_stalled_until = time.monotonic() + max(0.0, seconds)

    def _database_uptime(self) -> float:
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT extract(epoch FROM now() - pg_postmaster_start_time())::float8"
            ).fetchone()
        return float(row[0]) if row else float("inf")

    def _database_restarted(self) -> bool:
        """Whether the server restarted since the last look (an outage shorter than a
        round of _watch_stalled leaves no failure to see, but pushes may have missed it)."""
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
        started = row[0] if row else None
        before, self._db_started = self._db_started, started
        return before is not None and started != before

    async def close_unfinished(self, *, older_than: float = UNFINISHED_S) -> int:
        """Close jobs our thread finished whose outcome never reached the database."""
        now = time.monotonic()
        with self._returned_lock:
            due = {k: v for k, v in self._returned.items() if now - v[0] >= older_than}
        if not due:
            return 0
        statuses = await asyncio.to_thread(runs.job_statuses, self.conninfo, list(due))
        closed = 0
        for job_id, (_, ok) in due.items():
            if statuses.get(job_id) == "doing":
                status = (
                    procrastinate.jobs.Status.SUCCEEDED if ok else procrastinate.jobs.Status.FAILED
                )
                await self.app.job_manager.finish_job_by_id_async(
                    job_id, status=status, delete_job=False
                )
                closed += 1
                log.warning("job %s had ended but was still shown running: closed", job_id)
            with self._returned_lock:
                self._returned.pop(job_id, None)
        return closed

    async def recover_stalled(self, *, startup: bool = False) -> int:
        """Put jobs of dead workers back in the queue; the number recovered."""
        manager = self.app.job_manager
        exclusive_start = startup and self.exclusive_database
        if not exclusive_start and time.monotonic() < self._hold_stalled_until:
            log.debug("stalled jobs: held after an outage while heartbeats resume")
            return 0
        if exclusive_start:
            # Nothing else can use this database: every running job is an orphan.
            jobs = await manager.get_stalled_jobs(seconds_since_heartbeat=0)
        else:
            jobs = await manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_S)
        recovered = 0
        for job in jobs:
            if job.task_name != TASK_NAME or job.id is None:
                continue
            with self._returned_lock:
                ours = job.id in self._running
            if ours:
                # Running here: our heartbeat went stale while the database was down.
                # Re-queueing it would set it back to `todo` under its running attempt,
                # which the attempt's end then overwrites: the branch left with no job.
                continue
            await asyncio.to_thread(self._close_interrupted_run, job.id, job.attempts)
            try:
                await manager.retry_job_by_id_async(job.id, retry_at=pc_utils.utcnow())
                recovered += 1
                log.warning("job %s was running in a process that died: queued again", job.id)
            except Exception:
                statuses = await asyncio.to_thread(runs.job_statuses, self.conninfo, [job.id])
                if statuses.get(job.id) != "doing":
                    continue  # another worker recovered it first
                # Another job of the branch already waits (queueing lock): that one will
                # index the branch; close this one as failed.
                await manager.finish_job_by_id_async(
                    job.id, status=procrastinate.jobs.Status.FAILED, delete_job=False
                )
                log.warning("job %s was running in a process that died: superseded", job.id)
        return recovered

    def _close_interrupted_run(self, job_id: int, attempt: int) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            runs.record_interrupted(
                conn,
                job_id,
                "interrupted: the process running it stopped (crash or kill)",
                attempt,
            )

    def _sync_tips(self) -> list[tuple[str, str, str]]:
        """Every branch's tip from git, recorded for search's freshness (store.tips)."""
        read: list[tuple[str, str, str]] = []

        def refs() -> list[tuple[str, str, str]]:
            read.extend(self.store.iter_branches())
            return read

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            sync_tips(conn, refs)
        return read

    async def reconcile(self) -> int:
        """Queue a job for each idle branch whose tip differs from its indexed commit, or
        whose last index left problems (not fully indexed)."""
        indexed = await asyncio.to_thread(runs.indexed_commits, self.conninfo)
        incomplete = await asyncio.to_thread(runs.incomplete_branches, self.conninfo)
        busy = await asyncio.to_thread(runs.busy_locks, self.conninfo, TASK_NAME)
        tips = await asyncio.to_thread(self._sync_tips)
        abandoned = await asyncio.to_thread(runs.given_up, self.conninfo)
        todo: list[tuple[str, str]] = []
        seen = set()
        for repository, branch, tip in tips:
            seen.add((repository, branch))
            if abandoned.get((repository, branch), "") == tip:
                continue  # it gave up at this tip: a push starts again
            if indexed.get((repository, branch)) != tip or (repository, branch) in incomplete:
                todo.append((repository, branch))
        todo += [k for k in indexed if k not in seen and self.store.exists(k[0])]
        queued = 0
        for repository, branch in todo:
            if f"{repository}/{branch}" in busy:
                continue  # its waiting or running job covers it
            queued += await defer_async(self.app, repository, branch) is not None
        if queued:
            log.info("reconciliation queued %d branch(es) to index", queued)
        return queued
