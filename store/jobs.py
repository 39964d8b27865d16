"""The job history: one row per attempt of an indexing job (`glossator_job_runs`,
migration 010, columns added by 020 and 023).

    start_run(conn, job_id, attempt, "livre", "main", worker)   # an attempt begins
    end_run(conn, job_id, attempt, "succeeded", error=..., tip=..., stats=...)
    run_progress(conn, job_id, attempt, {...})                  # what it is doing now
    close_interrupted(conn, job_id, reason, attempt)            # a dead process's attempt
    running_attempts(conn, "host:123")                          # what a process was running
    latest_finished(conn)                                       # each branch's last outcome
    runs_exist(conn)                                            # table there (before `serve`)
    forget_runs(conn, "livre")                                  # a deleted repository's

Procrastinate keeps a job's status and events but not why it failed nor what it did:
hooks.runs writes these rows around each attempt; `glossator status` and
`GET /api/jobs` read them (with procrastinate's jobs: store.jobqueue.job_rows). Each
function runs on the caller's connection.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg.rows import dict_row


def start_run(
    conn: Any,
    job_id: int,
    attempt: int,
    repository: str,
    branch: str,
    worker: str | None = None,
) -> None:
    """Attempt `attempt` of job `job_id` is running (again: a re-run attempt restarts)."""
    conn.execute(
        """INSERT INTO glossator_job_runs
               (job_id, attempt, repository, branch, status, worker)
           VALUES (%s, %s, %s, %s, 'running', %s)
           ON CONFLICT (job_id, attempt) DO UPDATE
           SET status = 'running', started_at = now(), finished_at = NULL, error = NULL,
               worker = EXCLUDED.worker""",
        (job_id, attempt, repository, branch, worker),
    )


def end_run(
    conn: Any,
    job_id: int,
    attempt: int,
    status: str,
    *,
    error: str | None,
    tip: str | None,
    stats: dict[str, Any] | None,
    result_commit: str | None = None,
) -> None:
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


def run_progress(conn: Any, job_id: int, attempt: int, progress: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE glossator_job_runs SET progress = %s WHERE job_id = %s AND attempt = %s",
        (json.dumps(progress), job_id, attempt),
    )


def close_interrupted(conn: Any, job_id: int, reason: str, attempt: int | None = None) -> None:
    """The attempt still `running` of `job_id` failed with `reason` (only `attempt`, when
    given: never a later attempt another worker started meanwhile)."""
    conn.execute(
        "UPDATE glossator_job_runs SET status = 'failed', error = %s, finished_at = now()"
        " WHERE job_id = %s AND status = 'running' AND (%s::int IS NULL OR attempt = %s::int)",
        (reason, job_id, attempt, attempt),
    )


def running_attempts(conn: Any, worker: str) -> set[tuple[int, int]]:
    """(job id, attempt) of every attempt `worker` (hooks.jobthread.worker_name) started
    and has not ended."""
    rows = conn.execute(
        "SELECT job_id, attempt FROM glossator_job_runs WHERE worker = %s AND status = 'running'",
        (worker,),
    ).fetchall()
    return {(int(job_id), int(attempt)) for job_id, attempt in rows}


def latest_finished(conn: Any, repository: str | None = None) -> list[dict[str, Any]]:
    """Each branch's latest finished attempt (repository, branch, job_id, status, error,
    tip, stats), ordered by repository and branch; of one repository when given."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            """SELECT DISTINCT ON (repository, branch) repository, branch, job_id, status,
                      error, tip, stats
                 FROM glossator_job_runs
                WHERE finished_at IS NOT NULL
                  AND (%(repository)s::text IS NULL OR repository = %(repository)s)
                ORDER BY repository, branch, started_at DESC""",
            {"repository": repository},
        )
        return list(cur.fetchall())


def runs_exist(conn: Any) -> bool:
    """Whether the history's table is there (a command run on a database never migrated)."""
    row = conn.execute("SELECT to_regclass('glossator_job_runs') IS NOT NULL").fetchone()
    return bool(row and row[0])


def forget_runs(conn: Any, repository: str) -> None:
    """Every attempt recorded for `repository`'s jobs goes."""
    conn.execute("DELETE FROM glossator_job_runs WHERE repository = %s", (repository,))
