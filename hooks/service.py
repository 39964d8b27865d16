"""The indexing service inside `glossator serve`: procrastinate's worker, recovery, reconciliation.

    service = IndexingService(settings, db, store, indexer)
    await service.start()      # schema, stalled jobs, reconcile, worker task
    ...
    await service.stop()

The worker runs as an asyncio task in the server's event loop; the job itself
is synchronous (git, the indexer, COPY) and procrastinate runs it in a thread,
so pushes and searches are served while a job runs.

Recovery. A job that was running when the process died stays `doing` in
procrastinate_jobs, and its `lock` would block every later job of its branch.
Procrastinate finds such jobs by their worker's stale heartbeat; we look at
start-up (immediately for an embedded database, which no other process can
share: its data directory is locked) and then periodically, and put them back
in the queue. Reconciliation then queues a job for every branch whose tip is not
its indexed commit, and for every indexed branch that no longer exists; it runs
at start and every five minutes (a push whose hook could not reach the queue, a
job that exhausted its retries, are picked up again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import traceback
from typing import Any

import procrastinate
import psycopg
from procrastinate import utils as pc_utils

from gitserver.repos import RepoStore
from hooks.queue import QUEUE, TASK_NAME, defer_async, ensure_schema, retry_strategy
from hooks.worker import BranchIndexer

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
STALLED_S = 20.0  # a worker silent this long is dead; its running jobs are re-queued
RECONCILE_S = 300.0  # also catches a push whose post-receive could not reach the queue


class IndexingService:
    def __init__(
        self,
        *,
        conninfo: str,
        store: RepoStore,
        indexer: BranchIndexer,
        retries: int = 5,
        exclusive_database: bool = False,
        concurrency: int = 1,
    ) -> None:
        self.conninfo = conninfo
        self.store = store
        self.indexer = indexer
        self.exclusive_database = exclusive_database
        self.concurrency = concurrency
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=conninfo, min_size=1, max_size=4)
        )
        self._register(retries)
        self._tasks: list[asyncio.Task[None]] = []

    def _register(self, retries: int) -> None:
        indexer = self.indexer
        conninfo = self.conninfo

        @self.app.task(
            name=TASK_NAME, queue=QUEUE, pass_context=True, retry=retry_strategy(retries)
        )
        def index_branch(context: procrastinate.JobContext, repository: str, branch: str) -> None:
            job = context.job
            assert job.id is not None  # a job fetched from the database has its id
            attempt = job.attempts
            _record_start(conninfo, job.id, attempt, repository, branch)
            try:
                outcome = indexer.run(repository, branch, job_id=job.id)
            except BaseException as e:
                _record_end(
                    conninfo, job.id, attempt, "failed", error=_one_line(e), tip=None, stats=None
                )
                log.warning("job %s (%s/%s) failed: %s", job.id, repository, branch, _one_line(e))
                log.debug("job %s traceback:\n%s", job.id, traceback.format_exc())
                raise
            _record_end(
                conninfo,
                job.id,
                attempt,
                "done",
                error=None,
                tip=outcome.tip,
                result_commit=outcome.indexed,
                stats=outcome.stats(),
            )

    async def start(self) -> None:
        await asyncio.to_thread(ensure_schema, self.conninfo)
        await self.app.open_async()
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

    async def _run_worker(self) -> None:
        await self.app.run_worker_async(
            queues=[QUEUE],
            concurrency=self.concurrency,
            wait=True,
            install_signal_handlers=False,
            update_heartbeat_interval=HEARTBEAT_S,
            stalled_worker_timeout=STALLED_S,
            fetch_job_polling_interval=2.0,
            shutdown_graceful_timeout=10.0,
            name="glossator",
        )

    async def _watch_stalled(self) -> None:
        loop = asyncio.get_running_loop()
        last_reconcile = loop.time()
        while True:
            await asyncio.sleep(STALLED_S / 2)
            try:
                await self.recover_stalled()
                if loop.time() - last_reconcile >= RECONCILE_S:
                    last_reconcile = loop.time()
                    await self.reconcile()
            except Exception as e:  # the database may be restarting: try again later
                log.warning("queue maintenance failed: %s", type(e).__name__)

    async def recover_stalled(self, *, startup: bool = False) -> int:
        """Put jobs of dead workers back in the queue; the number recovered."""
        manager = self.app.job_manager
        if startup and self.exclusive_database:
            # Nothing else can use this database: every running job is an orphan.
            jobs = await manager.get_stalled_jobs(seconds_since_heartbeat=0)
        else:
            jobs = await manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_S)
        recovered = 0
        for job in jobs:
            if job.task_name != TASK_NAME or job.id is None:
                continue
            try:
                await manager.retry_job_by_id_async(job.id, retry_at=pc_utils.utcnow())
                recovered += 1
                log.warning("job %s was running in a process that died: queued again", job.id)
            except Exception:
                # Another job of the branch already waits (queueing lock): that one will
                # index the branch; close this one as failed.
                await manager.finish_job_by_id_async(
                    job.id, status=procrastinate.jobs.Status.FAILED, delete_job=False
                )
                log.warning("job %s was running in a process that died: superseded", job.id)
        return recovered

    async def reconcile(self) -> int:
        """Queue a job for each branch whose tip differs from its indexed commit."""
        indexed = await asyncio.to_thread(_indexed_commits, self.conninfo)
        tips = await asyncio.to_thread(lambda: list(self.store.iter_branches()))
        queued = 0
        seen = set()
        for repository, branch, tip in tips:
            seen.add((repository, branch))
            if indexed.get((repository, branch)) != tip:
                queued += await defer_async(self.app, repository, branch) is not None
        for key in indexed:
            if key not in seen and self.store.exists(key[0]):
                queued += await defer_async(self.app, *key) is not None
        if queued:
            log.info("reconciliation queued %d branch(es) to index", queued)
        return queued


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:500]


def _indexed_commits(conninfo: str) -> dict[tuple[str, str], str]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT repository, branch, commit FROM indexed_commits").fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def _record_start(conninfo: str, job_id: int, attempt: int, repository: str, branch: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO glossator_job_runs (job_id, attempt, repository, branch, status)
               VALUES (%s, %s, %s, %s, 'running')
               ON CONFLICT (job_id, attempt) DO UPDATE
               SET status = 'running', started_at = now(), finished_at = NULL, error = NULL""",
            (job_id, attempt, repository, branch),
        )


def _record_end(
    conninfo: str,
    job_id: int,
    attempt: int,
    status: str,
    *,
    error: str | None,
    tip: str | None,
    stats: dict[str, Any] | None,
    result_commit: str | None = None,
) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            """UPDATE glossator_job_runs
               SET status = %s, error = %s, tip = %s, result_commit = %s, stats = %s,
                   finished_at = now()
               WHERE job_id = %s AND attempt = %s""",
            (
                status,
                error,
                tip,
                result_commit,
                json.dumps(stats) if stats is not None else None,
                job_id,
                attempt,
            ),
        )
