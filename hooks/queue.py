"""The durable indexing queue: procrastinate jobs in PostgreSQL, one per repository+branch.

A job names a repository and a branch, never a commit: it reads the tip when it
runs. Two procrastinate locks give DESIGN §1's semantics:

- `queueing_lock="<repo>/<branch>"`: at most one *waiting* job per branch. A push
  that arrives while one waits gets `AlreadyEnqueued`, and that waiting job will
  index its commits too: pushes are coalesced to the newest tip.
- `lock="<repo>/<branch>"`: at most one *running* job per branch; a push during a
  run queues one more job, which starts when the running one ends.

Failures are retried with exponential backoff (2, 4, 8 … s; `settings.job_retries`
attempts). Every attempt is also recorded in `glossator_job_runs` (status, error,
duration, what it did), because procrastinate keeps statuses and events but not
why a job failed: that table is what `glossator status` and `GET /api/jobs` show.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import procrastinate
import psycopg
from procrastinate.exceptions import AlreadyEnqueued
from psycopg.rows import dict_row

log = logging.getLogger(__name__)

TASK_NAME = "glossator.index_branch"
QUEUE = "indexing"
# pg_advisory_xact_lock key for applying procrastinate's schema ("glosproc").
SCHEMA_LOCK = 0x676C6F7370726F63


def lock_name(repository: str, branch: str) -> str:
    return f"{repository}/{branch}"


def retry_strategy(retries: int) -> procrastinate.RetryStrategy | bool:
    if retries <= 0:
        return False
    return procrastinate.RetryStrategy(max_attempts=retries, exponential_wait=2)


def ensure_schema(conninfo: str) -> bool:
    """Apply procrastinate's schema once per database; True when it was applied now."""
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        row = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
        if row and row[0]:
            return False
        schema = procrastinate.schema.SchemaManager.get_schema()
        conn.execute(schema.encode("utf-8"))  # several statements, no parameters
    log.info("procrastinate schema applied")
    return True


@dataclass(frozen=True)
class Enqueued:
    job_id: int
    coalesced: bool  # True: a waiting job already covers this push


def defer_sync(conninfo: str, repository: str, branch: str) -> Enqueued:
    """Queue indexing of `repository`/`branch` from a synchronous process (the hook)."""
    app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=conninfo))
    name = lock_name(repository, branch)
    with app.open():
        try:
            job_id = app.configure_task(
                TASK_NAME, queue=QUEUE, lock=name, queueing_lock=name
            ).defer(repository=repository, branch=branch)
            return Enqueued(job_id, False)
        except AlreadyEnqueued:
            pass
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo' "
            "ORDER BY id DESC LIMIT 1",
            (name,),
        ).fetchone()
    return Enqueued(int(row[0]) if row else 0, True)


async def defer_async(app: procrastinate.App, repository: str, branch: str) -> Enqueued | None:
    """Queue indexing from the server (reconciliation); None when one already waits."""
    name = lock_name(repository, branch)
    try:
        job_id = await app.configure_task(
            TASK_NAME, queue=QUEUE, lock=name, queueing_lock=name
        ).defer_async(repository=repository, branch=branch)
    except AlreadyEnqueued:
        return None
    return Enqueued(job_id, False)


JOBS_SQL = """
SELECT j.id, j.status::text AS status, j.args->>'repository' AS repository,
       j.args->>'branch' AS branch, j.attempts, j.scheduled_at,
       (SELECT min(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type = 'deferred') AS queued_at,
       (SELECT max(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type = 'started') AS started_at,
       (SELECT max(e.at) FROM procrastinate_events e
         WHERE e.job_id = j.id AND e.type IN ('succeeded', 'failed', 'cancelled', 'aborted'))
         AS finished_at,
       r.error, r.tip, r.result_commit, r.stats
  FROM procrastinate_jobs j
  LEFT JOIN LATERAL (
       SELECT error, tip, result_commit, stats FROM glossator_job_runs
        WHERE job_id = j.id ORDER BY attempt DESC LIMIT 1) r ON true
 WHERE j.task_name = %(task)s
   AND (%(repository)s::text IS NULL OR j.args->>'repository' = %(repository)s)
   AND (%(status)s::text IS NULL OR j.status::text = %(status)s)
 ORDER BY j.id DESC
 LIMIT %(limit)s
"""

STATUS_NAMES = {"todo": "queued", "doing": "running", "succeeded": "done"}


def _row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["status"] = STATUS_NAMES.get(row["status"], row["status"])
    start, end = row["started_at"], row["finished_at"]
    out["duration_s"] = round((end - start).total_seconds(), 3) if start and end else None
    for key in ("scheduled_at", "queued_at", "started_at", "finished_at"):
        out[key] = row[key].isoformat() if row[key] else None
    return out


def list_jobs(
    conn: psycopg.Connection,
    *,
    repository: str | None = None,
    status: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Jobs, newest first: queued, running, done, failed, with errors and durations."""
    raw_status = {v: k for k, v in STATUS_NAMES.items()}.get(status or "", status)
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            JOBS_SQL,
            {"task": TASK_NAME, "repository": repository, "status": raw_status, "limit": limit},
        )
        return [_row(r) for r in cur.fetchall()]


async def list_jobs_async(
    conn: psycopg.AsyncConnection,
    *,
    repository: str | None = None,
    status: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    raw_status = {v: k for k, v in STATUS_NAMES.items()}.get(status or "", status)
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            JOBS_SQL,
            {"task": TASK_NAME, "repository": repository, "status": raw_status, "limit": limit},
        )
        return [_row(r) for r in await cur.fetchall()]
