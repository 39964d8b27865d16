"""A deleted repository's jobs (`glossator repo delete`): cancel those waiting, wait for
the one running, then forget them all.

    cancel_waiting(conninfo, "livre")   # queued jobs and follow-ups: gone, never run
    running_jobs(conninfo, "livre")     # ids of the jobs a worker runs now
    forget_jobs(conninfo, "livre")      # every finished job and its attempts (status lists none)

A job names its repository in its arguments (hooks.queue.defer_sync); a running job is
never removed under its worker (procrastinate would fail to record its end): the caller
waits for it. Its repository is gone by then, so it fails at its next git read and its
follow-up is cancelled with the rest. The statements are store.jobqueue's (procrastinate's
tables) and store.jobs' (the attempts).
"""

from __future__ import annotations

import psycopg

from store import jobqueue, jobs


def cancel_waiting(conninfo: str, repository: str) -> list[int]:
    """Remove the repository's queued jobs; their ids."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return jobqueue.cancel_waiting(conn, repository)


def running_jobs(conninfo: str, repository: str) -> list[int]:
    """Ids of the repository's jobs a worker runs now."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return jobqueue.running_jobs(conn, repository)


def forget_jobs(conninfo: str, repository: str) -> int:
    """Remove the repository's jobs that no worker runs, and every attempt recorded of its
    jobs (glossator_job_runs); how many jobs went."""
    with psycopg.connect(conninfo) as conn, conn.transaction():
        gone = jobqueue.forget_jobs(conn, repository)
        jobs.forget_runs(conn, repository)
    return gone
