"""Queue maintenance: stalled jobs, lost outcomes, reconciliation.

    maintenance = QueueMaintenance(app, conninfo, store, history, local_jobs)
    await maintenance.recover_stalled(startup=True)
    await maintenance.reconcile()
    await maintenance.watch()          # every STALLED_S / 2, until cancelled

hooks.job_runner.JobRunner runs one (see that module's doc for the
invariant they keep): put back in the queue the jobs of workers that died, close
jobs whose outcome never reached the database, hold recovery while heartbeats
resume after an outage, write the attempts' ends the database could not take
(hooks.runs), and queue a job for every branch whose tip is not its indexed commit.
A worker that replaces a process known dead (`serve`'s child, restarted after it died:
`predecessor`) puts that process's jobs back at its start instead of after their
heartbeat went STALLED_S stale. `LocalJobs` is what this process knows that the
database does not: the jobs its threads run now, and those they finished.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import procrastinate
from procrastinate import utils as pc_utils

from hooks import runs
from hooks.queue import TASK_NAME, defer_async
from hooks.repositories import Repositories
from hooks.runs import RunHistory
from store import connections
from store.jobqueue import finish_if_current
from store.server import server_clock
from store.tips import record_heads, sync_tips

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
# A worker silent this long is taken for dead and its running jobs are put back in the
# queue. Four heartbeats missed: a worker's heartbeat is its event loop's, apart from
# the job's thread, so a busy job does not delay it; at load 20-30 on two cores it was
# seen late by a few seconds, and `serve` stops its worker during searches for at most
# a second a stretch (glossator.supervision.search_first). Longer would leave a really
# dead worker's branch unindexed longer (recovery takes STALLED_S and up to half a
# round more). A live worker can still cross it (a suspended laptop, SIGSTOP, a host
# far past load 30); that costs work done twice, never a wrong write: its attempt holds
# a lease on the job checked under the branch's writer lock before each write, and
# stops without writing once the job runs again elsewhere (hooks.lease; tested by
# tests/test_e2e_stalled.py).
STALLED_S = 20.0
RECONCILE_S = 300.0  # also catches a push whose post-receive could not reach the queue
# A job our thread finished but procrastinate still shows `doing` this long after:
# persisting its outcome failed; we close it (a healthy finish takes milliseconds).
UNFINISHED_S = 10.0
# A maintenance round that failed (the database down) is tried again this soon: one
# refused connection while it is down, and the round after an outage (the attempts'
# ends written, a job for what was pushed meanwhile) within a second of its return,
# not STALLED_S / 2 later. The database supervisor's interval (glossator.supervision).
OUTAGE_RETRY_S = 1.0


def stalled_hold_after_start(uptime_s: float) -> float:
    """How long a starting worker holds stalled recovery on a database up `uptime_s`:
    the rest of one STALLED_S, the time every live worker has to write a heartbeat
    since the database came back (0 for a database up longer)."""
    return max(0.0, STALLED_S - uptime_s)


class LocalJobs:
    """The jobs this process's threads run now, and those they finished (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # jobs a thread of this process runs now: alive whatever their heartbeat says
        # (after an outage our own heartbeat is stale until it is next written)
        self._running: set[int] = set()
        # job id -> (monotonic time our thread returned, succeeded?, its attempt or None
        # when unknown); see UNFINISHED_S
        self._returned: dict[int, tuple[float, bool, int | None]] = {}

    def started(self, job_id: int) -> None:
        with self._lock:
            self._running.add(job_id)

    def returned(
        self, job_id: int, ok: bool, at: float | None = None, attempt: int | None = None
    ) -> None:
        """Our thread is done with attempt `attempt` of `job_id` (at `at`, monotonic; now by
        default)."""
        with self._lock:
            self._running.discard(job_id)
            self._returned[job_id] = (time.monotonic() if at is None else at, ok, attempt)

    def taken_over(self, job_id: int) -> None:
        """Our thread stopped `job_id` because another attempt runs it (hooks.lease): its
        end is that attempt's, never ours to close."""
        with self._lock:
            self._running.discard(job_id)

    def runs(self, job_id: int) -> bool:
        with self._lock:
            return job_id in self._running

    def has_returned(self, job_id: int) -> bool:
        """Whether our thread finished `job_id` (and `close_unfinished` has not yet
        looked at it since)."""
        with self._lock:
            return job_id in self._returned

    def returned_before(self, older_than: float) -> dict[int, tuple[bool, int | None]]:
        """Jobs our thread finished at least `older_than` seconds ago: whether they
        succeeded, and the attempt."""
        now = time.monotonic()
        with self._lock:
            return {
                k: (ok, attempt)
                for k, (at, ok, attempt) in self._returned.items()
                if now - at >= older_than
            }

    def forget(self, job_id: int) -> None:
        with self._lock:
            self._returned.pop(job_id, None)


