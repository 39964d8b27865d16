"""One attempt of an indexing job, as the queue sees it: recorded, judged, followed up.

    attempts = Attempts(job, history, follow_ups, worker="host:123")
    attempts.run(job_id=42, attempt=0, repository="livre", branch="main", failures=0)

`run` records the attempt's start (hooks.runs), runs the job (`BranchIndexer.run`,
hooks.job) with its progress published, and turns its `Outcome` into the
attempt's status and what follows it:

- done: nothing follows, unless the branch moved on meanwhile (`Outcome.moved`):
  then a job is made sure to follow (the push's, usually, waits already);
- problems that are all the pushed files' own (`Outcome.user_problems`): nothing
  follows (the same tip would fail the same way), `awaits_push_at` is recorded,
  and reconciliation leaves the branch alone at that tip until a push;
- other problems, or a failure: the follow-up of hooks.retries, until it gives up.

A job for a repository the store no longer holds (deleted, or a name it never
serves) is dropped with a log line, neither run nor followed up: it could only fail,
and retry, for ever. A failure is raised to procrastinate as `JobFailed`,
one line, its follow-up already queued. `Indexed` is told of each branch indexed (search.warming).

An attempt whose job was taken over (its worker's heartbeat late: the job put back
in the queue and run again; hooks.lease) stops at its next write with TakenOver:
its end is neither recorded (the queue's maintenance recorded it interrupted) nor
followed up (the job runs again already), and procrastinate's end of the job is
not written either (hooks.job_runner).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, NoReturn, Protocol

import psycopg

from hooks.job import BranchIndexer, Outcome
from hooks.lease import Lease, TakenOver
from hooks.progress import JobProgress
from hooks.repositories import Repositories
from hooks.retries import FollowUps, retry_line
from hooks.runs import RunHistory, one_line
from store.errors import describe_failure

log = logging.getLogger(__name__)


def _gone(store: Repositories, name: str) -> bool:
    """Whether repository `name` is gone for good: a name the store never serves, or
    absent from a store that is there (a missing store, say an unmounted shared volume,
    fails the job instead, and it is retried)."""
    try:
        path = store.path(name)
    except ValueError:  # gitserver's RepositoryNameError is one
        return True
    return path.parent.is_dir() and not store.exists(name)


class JobFailed(RuntimeError):
    """Raised to procrastinate for a failed attempt: one line, the follow-up already queued."""


class Indexed(Protocol):
    """Told of each branch a job indexed, once its rows are loaded and the job recorded
    (search.warming.GateWarmer: warms the relevance gate so that no request pays it).
    `notify` must return at once; `close` is called when the service stops."""

    def notify(self, repository: str, branch: str) -> None: ...

    def close(self, timeout: float = 10.0) -> None: ...


class Attempts:
    """Runs attempts of `job`, recorded in `history`, followed up by `follow_ups`."""

    def __init__(
        self,
        job: BranchIndexer,
        history: RunHistory,
        follow_ups: FollowUps,
        *,
        worker: str,
        indexed: Indexed | None = None,
    ) -> None:
        self.job = job
        self.history = history
        self.follow_ups = follow_ups
        self.worker = worker
        self.indexed = indexed

    def run(self, job_id: int, attempt: int, repository: str, branch: str, failures: int) -> None:
        """One attempt, from its start in the history to its end there."""
        if _gone(self.job.store, repository):
            log.warning(
                "job %s (%s/%s) dropped: no such repository any more (deleted)",
                job_id,
                repository,
                branch,
            )
            return
        self.history.start(job_id, attempt, repository, branch, self.worker)
        progress = JobProgress(
            lambda snap: self.history.progress(job_id, attempt, snap),
            log=lambda line: log.info("job %s (%s/%s): %s", job_id, repository, branch, line),
        )
        lease = Lease(job_id, attempt, self.history.conninfo)
        try:
            outcome = self.job.run(
                repository, branch, job_id=job_id, progress=progress, lease=lease
            )
        except TakenOver:
            log.warning(
                "job %s (%s/%s) attempt %d: taken over by another attempt while this "
                "worker was silent; stopped without writing",
                job_id,
                repository,
                branch,
                attempt,
            )
            raise
        except BaseException as e:
            self._failed(e, job_id, attempt, repository, branch, failures)
        stats = self._follow(outcome, job_id, repository, branch, failures)
        self.history.end(
            job_id,
            attempt,
            "problems" if outcome.problems else "done",
            error=None,
            tip=outcome.tip,
            result_commit=outcome.indexed,
            stats=stats,
        )
        if self.indexed is not None and outcome.indexed is not None and not outcome.moved:
            self.indexed.notify(repository, branch)

    def _failed(
        self,
        e: BaseException,
        job_id: int,
        attempt: int,
        repository: str,
        branch: str,
        failures: int,
    ) -> NoReturn:
        """A failed attempt: its follow-up queued, its end recorded, JobFailed raised."""
        # the database's failures in one line of ours (the driver's may quote the URL)
        error = describe_failure(e) if isinstance(e, psycopg.Error) else one_line(e)
        tip = self.follow_ups.tip(repository, branch)
        retry = self.follow_ups.after(repository, branch, failures + 1, tip)
        self.history.end(
            job_id,
            attempt,
            "failed",
            error=error,
            tip=None,
            stats={"failures": failures + 1, **retry},
        )
        log.warning(
            "job %s (%s/%s) failed: %s; %s", job_id, repository, branch, error, retry_line(retry)
        )
        log.debug("job %s traceback:\n%s", job_id, traceback.format_exc())
        raise JobFailed(error) from None

    def _follow(
        self, outcome: Outcome, job_id: int, repository: str, branch: str, failures: int
    ) -> dict[str, Any]:
        """The attempt's stats, with the job that follows it (if any)."""
        stats = outcome.stats()
        if outcome.moved:
            # The branch moved on: the push's job normally waits already; make sure.
            stats["next_job"] = self.follow_ups.queue(repository, branch, 0, 0.0)
        elif outcome.problems and outcome.user_problems:
            # Only the pushed files are at fault: the same tip would fail the same way.
            # No follow-up; reconciliation leaves the branch alone at this tip (runs.given_up)
            # and a push starts again. `glossator status` says what to fix.
            # The tip it stops at is the commit-back's when there was one (not moved: the
            # branch is where this job left it).
            at = outcome.indexed or outcome.tip
            stats.update(failures=failures + 1, next_job=None, awaits_push_at=at)
            log.warning(
                "job %s (%s/%s) done with %d problem(s) in the pushed files, first: %s; "
                "not retried until a push",
                job_id,
                repository,
                branch,
                len(outcome.problems),
                outcome.problems[0],
            )
        elif outcome.problems:
            # Not fully indexed: try again later (an LLM back, a service up again).
            # gives up at the branch's tip as this job leaves it (its commit-back, if any)
            retry = self.follow_ups.after(
                repository, branch, failures + 1, outcome.indexed or outcome.tip
            )
            stats.update(failures=failures + 1, **retry)
            log.warning(
                "job %s (%s/%s) done with %d problem(s), first: %s; %s",
                job_id,
                repository,
                branch,
                len(outcome.problems),
                outcome.problems[0],
                retry_line(retry),
            )
        return stats
