"""The procrastinate adapter: the one module that names procrastinate's tables.

    ensure_schema(conninfo)                 # procrastinate's schema, once per database
    defer(conn, task, queue=…, lock=…, queueing_lock=…, args=…)  # one job; None: one waits
    read = send_push_job(conn, task, …)     # a push's job in a pipeline; read() → (id, coalesced)
    commit_unflushed(conn)                  # this transaction's commit does not wait for its flush
    queue_exists(conn)                      # whether it is there (a CLI before `serve`)
    bring_forward(conn, "livre/main")       # a push: the waiting job runs now, count reset
    job_rows(conn, task, ...)               # jobs with their events and latest attempt
    cancel_waiting(conn, "livre")           # a deleted repository's queued jobs: gone
    running_jobs(conn, "livre")             # ids of its jobs a worker runs now
    forget_jobs(conn, "livre")              # its jobs no worker runs: gone
    attempt_is_current(conn, 42, 0)         # the queue still runs job 42 at attempt 0
    finish_if_current(conn, 42, 0, "succeeded")   # its end, unless it was taken over

Everything else goes through procrastinate's public API, in hooks/:
`App.configure_task(...).defer_async`, `JobManager.list_jobs` (a job's status, the
branches busy), `finish_job_by_id_async`, `retry_job_by_id_async`,
`get_stalled_jobs`. What is here has no public call:

- `defer` (and `waiting_job`): a job queued on a connection the caller already has
  (an App opens a pool of its own, which would cost a push more than git does), with
  procrastinate's own `defer_jobs` statement: its triggers and queueing lock
  (`AlreadyEnqueued`) are unchanged.
- `bring_forward`: Glossator never lets procrastinate retry (procrastinate issues
  #1446/#1543: its retry breaks the queueing lock; docs/push-pipeline.md, "The queue
  cannot wedge"), so a follow-up is a new delayed job, and a push must bring it
  forward and reset its count: procrastinate has no call that reschedules a waiting
  job or changes its arguments.
- the job list joins procrastinate's jobs and events with our attempts
  (`glossator_job_runs`, store.jobs) in one query: `list_jobs` returns neither events
  nor a join, and one query per job would make `glossator status` N+1.
- a deleted repository's jobs are found by their arguments (`args->>'repository'`):
  `list_jobs` filters by lock, queue, task and status only.
- `attempt_is_current`, `finish_if_current`: procrastinate ends a job by id whatever
  attempt asks; a late attempt must not (hooks.lease; `attempts` tells them apart).
- `ensure_schema` applies `SchemaManager.get_schema()` under our advisory lock
  (several processes may start on a fresh database; `apply_schema` is not idempotent).

Each function runs on the caller's connection (autocommit or its transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key for applying procrastinate's schema ("glosproc").
SCHEMA_LOCK = 0x676C6F7370726F63


def ensure_schema(conninfo: str) -> bool:
    """Apply procrastinate's schema once per database; True when it was applied now."""
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        if queue_exists(conn):
            return False
        import procrastinate  # here: the commands that only read the queue need none

        schema = procrastinate.schema.SchemaManager.get_schema()
        conn.execute(schema.encode("utf-8"))  # several statements, no parameters
    log.info("procrastinate schema applied")
    return True


def queue_exists(conn: Any) -> bool:
    """Whether procrastinate's schema is applied (a command run before the first `serve`)."""
    row = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
    return bool(row and row[0])


def attempt_is_current(conn: Any, job_id: int, attempt: int) -> bool:
    """Whether job `job_id` runs (`doing`) at `attempt` (its `attempts` when fetched);
    False once it was put back in the queue (a retry adds one), ended, or deleted."""
    row = conn.execute(
        "SELECT status = 'doing' AND attempts = %s FROM procrastinate_jobs WHERE id = %s",
        (attempt, job_id),
    ).fetchone()
    return bool(row and row[0])


def finish_if_current(
    conn: Any, job_id: int, attempt: int, status: str, delete_job: bool = False
) -> bool:
    """End job `job_id` with `status` (procrastinate's own `finish_job` statement) if it
    still runs at `attempt`; False, and nothing written, when another attempt has it."""
    with conn.transaction():
        row = conn.execute(
            "SELECT 1 FROM procrastinate_jobs"
            " WHERE id = %s AND status = 'doing' AND attempts = %s FOR UPDATE",
            (job_id, attempt),
        ).fetchone()
        if row is None:
            return False
        import procrastinate

        conn.execute(
            procrastinate.sql.queries["finish_job"],
            {"job_id": job_id, "status": status, "delete_job": delete_job},
        )
    return True


