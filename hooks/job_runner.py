"""The job runner: the queue's worker in one process, composed of the parts below.

    service = JobRunner(conninfo=url, store=repos, indexer=job, retries=5)
    await service.start()      # schema, stalled jobs, reconcile, worker task
    ...
    await service.stop()

It takes plain values (the database's conninfo, retries, niceness, concurrency)
and the job (hooks.job.BranchIndexer), and composes:

- procrastinate's `App` and its one task, `glossator.index_branch` (hooks.queue
  names it and its locks), which runs each attempt in a fresh niced thread
  (hooks.jobthread);
- `Attempts` (hooks.attempt): one attempt recorded, judged, followed up;
- `RunHistory` (hooks.runs): the attempts' rows; `FollowUps` (hooks.retries);
- `QueueMaintenance` (hooks.maintenance): stalled jobs, lost outcomes,
  reconciliation; `LocalJobs`, what this process's threads run and ran;
- `FencedJobManager`: procrastinate's job manager whose end of a job is written
  only while the attempt that ends it still holds the job (hooks.lease).

It runs in `glossator worker` (glossator/worker.py; N of them may share the queue
in one PostgreSQL) or as `glossator serve`'s child; its collaborators and values
come from the composition root, where the settings are read. Each job is
synchronous (git, the indexer, COPY) and runs in a thread of its own, so the
worker's event loop keeps its heartbeat going. The invariant it keeps: a branch
whose tip differs from its indexed commit always has one job that will run, until
its retries are used up or its problems are all the pushed files' own. How (the
branch `lock`, recovery of stalled jobs, reconciliation, lost outcomes):
docs/push-pipeline.md, "N workers" and "The queue cannot wedge".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import procrastinate
import psycopg

from hooks.attempt import Attempts, Indexed
from hooks.job import BranchIndexer
from hooks.jobthread import JOB_NICE, in_job_thread, worker_name
from hooks.lease import TakenOver
from hooks.maintenance import HEARTBEAT_S, STALLED_S, LocalJobs, QueueMaintenance
from hooks.queue import QUEUE, TASK_NAME, ensure_schema
from hooks.repositories import Repositories
from hooks.retries import SLOW_RETRY_S, FollowUps
from hooks.runs import RunHistory, one_line
from store import connections
from store.db import async_pool_options, probe
from store.errors import describe_failure
from store.jobqueue import finish_if_current

log = logging.getLogger(__name__)

# procrastinate's worker started again after it stopped: at once once the database
# answers after an outage (asked every DATABASE_POLL_S, the database supervisor's own
# interval: glossator.supervision.database), else after RESTART_MIN_S doubling to
# RESTART_MAX_S (a worker that keeps dying with the database up must not spin)
DATABASE_POLL_S = 1.0
RESTART_MIN_S = 1.0
RESTART_MAX_S = 60.0


class FencedJobManager(procrastinate.manager.JobManager):
    """procrastinate's JobManager, but the worker's end of a job is written only if the
    job still runs at the attempt that ends (store.jobqueue.finish_if_current).

    procrastinate ends a job by id: an attempt taken for dead (its worker stopped
    longer than STALLED_S) whose job runs again elsewhere would, on waking, end the
    job under the new attempt, which would then run without its branch lock. The
    maintenance's own ends (`finish_job_by_id_async`) are not fenced: they end jobs
    no attempt holds."""

    def __init__(self, connector: procrastinate.BaseConnector, conninfo: str) -> None:
        super().__init__(connector)
        self.conninfo = conninfo

    async def finish_job(
        self, job: procrastinate.jobs.Job, status: procrastinate.jobs.Status, delete_job: bool
    ) -> None:
        assert job.id is not None
        ended = await asyncio.to_thread(
            self._finish_if_current, job.id, job.attempts, status.value, delete_job
        )
        if not ended:
            log.warning(
                "job %s attempt %d: not ended here (%s): another attempt runs it now",
                job.id,
                job.attempts,
                status.value,
            )

    def _finish_if_current(self, job_id: int, attempt: int, status: str, delete: bool) -> bool:
        with connections.connect(self.conninfo, autocommit=True) as conn:
            return finish_if_current(conn, job_id, attempt, status, delete)


class JobRunner:
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
        predecessor: str | None = None,
    ) -> None:
        """`exclusive_database`: no other worker can use this database (the embedded
        one, whose only worker this is), so every job `doing` at start is an orphan.
        `predecessor`: the worker name of a dead process this one replaces
        (hooks.maintenance: its jobs are put back at once).
        `indexed` is told of every branch a job indexed (hooks.attempt.Indexed)."""
        self.conninfo = conninfo
        self.name = name or worker_name()
        self.job_nice = job_nice
        self.concurrency = concurrency
        self.indexed = indexed
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(
                conninfo=conninfo, min_size=1, max_size=4, **async_pool_options()
            )
        )
        # the worker's ends of jobs fenced by attempt (FencedJobManager); set before the
        # task is registered, which keeps the App's job manager
        self.app.job_manager = FencedJobManager(self.app.connector, conninfo)
        self.history = RunHistory(conninfo)
        self.follow_ups = FollowUps(
            conninfo,
            store,
            retries=retries,
            retry_base_s=retry_base_s,
            slow_retry_s=slow_retry_s,
        )
        self.attempts = Attempts(
            indexer, self.history, self.follow_ups, worker=self.name, indexed=indexed
        )
        self.local_jobs = LocalJobs()
        self.maintenance = QueueMaintenance(
            self.app,
            conninfo,
            store,
            self.history,
            self.local_jobs,
            exclusive_database=exclusive_database,
            predecessor=predecessor,
        )
        self._register()
        self._tasks: list[asyncio.Task[None]] = []

    def _register(self) -> None:
        # retry=False: our own follow-up jobs instead (hooks.retries)
        @self.app.task(name=TASK_NAME, queue=QUEUE, pass_context=True, retry=False)
        def index_branch(
            context: procrastinate.JobContext, repository: str, branch: str, failures: int = 0
        ) -> None:
            job = context.job
            job_id, attempt = job.id, job.attempts
            assert job_id is not None  # a job fetched from the database has its id
            ok = False
            self.local_jobs.started(job_id)
            try:
                in_job_thread(
                    f"glossator-job-{job_id}",
                    self.job_nice,
                    lambda: self.attempts.run(job_id, attempt, repository, branch, failures),
                )
                ok = True
            except TakenOver:
                self.local_jobs.taken_over(job_id)  # its end is the other attempt's
                raise
            finally:
                if self.local_jobs.runs(job_id):  # not taken over
                    self.local_jobs.returned(job_id, ok, attempt=attempt)

    async def start(self) -> None:
        await asyncio.to_thread(ensure_schema, self.conninfo)
        await self.app.open_async()
        await self.maintenance.start()
        self._tasks.append(asyncio.create_task(self._run_worker(), name="glossator-worker"))
        self._tasks.append(asyncio.create_task(self.maintenance.watch(), name="glossator-stalled"))

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
        """Procrastinate's worker, started again when it dies: a lost database
        connection (a restart, a full disk, a PANIC) stops it, and nothing else would
        run a job again until `glossator serve` restarts.

        It starts again as soon as the database answers (asked every DATABASE_POLL_S):
        a backoff that grew through the outage made the first jobs after it wait up to a
        minute. The backoff (1, 2, 4 … 60 s) is for a worker that dies while the
        database answers (a bug): it does not spin."""
        delay = RESTART_MIN_S
        while True:
            started = time.monotonic()
            try:
                await self.app.run_worker_async(wait=True, **self._worker_options())
                why = "it stopped"
            except Exception as e:
                why = describe_failure(e) if isinstance(e, psycopg.Error) else one_line(e)
            outage = not await asyncio.to_thread(self._database_answers)
            if outage or time.monotonic() - started > 60:
                delay = RESTART_MIN_S  # not its own fault, or it had run fine
            if outage:
                log.warning("indexing worker stopped (%s); restarting once it answers", why)
                while not await asyncio.to_thread(self._database_answers):
                    await asyncio.sleep(DATABASE_POLL_S)
            else:
                log.warning("indexing worker stopped (%s); restarting in %.0f s", why, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_MAX_S)

    def _database_answers(self) -> bool:
        """Whether the database answers a new connection now (store.db.probe)."""
        return probe(self.conninfo) is None

    async def drain(self) -> None:
        """Run every job that is due, then return (tests, one-shot tools)."""
        await self.app.run_worker_async(wait=False, **self._worker_options())
