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
procrastinate's jobs table, and its `lock` would block every later job of its branch.
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
by `glossator status`, and a push starts again) or its problems are all the
pushed files' own (`Outcome.user_problems`: not retried until a push). A job that fails defers its own follow-up before it ends
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
from typing import Any, Protocol

import procrastinate
import psycopg

from hooks import runs
from hooks.jobthread import JOB_NICE, in_job_thread, worker_name
from hooks.maintenance import (
    HEARTBEAT_S,
    STALLED_S,
    QueueMaintenance,
    stalled_hold_after_start,
)
from hooks.progress import JobProgress
from hooks.queue import (
    QUEUE,
    SLOW_RETRY_S,
    TASK_NAME,
    defer_sync,
    ensure_schema,
    gives_up,
    retry_delay,
)
from hooks.repositories import Repositories
from hooks.worker import BranchIndexer
from store.errors import describe_failure

log = logging.getLogger(__name__)


def retry_line(retry: dict[str, Any]) -> str:
    """The end of a failed attempt's log line: what happens next."""
    if retry.get("gave_up"):
        return "that was the last retry: the branch waits for a push"
    return f"next try: job {retry['next_job']} in {retry['retry_in_s']:.0f} s"


class JobFailed(RuntimeError):
    """Raised to procrastinate for a failed attempt: one line, the follow-up already queued."""


class Indexed(Protocol):
    """Told of each branch a job indexed, once its rows are loaded and the job recorded
    (search.warming.GateWarmer: warms the relevance gate so that no request pays it).
    `notify` must return at once; `close` is called when the service stops."""

    def notify(self, repository: str, branch: str) -> None: ...

    def close(self, timeout: float = 10.0) -> None: ...


class IndexingService(QueueMaintenance):
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
        indexed: Indexed | None = None,
    ) -> None:
        """`exclusive_database`: no other worker can use this database (the embedded
        one, whose only worker this is), so every job `doing` at start is an orphan.
        `indexed` is told of every branch a job indexed (see `Indexed`)."""
        self.indexed = indexed
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
        elif outcome.problems and outcome.user_problems:
            # Only the pushed files are at fault: the same tip would fail the same way.
            # No follow-up; reconciliation leaves the branch alone at this tip (runs.given_up)
            # and a push starts again. `glossator status` says what to fix.
            # The tip it stops at is the commit-back's when there was one (not moved: the
            # branch is where this job left it).
            at = outcome.indexed or outcome.tip
            stats.update(failures=failures + 1, next_job=None, awaits_push_at=at)
            log.warning(
                "job %s (%s/%s) done with %d problem(s) in the pushed files, first: %s; "
                "not retried until a push",
                job_id,
                repository,
                branch,
                len(outcome.problems),
                outcome.problems[0],
            )
        elif outcome.problems:
            # Not fully indexed: try again later (an LLM back, a service up again).
            # gives up at the branch's tip as this job leaves it (its commit-back, if any)
            retry = self._retry(repository, branch, failures + 1, outcome.indexed or outcome.tip)
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
        if self.indexed is not None and outcome.indexed is not None and not outcome.moved:
            self.indexed.notify(repository, branch)

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
        if self.indexed is not None:
            # a warming under way gives up at its next search (search.warming)
            await asyncio.to_thread(self.indexed.close)
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