# procrastinate.manager.QUEUEING_LOCK_CONSTRAINT: the unique index of waiting jobs' locks
QUEUEING_LOCK_INDEX = "procrastinate_jobs_queueing_lock_idx_v1"
# procrastinate's own statement (sql/queries.sql, `defer_jobs`), one job; its triggers add
# the `deferred` event and NOTIFY the workers, as for `Task.defer`. Priority 0 is its default.
DEFER_SQL = """
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(
    %(queue)s, %(task)s, 0, %(lock)s, %(queueing_lock)s, %(args)s::jsonb,
    CASE WHEN %(delay_s)s > 0 THEN now() + make_interval(secs => %(delay_s)s) END
)::procrastinate_job_to_defer_v1])) AS id
"""


def _job_params(
    task: str, queue: str, lock: str, queueing_lock: str, args: dict[str, Any]
) -> dict[str, Any]:
    """One job's parameters, as procrastinate's defer statement names them."""
    return {
        "queue": queue,
        "task": task,
        "lock": lock,
        "queueing_lock": queueing_lock,
        "args": Jsonb(args),
    }


def defer(
    conn: Any,
    task: str,
    *,
    queue: str,
    lock: str,
    queueing_lock: str,
    args: dict[str, Any],
    delay_s: float = 0.0,
) -> int | None:
    """Queue one job on the caller's connection, in one statement; its id, or None when
    a job already waits under `queueing_lock` (procrastinate's AlreadyEnqueued). What
    `App.configure_task(...).defer` does, without an App: an App opens a pool of
    connections of its own, which cost a push's post-receive more than queueing the job
    (a push should cost what git costs)."""
    params = {**_job_params(task, queue, lock, queueing_lock, args), "delay_s": float(delay_s)}
    try:
        with conn.transaction():  # a savepoint inside the caller's transaction, if any
            row = conn.execute(DEFER_SQL, params).fetchone()
    except psycopg.errors.UniqueViolation as e:
        if e.diag.constraint_name == QUEUEING_LOCK_INDEX:
            return None
        raise
    return int(row[0])


# A push's job in statements that fail on nothing when a job waits (`defer` reads that
# from an error in a savepoint, which in a pipeline costs round trips of its own):
# procrastinate's statement unless a job waits under the queueing lock (its WHERE is
# checked before the function runs), then BRING_FORWARD_SQL (a no-op on a job just
# queued: not delayed, no count) and the waiting job's id. Two pushes racing between
# the look and the insert: the later insert still meets the queueing lock's unique
# index (UniqueViolation on QUEUEING_LOCK_INDEX), for its caller to handle.
DEFER_UNLESS_WAITING_SQL = """
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(
    %(queue)s, %(task)s, 0, %(lock)s, %(queueing_lock)s, %(args)s::jsonb, NULL::timestamptz
)::procrastinate_job_to_defer_v1])) AS id
WHERE NOT EXISTS (
    SELECT 1 FROM procrastinate_jobs WHERE queueing_lock = %(queueing_lock)s AND status = 'todo'
)
"""
BRING_FORWARD_SQL = (
    "UPDATE procrastinate_jobs SET scheduled_at = least(scheduled_at, now()),"
    " args = args - 'failures' WHERE queueing_lock = %s AND status = 'todo'"
    " AND (scheduled_at > now() OR args ? 'failures')"
)
WAITING_JOB_SQL = (
    "SELECT max(id) FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo'"
)


def send_push_job(
    conn: Any, task: str, *, queue: str, lock: str, queueing_lock: str, args: dict[str, Any]
) -> Callable[[], tuple[int, bool]]:
    """A push's job (`defer`, then `bring_forward` when one waits), its statements sent
    now (psycopg's pipeline mode: a push's statements in one round trip, hooks.queue),
    read by the function returned: (the job's id, whether it was one already waiting).
    UniqueViolation (QUEUEING_LOCK_INDEX) when another push queued the job meanwhile."""
    params = _job_params(task, queue, lock, queueing_lock, args)
    inserted = conn.execute(DEFER_UNLESS_WAITING_SQL, params)
    conn.execute(BRING_FORWARD_SQL, (queueing_lock,))
    waiting = conn.execute(WAITING_JOB_SQL, (queueing_lock,))

    def read() -> tuple[int, bool]:
        new = inserted.fetchone()
        if new is not None:
            return int(new[0]), False
        row = waiting.fetchone()
        return (int(row[0]) if row and row[0] is not None else 0), True

    return read


