"""The durable indexing queue: procrastinate jobs in PostgreSQL, one per repository+branch.

A job names a repository and a branch, never a commit: it reads the tip when it
runs. Two procrastinate locks give DESIGN §1's semantics:

- `queueing_lock="<repo>/<branch>"`: at most one *waiting* job per branch. A push
  that arrives while one waits gets `AlreadyEnqueued`, and that waiting job will
  index its commits too: pushes are coalesced to the newest tip.
- `lock="<repo>/<branch>"`: at most one *running* job per branch; a push during a
  run queues one more job, which starts when the running one ends.

A push's post-receive queues through `queue_push`: the branch HEAD names, each
branch's tip and its job, on one connection (the server's pool) in one transaction.

Retries are ours, not procrastinate's (hooks.retries says why): a failed job's
follow-up is a *new* job, `defer_sync(…, failures=n, delay_s=…)`; when another job
already waits, `AlreadyEnqueued` means that job is the follow-up, and a push brings
a waiting retry forward and resets its count. Every attempt is also recorded in
`glossator_job_runs` (hooks.runs: status, error, duration, what it did), because
procrastinate keeps statuses and events but not why a job failed: that table is
what `glossator status` and `GET /api/jobs` show (`list_jobs`, `failing_branches`). The statements on procrastinate's tables, and the reason each
has no public call, are store.jobqueue's; those on the attempts, store.jobs'.

A deleted repository's jobs (`glossator repo delete`): `cancel_waiting` (queued jobs
and follow-ups: gone, never run), `running_jobs` (a running job is never removed under
its worker, which would fail to record its end: the caller waits for it; its
repository is gone by then, so it fails at its next git read and its follow-up is
cancelled with the rest), then `forget_jobs` (every finished job and its attempts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from store import commits, connections, jobqueue, jobs
from store.jobqueue import ensure_schema as ensure_schema  # its callers import it from here
from store.roundtrip import batches
from store.tips import record_heads, record_tip

if TYPE_CHECKING:  # procrastinate is imported where it is used: `glossator repo delete` needs none
    import procrastinate

TASK_NAME = "glossator.index_branch"
QUEUE = "indexing"


def lock_name(repository: str, branch: str) -> str:
    return f"{repository}/{branch}"


@dataclass(frozen=True)
class Enqueued:
    job_id: int
    coalesced: bool  # True: a waiting job already covers this push


@dataclass(frozen=True)
class BranchQueued:
    """What a push's post-receive did for one branch: its job, and the problems of the
    branch's last index ((None, []) before the first), read before this push."""

    enqueued: Enqueued
    last_job: int | None
    last_problems: list[str]


def queue_push(
    conn: psycopg.Connection, repository: str, tips: Mapping[str, str], head: str | None
) -> dict[str, BranchQueued]:
    """Everything the post-receive hook writes and reads, on the caller's one connection
    in one transaction (a push should cost what git costs): the branch HEAD names
    (store.tips.record_heads: the default branch search reads), then for each pushed
    branch the problems of its last index, the tip the push left (git's zeros: deleted;
    search's freshness reads it, and it is in before the job, so a commit-back always
    finds it) and its job (`defer`'s semantics).

    One round trip: the statements go in one psycopg pipeline, which the server runs as
    one transaction ended at its Sync (store.roundtrip), all of it or nothing. Its
    commit does not wait for the WAL flush (store.jobqueue.commit_unflushed): what it
    writes is repaired when lost. A crash of PostgreSQL within ~0.6 s of a push could
    lose the tip, HEAD's branch and the job (the pusher was told it was queued), and the
    queue's maintenance puts them back: after a restart of the database, and every
    RECONCILE_S anyway, it records every tip and HEAD from git and queues each branch
    whose tip is not its indexed commit (hooks.maintenance.reconcile), the same repair
    as for a push whose post-receive found the database down. The flush it skips
    (an fsync) was the slowest statement of an edit's push on a loaded disk.
    Two pushes queueing the same branch's job at once (one's look, then the other's
    insert): the later one's whole transaction is refused, nothing of it written, and
    it runs again one statement at a time, `defer` reading the conflict in a savepoint."""
    with batches(conn):
        try:
            return _queue_push_pipelined(conn, repository, tips, head)
        except psycopg.errors.UniqueViolation as e:
            if e.diag.constraint_name != jobqueue.QUEUEING_LOCK_INDEX:
                raise
    out: dict[str, BranchQueued] = {}
    with conn.transaction():
        if head is not None:
            record_heads(conn, {repository: head})
        for branch, tip in tips.items():
            job_id, problems = commits.last_index(conn, repository, branch)
            record_tip(conn, repository, branch, tip)
            out[branch] = BranchQueued(_defer(conn, repository, branch), job_id, problems)
    return out


