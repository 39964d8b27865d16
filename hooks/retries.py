"""Retries are ours: the follow-up job of an attempt that failed or met problems.

    follow_ups = FollowUps(conninfo, store, retries=5)
    retry = follow_ups.after(repository, branch, failures=1, tip=tip)
    # {"next_job": 43, "retry_in_s": 2.0}, or {"next_job": None, "gave_up": True, …}

Procrastinate retries a job by putting the *same* row back to `todo`, which
violates the queueing lock's unique index when a push queued another job
meanwhile (procrastinate issues #1446, #1543): the error is raised while the
worker persists the outcome, nobody awaits it, the job stays `doing` and its
`lock` blocks the branch for good. So the task is registered with `retry=False`,
a failed job ends `failed`, and its follow-up is a *new* job deferred with a
delay (hooks.queue.defer_sync; `retry_delay`: 2, 4, 8 … s for `retries`
attempts, then 5, 10, 20 … minutes for SLOW_RETRIES more, then none:
`gives_up`): when another job already waits, `AlreadyEnqueued` simply means that
job is the follow-up. A push brings a waiting retry forward and resets its count
(new input deserves a try now).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from hooks.gitsource import branch_tip
from hooks.queue import defer_sync
from hooks.repositories import Repositories
from store.errors import describe_failure

log = logging.getLogger(__name__)

# After the quick retries, a branch that still fails is tried again at a slowing
# pace: 5, 10, 20, 40, 60, 60 minutes (SLOW_RETRIES), then left alone until a push
# brings new input. A problem still there after ~3 hours of tries is not transient
# (an API key revoked, a file no summarizer can take): trying it every 5 minutes
# for ever only burnt provider calls and filled the history (issue 14). Round
# figures, not measured: long enough for a provider's outage, short enough to stop
# within an afternoon. The give-up is shown by `glossator status` and /api/jobs.
SLOW_RETRY_S = 300.0
SLOW_RETRY_MAX_S = 3600.0
SLOW_RETRIES = 6


def retry_delay(
    failures: int, retries: int, base: float = 2.0, slow: float = SLOW_RETRY_S
) -> float:
    """Seconds before the follow-up of a job after `failures` consecutive failures:
    `retries` quick ones (base, 2 base, 4 base…), then slow ones (slow, 2 slow… at
    most SLOW_RETRY_MAX_S)."""
    if failures <= retries:
        return min(base * 2 ** (failures - 1), slow)
    return min(slow * 2 ** (failures - retries - 1), max(slow, SLOW_RETRY_MAX_S))


def gives_up(failures: int, retries: int) -> bool:
    """True when `failures` consecutive failures used every quick and slow retry: the
    job defers no follow-up, and reconciliation leaves the branch alone at that tip."""
    return failures > retries + SLOW_RETRIES


def retry_line(retry: dict[str, Any]) -> str:
    """The end of a failed attempt's log line: what happens next."""
    if retry.get("gave_up"):
        return "that was the last retry: the branch waits for a push"
    return f"next try: job {retry['next_job']} in {retry['retry_in_s']:.0f} s"


class FollowUps:
    """The jobs that take a branch over after an attempt, queued in `conninfo`'s queue."""

    def __init__(
        self,
        conninfo: str,
        store: Repositories,
        *,
        retries: int = 5,
        retry_base_s: float = 2.0,
        slow_retry_s: float = SLOW_RETRY_S,
    ) -> None:
        self.conninfo = conninfo
        self.store = store
        self.retries = retries
        self.retry_base_s = retry_base_s
        self.slow_retry_s = slow_retry_s

    def after(self, repository: str, branch: str, failures: int, tip: str | None) -> dict[str, Any]:
        """The follow-up of an attempt that failed or met problems, as stats: the next
        job and its delay, or `gave_up` (`gives_up`) at `tip`."""
        if gives_up(failures, self.retries):
            return {"next_job": None, "gave_up": True, "gave_up_at": tip}
        delay = retry_delay(failures, self.retries, self.retry_base_s, self.slow_retry_s)
        return {
            "next_job": self.queue(repository, branch, failures, delay),
            "retry_in_s": delay,
        }

    def queue(self, repository: str, branch: str, failures: int, delay: float) -> int | None:
        """The job that will take over this branch (a new one, or the one that waits)."""
        try:
            return defer_sync(
                self.conninfo, repository, branch, failures=failures, delay_s=delay
            ).job_id
        except Exception as e:  # the database is gone: reconciliation will queue it
            # ours, not the driver's message: it may quote the URL or the socket's path
            why = describe_failure(e) if isinstance(e, psycopg.Error | PoolTimeout) else e
            log.warning("could not queue the follow-up of %s/%s: %s", repository, branch, why)
            return None

    def tip(self, repository: str, branch: str) -> str | None:
        """The branch's tip now, which a give-up is recorded at; None when unreadable."""
        try:
            return branch_tip(self.store.open(repository), branch)
        except Exception:  # the repository is gone or unreadable: no tip to remember
            return None