def commit_unflushed(conn: Any) -> None:
    """The caller's transaction commits without waiting for its WAL to reach the disk
    (`synchronous_commit = off` for this transaction only): a crash of the server within
    the next ~0.6 s (3 × wal_writer_delay) may lose it, never corrupt anything. For
    writes whose loss is repaired anyway (hooks.queue says which and how)."""
    conn.execute("SELECT set_config('synchronous_commit', 'off', true)")


def waiting_job(conn: Any, queueing_lock: str) -> int:
    """The id of the job waiting under `queueing_lock`, 0 when none does."""
    row = conn.execute(WAITING_JOB_SQL, (queueing_lock,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def bring_forward(conn: Any, queueing_lock: str) -> None:
    """The job waiting under `queueing_lock`, if delayed or a follow-up, runs now with a
    fresh count of retries (a push: new input deserves a try now; module docstring)."""
    conn.execute(BRING_FORWARD_SQL, (queueing_lock,))


JOBS_SQL = """
SELECT j.id, j.status::text AS status, j.args->>'repository' AS repository,
       j.args->>'branch' AS branch, j.attempts, j.scheduled_at,
       coalesce((j.args->>'failures')::int, 0) AS failures,
       (SELECT min(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type = 'deferred') AS queued_at,
       (SELECT max(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type = 'started') AS started_at,
       (SELECT max(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type IN ('succeeded', 'failed', 'cancelled', 'aborted'))
         AS finished_at,
       r.status AS run_status, r.error, r.tip, r.result_commit, r.stats, r.progress, r.worker
  FROM procrastinate_jobs j
  LEFT JOIN LATERAL (
       SELECT status, error, tip, result_commit, stats, progress, worker FROM glossator_job_runs
        WHERE job_id = j.id ORDER BY attempt DESC LIMIT 1) r ON true
 WHERE j.task_name = %(task)s
   AND (%(repository)s::text IS NULL OR j.args->>'repository' = %(repository)s)
   AND (%(readable)s::text[] IS NULL OR j.args->>'repository' = ANY(%(readable)s))
   AND (%(status)s::text IS NULL OR j.status::text = %(status)s)
   AND (NOT %(problems)s OR r.status = 'problems')
 ORDER BY j.id DESC
 LIMIT %(limit)s
"""


def _jobs_params(
    task: str,
    repository: str | None,
    status: str | None,
    problems: bool,
    limit: int,
    readable: Collection[str] | None,
) -> dict[str, Any]:
    return {
        "task": task,
        "repository": repository,
        # the caller's readable repositories, filtered before the limit (None: all)
        "readable": None if readable is None else sorted(readable),
        "status": status,
        "problems": problems,
        "limit": limit,
    }


def job_rows(
    conn: psycopg.Connection,
    task: str,
    *,
    repository: str | None = None,
    status: str | None = None,
    problems: bool = False,
    limit: int = 50,
    readable: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """Jobs of `task`, newest first, each with its events' times and its latest attempt
    (`status`: procrastinate's; `problems`: only attempts that met problems)."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(JOBS_SQL, _jobs_params(task, repository, status, problems, limit, readable))
        return cur.fetchall()


async def job_rows_async(
    conn: psycopg.AsyncConnection,
    task: str,
    *,
    repository: str | None = None,
    status: str | None = None,
    problems: bool = False,
    limit: int = 50,
    readable: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """`job_rows` on an async connection (the web API)."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            JOBS_SQL, _jobs_params(task, repository, status, problems, limit, readable)
        )
        return await cur.fetchall()


# A job names its repository in its arguments (hooks.queue.defer_sync).
_JOBS_OF = "args->>'repository' = %s"


def cancel_waiting(conn: Any, repository: str) -> list[int]:
    """Remove the repository's queued jobs; their ids."""
    rows = conn.execute(
        f"DELETE FROM procrastinate_jobs WHERE status = 'todo' AND {_JOBS_OF} RETURNING id",
        (repository,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def running_jobs(conn: Any, repository: str) -> list[int]:
    """Ids of the repository's jobs a worker runs now."""
    rows = conn.execute(
        f"SELECT id FROM procrastinate_jobs WHERE status = 'doing' AND {_JOBS_OF} ORDER BY id",
        (repository,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def forget_jobs(conn: Any, repository: str) -> int:
    """Remove the repository's jobs that no worker runs (a running one is never removed
    under its worker: procrastinate would fail to record its end); how many went."""
    cur = conn.execute(
        f"DELETE FROM procrastinate_jobs WHERE status <> 'doing' AND {_JOBS_OF}", (repository,)
    )
    return int(cur.rowcount)
