"""The run history: one row per attempt of a job, and the queue's view of branches.

    history = RunHistory(conninfo)
    history.start(job_id, attempt, "livre", "main", worker="host:123")
    history.progress(job_id, attempt, snapshot)        # hooks.progress, a few times a minute
    history.end(job_id, attempt, "done", error=None, tip=…, stats=…, result_commit=…)
    history.flush()                                     # ends kept while the database was down

Procrastinate keeps a job's status and events but not why it failed nor what it
did; each attempt is a row of `glossator_job_runs` (store.jobs), written around
`BranchIndexer.run` (hooks.attempt), read by `glossator status` and
`GET /api/jobs` through hooks.queue.list_jobs. Each call opens its connection
(the statements are in store/).
"""

from __future__ import annotations

import collections
import logging
from typing import Any

import psycopg

from store import commits, connections, jobs

log = logging.getLogger(__name__)

# outcomes kept while the database is down: bounded, jobs need it to start anyway
UNRECORDED_KEPT = 100


def one_line(e: BaseException) -> str:
    """An exception as one bounded line: its type and message, whitespace folded."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:500]


class RunHistory:
    """The attempts' rows a worker process writes (`glossator_job_runs`)."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        # ends the database could not take when the attempt ended (it was down):
        # written once it is back (`flush`)
        self.unrecorded: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=UNRECORDED_KEPT
        )

    def start(
        self, job_id: int, attempt: int, repository: str, branch: str, worker: str | None = None
    ) -> None:
        """`worker`: the process running the attempt (hooks.jobthread.worker_name)."""
        with connections.connect(self.conninfo, autocommit=True) as conn:
            jobs.start_run(conn, job_id, attempt, repository, branch, worker)

    def progress(self, job_id: int, attempt: int, progress: dict[str, Any]) -> None:
        """What a running attempt is doing (hooks.progress; a few times a minute at most)."""
        with connections.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
            jobs.run_progress(conn, job_id, attempt, progress)

    def end(
        self,
        job_id: int,
        attempt: int,
        status: str,
        *,
        error: str | None,
        tip: str | None,
        stats: dict[str, Any] | None,
        result_commit: str | None = None,
    ) -> None:
        """The attempt's end, or kept for `flush` when the database is down."""
        fields: dict[str, Any] = {
            "error": error,
            "tip": tip,
            "stats": stats,
            "result_commit": result_commit,
        }
        try:
            self._write_end(job_id, attempt, status, fields)
        except psycopg.Error:
            self.unrecorded.append(
                {"job_id": job_id, "attempt": attempt, "status": status, **fields}
            )
            log.warning("job %s ended %s; recorded once the database is back", job_id, status)

    def flush(self) -> int:
        """Write the ends kept while the database was down; how many were written."""
        written = 0
        while self.unrecorded:
            item = self.unrecorded[0]
            fields = {k: v for k, v in item.items() if k not in ("job_id", "attempt", "status")}
            self._write_end(item["job_id"], item["attempt"], item["status"], fields)
            self.unrecorded.popleft()
            written += 1
        return written

    def interrupted(self, job_id: int, attempt: int) -> None:
        """Close the attempt a dead process left `running`: the history shows it failed.
        Only that attempt (the one the stalled job was at), never a later attempt another
        worker started meanwhile."""
        with connections.connect(self.conninfo, autocommit=True) as conn:
            jobs.close_interrupted(
                conn, job_id, "interrupted: the process running it stopped (crash or kill)", attempt
            )

    def running_of(self, worker: str) -> set[tuple[int, int]]:
        """(job id, attempt) of the attempts `worker` left `running`."""
        with connections.connect(self.conninfo, autocommit=True) as conn:
            return jobs.running_attempts(conn, worker)

    def _write_end(self, job_id: int, attempt: int, status: str, fields: dict[str, Any]) -> None:
        with connections.connect(self.conninfo, autocommit=True) as conn:
            jobs.end_run(conn, job_id, attempt, status, **fields)


def indexed_commits(conninfo: str) -> dict[tuple[str, str], str]:
    with connections.connect(conninfo, autocommit=True) as conn:
        return commits.indexed_map(conn)


def incomplete_branches(conninfo: str) -> set[tuple[str, str]]:
    """Branches whose last index left problems (`indexed_commits.problems`)."""
    with connections.connect(conninfo, autocommit=True) as conn:
        return commits.incomplete(conn)


def given_up(conninfo: str) -> dict[tuple[str, str], str | None]:
    """Branches whose latest attempt used the last retry (hooks.retries.gives_up) or met
    only problems of the pushed files (`awaits_push_at`), and the tip it stopped at:
    reconciliation leaves them alone until the tip moves."""
    with connections.connect(conninfo, autocommit=True) as conn:
        rows = jobs.latest_finished(conn)
    out: dict[tuple[str, str], str | None] = {}
    for r in rows:
        stats = r["stats"] or {}
        if stats.get("gave_up"):
            out[(r["repository"], r["branch"])] = stats.get("gave_up_at")
        elif stats.get("awaits_push_at"):
            out[(r["repository"], r["branch"])] = stats["awaits_push_at"]
    return out
