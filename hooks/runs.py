"""The job history (`glossator_job_runs`) and the queue's view of branches, in plain SQL.

Procrastinate keeps a job's status and events but not why it failed nor what it
did; each attempt is a row here (store/migrations/010_job_runs.sql), written by
hooks.service around `BranchIndexer.run`, read by `glossator status` and
`GET /api/jobs` through hooks.queue.JOBS_SQL.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg


def one_line(e: BaseException) -> str:
    """An exception as one bounded line: its type and message, whitespace folded."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:500]


def record_start(
    conninfo: str,
    job_id: int,
    attempt: int,
    repository: str,
    branch: str,
    worker: str | None = None,
) -> None:
    """`worker`: the process running the attempt (hooks.jobthread.worker_name)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO glossator_job_runs
                   (job_id, attempt, repository, branch, status, worker)
               VALUES (%s, %s, %s, %s, 'running', %s)
               ON CONFLICT (job_id, attempt) DO UPDATE
               SET status = 'running', started_at = now(), finished_at = NULL, error = NULL,
                   worker = EXCLUDED.worker""",
            (job_id, attempt, repository, branch, worker),
        )


def record_end(
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


def record_progress(conninfo: str, job_id: int, attempt: int, progress: dict[str, Any]) -> None:
    """What a running attempt is doing (hooks.progress; a few times a minute at most)."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        conn.execute(
            "UPDATE glossator_job_runs SET progress = %s WHERE job_id = %s AND attempt = %s",
            (json.dumps(progress), job_id, attempt),
        )


def record_interrupted(
    conn: psycopg.Connection[Any], job_id: int, reason: str, attempt: int | None = None
) -> None:
    """Close the attempt a dead process left `running`: the history shows it failed.

    `attempt`: only that one (the attempt the stalled job was at), never a later
    attempt another worker started meanwhile."""
    conn.execute(
        "UPDATE glossator_job_runs SET status = 'failed', error = %s, finished_at = now()"
        " WHERE job_id = %s AND status = 'running' AND (%s::int IS NULL OR attempt = %s::int)",
        (reason, job_id, attempt, attempt),
    )


def indexed_commits(conninfo: str) -> dict[tuple[str, str], str]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT repository, branch, commit FROM indexed_commits").fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def incomplete_branches(conninfo: str) -> set[tuple[str, str]]:
    """Branches whose last index left problems (`indexed_commits.problems`)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT repository, branch FROM indexed_commits WHERE problems <> '[]'::jsonb"
        ).fetchall()
    return {(r[0], r[1]) for r in rows}


def busy_locks(conninfo: str, task_name: str) -> set[str]:
    """`<repo>/<branch>` of every branch with a job waiting or running."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT lock FROM procrastinate_jobs"
            " WHERE task_name = %s AND status IN ('todo', 'doing') AND lock IS NOT NULL",
            (task_name,),
        ).fetchall()
    return {r[0] for r in rows}


def job_statuses(conninfo: str, job_ids: list[int]) -> dict[int, str]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id, status::text FROM procrastinate_jobs WHERE id = ANY(%s)", (job_ids,)
        ).fetchall()
    return {int(r[0]): r[1] for r in rows}


def given_up(conninfo: str) -> dict[tuple[str, str], str | None]:
    """Branches whose latest attempt used the last retry (hooks.queue.gives_up) or met
    only problems of the pushed files (`awaits_push_at`), and the tip it stopped at:
    reconciliation leaves them alone until the tip moves."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            """SELECT DISTINCT ON (repository, branch) repository, branch, stats
                 FROM glossator_job_runs WHERE finished_at IS NOT NULL
                ORDER BY repository, branch, started_at DESC"""
        ).fetchall()
    out: dict[tuple[str, str], str | None] = {}
    for repository, branch, stats in rows:
        stats = stats or {}
        if stats.get("gave_up"):
            out[(repository, branch)] = stats.get("gave_up_at")
        elif stats.get("awaits_push_at"):
            out[(repository, branch)] = stats["awaits_push_at"]
    return out