class QueueMaintenance:
    """The maintenance of `app`'s queue that every worker runs (the module's docstring)."""

    def __init__(
        self,
        app: procrastinate.App,
        conninfo: str,
        store: Repositories,
        history: RunHistory,
        local_jobs: LocalJobs,
        *,
        exclusive_database: bool = False,
        predecessor: str | None = None,
    ) -> None:
        """`exclusive_database`: no other worker can use this database (the embedded
        one, whose only worker this is), so every job `doing` at start is an orphan.
        `predecessor`: the worker name of a process known dead that this one replaces;
        the jobs it was running are orphans too."""
        self.app = app
        self.conninfo = conninfo
        self.store = store
        self.history = history
        self.local_jobs = local_jobs
        self.exclusive_database = exclusive_database
        self.predecessor = predecessor
        self._db_started: object = None  # pg_postmaster_start_time(): a restart changes it
        # After a database outage every worker's heartbeat is stale until each writes it
        # again (within HEARTBEAT_S of the database's return): until this monotonic time
        # no job is taken for stalled, or another live worker's running job would be
        # re-queued under its attempt (hold_stalled_recovery)
        self._hold_stalled_until = 0.0
        # the last reconciliation left a branch alone for a job our thread had already
        # finished, whose end the database did not show yet: look again (`reconcile`)
        self.reconcile_again = False

    async def start(self) -> None:
        """At a worker's start: stalled jobs back in the queue, then reconciliation."""
        if not self.exclusive_database:  # other workers: were they just cut off too?
            uptime = await asyncio.to_thread(self._database_uptime)
            self.hold_stalled_recovery(stalled_hold_after_start(uptime))
        await self.recover_stalled(startup=True)
        await self.reconcile()

    async def watch(self) -> None:
        """Every STALLED_S / 2 until cancelled; a failing round is retried every
        OUTAGE_RETRY_S, so that the round after an outage comes as soon as the database
        answers again (what a push made during it waits for)."""
        loop = asyncio.get_running_loop()
        last_reconcile = loop.time()
        failing = False
        while True:
            soon = failing or self.reconcile_again
            await asyncio.sleep(OUTAGE_RETRY_S if soon else STALLED_S / 2)
            try:
                restarted = await asyncio.to_thread(self._database_restarted)
                if failing or restarted:  # the database is back: let heartbeats resume
                    self.hold_stalled_recovery(STALLED_S)
                await asyncio.to_thread(self.history.flush)
                await self.recover_stalled()
                await self.close_unfinished()
                # after an outage at once: a push then could not queue its job (nor a
                # job that failed then its follow-up); again while the last one left
                # a branch to a job that had ended (`reconcile`)
                due = loop.time() - last_reconcile >= RECONCILE_S
                if failing or restarted or self.reconcile_again or due:
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

    def _database_clock(self) -> tuple[object, float]:
        """pg_postmaster_start_time() and the seconds since (a restart changes the first)."""
        with connections.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            return server_clock(conn)

    def _database_uptime(self) -> float:
        return self._database_clock()[1]

    def _database_restarted(self) -> bool:
        """Whether the server restarted since the last look (an outage shorter than a
        round of `watch` leaves no failure to see, but pushes may have missed it)."""
        started = self._database_clock()[0]
        before, self._db_started = self._db_started, started
        return before is not None and started != before

    async def close_unfinished(self, *, older_than: float = UNFINISHED_S) -> int:
        """Close jobs our thread finished whose outcome never reached the database."""
        due = self.local_jobs.returned_before(older_than)
        if not due:
            return 0
        statuses = await self._job_statuses(list(due))
        closed = 0
        for job_id, (ok, attempt) in due.items():
            if statuses.get(job_id) == "doing":
                status = (
                    procrastinate.jobs.Status.SUCCEEDED if ok else procrastinate.jobs.Status.FAILED
                )
                if attempt is None:
                    await self.app.job_manager.finish_job_by_id_async(
                        job_id, status=status, delete_job=False
                    )
                elif not await asyncio.to_thread(self._finish_if_current, job_id, attempt, status):
                    # another attempt runs it now (ours was taken for stalled): its end
                    self.local_jobs.forget(job_id)
                    continue
                closed += 1
                log.warning("job %s had ended but was still shown running: closed", job_id)
            self.local_jobs.forget(job_id)
        return closed

    def _finish_if_current(
        self, job_id: int, attempt: int, status: procrastinate.jobs.Status
    ) -> bool:
        with connections.connect(self.conninfo, autocommit=True) as conn:
            return finish_if_current(conn, job_id, attempt, status.value)

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
            jobs = list(await manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_S))
            if startup and self.predecessor is not None:
                # the dead process's attempts, whatever its last heartbeat's age
                dead = await asyncio.to_thread(self.history.running_of, self.predecessor)
                seen = {job.id for job in jobs}
                jobs += [
                    job
                    for job in await manager.get_stalled_jobs(seconds_since_heartbeat=0)
                    if job.id not in seen and (job.id, job.attempts) in dead
                ]
        recovered = 0
        for job in jobs:
            if job.task_name != TASK_NAME or job.id is None:
                continue
            if self.local_jobs.runs(job.id):
                # Running here: our heartbeat went stale while the database was down.
                # Re-queueing it would set it back to `todo` under its running attempt,
                # which the attempt's end then overwrites: the branch left with no job.
                continue
            await asyncio.to_thread(self.history.interrupted, job.id, job.attempts)
            try:
                await manager.retry_job_by_id_async(job.id, retry_at=pc_utils.utcnow())
                recovered += 1
                log.warning("job %s was running in a process that died: queued again", job.id)
            except Exception:
                statuses = await self._job_statuses([job.id])
                if statuses.get(job.id) != "doing":
                    continue  # another worker recovered it first
                # Another job of the branch already waits (queueing lock): that one will
                # index the branch; close this one as failed.
                await manager.finish_job_by_id_async(
                    job.id, status=procrastinate.jobs.Status.FAILED, delete_job=False
                )
                log.warning("job %s was running in a process that died: superseded", job.id)
        return recovered

    async def _job_statuses(self, job_ids: list[int]) -> dict[int, str]:
        """procrastinate's status of each job still there (its public `list_jobs`)."""
        out: dict[int, str] = {}
        for job_id in job_ids:
            for job in await self.app.job_manager.list_jobs_async(id=job_id):
                if job.id is not None and job.status is not None:
                    out[job.id] = str(getattr(job.status, "value", job.status))
        return out

    async def _busy_locks(self) -> dict[str, set[int]]:
        """`<repo>/<branch>` of every branch with an indexing job waiting or running,
        and those jobs' ids."""
        busy: dict[str, set[int]] = {}
        for status in ("todo", "doing"):
            jobs = await self.app.job_manager.list_jobs_async(task=TASK_NAME, status=status)
            for job in jobs:
                if job.lock and job.id is not None:
                    busy.setdefault(job.lock, set()).add(job.id)
        return busy

    def _sync_tips(self) -> list[tuple[str, str, str]]:
        """Every branch's tip from git, recorded for search's freshness (store.tips)."""
        read: list[tuple[str, str, str]] = []

        def refs() -> list[tuple[str, str, str]]:
            read.extend(self.store.iter_branches())
            return read

        with connections.connect(self.conninfo, autocommit=True) as conn:
            sync_tips(conn, refs)
            # each repository's default branch, for searches that name none (store.tips)
            record_heads(conn, {r: self.store.head(r) for r in sorted({r for r, _, _ in read})})
        return read

    async def reconcile(self) -> int:
        """Queue a job for each idle branch whose tip differs from its indexed commit, or
        whose last index left problems (not fully indexed).

        A branch is left alone while a job of it waits or runs: that job covers it. But
        a job our thread has finished may still show running, its end not yet in the
        database (it was down when the job ended: procrastinate writes it once it is
        back, or `close_unfinished` does); it covers nothing any more: a push during
        the outage could not queue its job, nor a job that failed then its follow-up.
        Then `reconcile_again` is set, and `watch` looks again within OUTAGE_RETRY_S
        until that job's end is there. After an outage this was a race: the ending job
        was written just after the reconciliation read it running, and the branch
        waited RECONCILE_S (5 minutes) for the next one."""
        indexed = await asyncio.to_thread(runs.indexed_commits, self.conninfo)
        incomplete = await asyncio.to_thread(runs.incomplete_branches, self.conninfo)
        busy = await self._busy_locks()
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
        again = False
        for repository, branch in todo:
            jobs = busy.get(f"{repository}/{branch}")
            if jobs:  # its waiting or running job covers it, unless it has ended here
                again |= all(self.local_jobs.has_returned(job_id) for job_id in jobs)
                continue
            queued += await defer_async(self.app, repository, branch) is not None
        self.reconcile_again = again
        if queued:
            log.info("reconciliation queued %d branch(es) to index", queued)
        return queued