def _queue_push_pipelined(
    conn: psycopg.Connection, repository: str, tips: Mapping[str, str], head: str | None
) -> dict[str, BranchQueued]:
    reads = {}
    with conn.pipeline():  # its end sends everything and reads every answer (one Sync)
        jobqueue.commit_unflushed(conn)
        if head is not None:
            record_heads(conn, {repository: head})
        for branch, tip in tips.items():
            last = commits.send_last_index(conn, repository, branch)
            record_tip(conn, repository, branch, tip)
            name = lock_name(repository, branch)
            job = jobqueue.send_push_job(
                conn,
                TASK_NAME,
                queue=QUEUE,
                lock=name,
                queueing_lock=name,
                args={"repository": repository, "branch": branch},
            )
            reads[branch] = (last, job)
    out = {}
    for branch, (last, job) in reads.items():
        job_id, problems = last()
        enqueued, coalesced = job()
        out[branch] = BranchQueued(Enqueued(enqueued, coalesced), job_id, problems)
    return out


def defer_sync(
    conninfo: str,
    repository: str,
    branch: str,
    *,
    failures: int = 0,
    delay_s: float = 0.0,
) -> Enqueued:
    """Queue indexing of `repository`/`branch` from a synchronous caller (a job's
    follow-up, a test) on a short connection of its own.

    `failures`/`delay_s`: a follow-up after failed attempts, run `delay_s` from now.
    When a job already waits it covers this request; a push (`delay_s` 0) moves a
    delayed one to now."""
    # connect_timeout: a database that does not answer is said at once (a job that met
    # an outage queues its follow-up before it can end)
    with connections.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
        return _defer(conn, repository, branch, failures=failures, delay_s=delay_s)


def _defer(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    *,
    failures: int = 0,
    delay_s: float = 0.0,
) -> Enqueued:
    name = lock_name(repository, branch)
    args: dict[str, Any] = {"repository": repository, "branch": branch}
    if failures:
        args["failures"] = failures
    # procrastinate's own statement on the caller's connection (store.jobqueue.defer: an
    # App would open a pool of its own to queue one job, on every push)
    job_id = jobqueue.defer(
        conn, TASK_NAME, queue=QUEUE, lock=name, queueing_lock=name, args=args, delay_s=delay_s
    )
    if job_id is not None:
        return Enqueued(job_id, False)
    if delay_s <= 0 and not failures:
        # a push: new input deserves a try now, and a fresh count of retries
        jobqueue.bring_forward(conn, name)
    return Enqueued(jobqueue.waiting_job(conn, name), True)


async def defer_async(app: procrastinate.App, repository: str, branch: str) -> Enqueued | None:
    """Queue indexing from the server (reconciliation); None when one already waits."""
    from procrastinate.exceptions import AlreadyEnqueued

    name = lock_name(repository, branch)
    try:
        job_id = await app.configure_task(
            TASK_NAME, queue=QUEUE, lock=name, queueing_lock=name
        ).defer_async(repository=repository, branch=branch)
    except AlreadyEnqueued:
        return None
    return Enqueued(job_id, False)


