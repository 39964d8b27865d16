"""The job history and the queue's view of branches, for the hooks' callers that hold
a conninfo (each opens its connection; the statements are in store/).

Procrastinate keeps a job's status and events but not why it failed nor what it
did; each attempt is a row of `glossator_job_runs` (store.jobs), written by
hooks.service around `BranchIndexer.run`, read by `glossator status` and
`GET /api/jobs` through hooks.queue.list_jobs.
"""

from __future__ import annotations

from typing import Any

import psycopg

from store import commits, jobs


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
        jobs.start_run(conn, job_id, attempt, repository, branch, worker)


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
        jobs.end_run(
            conn,
            job_id,
            attempt,
            status,
            error=error,
            tip=tip,
            stats=stats,
            result_commit=result_commit,
        )


def record_progress(conninfo: str, job_id: int, attempt: int, progress: dict[str, Any]) -> None:
    """What a running attempt is doing (hooks.progress; a few times a minute at most)."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        jobs.run_progress(conn, job_id, attempt, progress)


def record_interrupted(
    conn: psycopg.Connection[Any], job_id: int, reason: str, attempt: int | None = None
) -> None:
    """Close the attempt a dead process left `running`: the history shows it failed.

    `attempt`: only that one (the attempt the stalled job was at), never a later
    attempt another worker started meanwhile."""
    jobs.close_interrupted(conn, job_id, reason, attempt)


def indexed_commits(conninfo: str) -> dict[tuple[str, str], str]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return commits.indexed_map(conn)


def incomplete_branches(conninfo: str) -> set[tuple[str, str]]:
    """Branches whose last index left problems (`indexed_commits.problems`)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return commits.incomplete(conn)


def given_up(conninfo: str) -> dict[tuple[str, str], str | None]:
    """Branches whose latest attempt used the last retry (hooks.queue.gives_up) or met
    only problems of the pushed files (`awaits_push_at`), and the tip it stopped at:
    reconciliation leaves them alone until the tip moves."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = jobs.latest_finished(conn)
    out: dict[tuple[str, str], str | None] = {}
    for r in rows:
        stats = r["stats"] or {}
        if stats.get("gave_up"):
            out[(r["repository"], r["branch"])] = stats.get("gave_up_at")
        elif stats.get("awaits_push_at"):
            out[(r["repository"], r["branch"])] = stats["awaits_push_at"]
    return out