def failing_branches(
    conn: psycopg.Connection, *, repository: str | None = None
) -> list[dict[str, Any]]:
    """Branches whose latest finished attempt failed or met problems, with what to do:
    `awaits_push` (the pushed files are at fault: fix them and push), `gave_up` (no more
    retries until a push), otherwise it is retried by itself."""
    out = []
    for r in jobs.latest_finished(conn, repository):
        if r["status"] not in ("failed", "problems"):
            continue
        stats = r["stats"] or {}
        problems = list(stats.get("problems") or [])
        awaits_push = bool(stats.get("awaits_push_at")) and r["status"] == "problems"
        gave_up = bool(stats.get("gave_up"))
        if awaits_push:
            todo = "fix these files and push: the branch is not retried until a push"
        elif gave_up:
            todo = "no more retries: push to the branch to try again"
        else:
            todo = "retried by itself"
        out.append(
            {
                "repository": r["repository"],
                "branch": r["branch"],
                "job": r["job_id"],
                "status": DONE_WITH_PROBLEMS if r["status"] == "problems" else "failed",
                "tip": r["tip"],
                "error": r["error"],
                "problems": problems,
                "problem_count": int(stats.get("problem_count", len(problems))),
                "awaits_push": awaits_push,
                "gave_up": gave_up,
                "todo": todo,
            }
        )
    return out


STATUS_NAMES = {"todo": "queued", "doing": "running", "succeeded": "done"}
DONE_WITH_PROBLEMS = "done with problems"  # a succeeded job whose attempt met problems


def _row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["status"] = STATUS_NAMES.get(row["status"], row["status"])
    if row["status"] == "succeeded" and row.get("run_status") == "problems":
        out["status"] = DONE_WITH_PROBLEMS
    stats = row.get("stats") or {}
    out["problems"] = list(stats.get("problems") or [])
    out["problem_count"] = int(stats.get("problem_count", len(out["problems"])))
    start, end = row["started_at"], row["finished_at"]
    out["duration_s"] = round((end - start).total_seconds(), 3) if start and end else None
    for key in ("scheduled_at", "queued_at", "started_at", "finished_at"):
        out[key] = row[key].isoformat() if row[key] else None
    return out


def _raw_status(status: str | None) -> str | None:
    if status == DONE_WITH_PROBLEMS:
        return "succeeded"  # then filtered in SQL by the run's status
    return {v: k for k, v in STATUS_NAMES.items()}.get(status or "", status)


def list_jobs(
    conn: psycopg.Connection,
    *,
    repository: str | None = None,
    status: str | None = None,
    limit: int = 50,
    readable: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """Jobs, newest first: queued, running, done, failed, with errors and durations."""
    rows = jobqueue.job_rows(
        conn,
        TASK_NAME,
        repository=repository,
        status=_raw_status(status),
        problems=status == DONE_WITH_PROBLEMS,
        limit=limit,
        readable=readable,
    )
    return [_row(r) for r in rows]


async def list_jobs_async(
    conn: psycopg.AsyncConnection,
    *,
    repository: str | None = None,
    status: str | None = None,
    limit: int = 50,
    readable: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    rows = await jobqueue.job_rows_async(
        conn,
        TASK_NAME,
        repository=repository,
        status=_raw_status(status),
        problems=status == DONE_WITH_PROBLEMS,
        limit=limit,
        readable=readable,
    )
    return [_row(r) for r in rows]


def cancel_waiting(conninfo: str, repository: str) -> list[int]:
    """Remove the repository's queued jobs; their ids."""
    with connections.connect(conninfo, autocommit=True) as conn:
        return jobqueue.cancel_waiting(conn, repository)


def running_jobs(conninfo: str, repository: str) -> list[int]:
    """Ids of the repository's jobs a worker runs now."""
    with connections.connect(conninfo, autocommit=True) as conn:
        return jobqueue.running_jobs(conn, repository)


def forget_jobs(conninfo: str, repository: str) -> int:
    """Remove the repository's jobs that no worker runs, and every attempt recorded of its
    jobs (glossator_job_runs); how many jobs went."""
    with connections.connect(conninfo) as conn, conn.transaction():
        gone = jobqueue.forget_jobs(conn, repository)
        jobs.forget_runs(conn, repository)
    return gone
