"""An attempt's lease on its job: checked under the branch's writer lock before each write.

    lease = Lease(job_id=42, attempt=0, conninfo=url)
    with pool.connection() as conn, conn.transaction():
        lock_branch(conn, "livre", "main", lease)  # TakenOver: nothing written, undone
        ...                        # the writes
    lease.check()                  # before the commit-back moves the branch (a connection of its own)

A worker whose heartbeat is older than STALLED_S is taken for dead and its job put
back in the queue (hooks.maintenance); but a live worker can be late (stopped,
suspended, a host at load 30), and wake up while another worker runs its job
again. Without a lease both attempts would write: two loads, two commit-backs,
the job ended twice. The queue's own row says which attempt runs the job
(procrastinate adds one to `attempts` when it puts a job back), and every write of
a job (rows before vectors, the load, the commit-back's move) happens under the
branch's writer lock (store.commits.lock_branch), which the other attempt's writes
take too: checked there, under that lock, the old attempt's write and the new
one's cannot interleave. The old attempt stops at its next write with TakenOver
and writes nothing more; its job's end is the new attempt's (JobRunner's
finish_job is fenced the same way: store.jobqueue.finish_if_current).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from store import commits, connections
from store.jobqueue import attempt_is_current


class TakenOver(RuntimeError):
    """This attempt's job was put back in the queue and runs again elsewhere: stop, write nothing."""


@dataclass(frozen=True)
class Lease:
    """Attempt `attempt` (procrastinate's `attempts` when the job was fetched) of job `job_id`."""

    job_id: int
    attempt: int
    conninfo: str

    def check(self, conn: Any = None) -> None:
        """Raise TakenOver unless the queue still runs this job at this attempt; on `conn`
        (the caller's transaction, under the branch's writer lock), or a connection of its own."""
        if conn is not None:
            current = attempt_is_current(conn, self.job_id, self.attempt)
        else:
            with connections.connect(self.conninfo, autocommit=True) as own:
                current = attempt_is_current(own, self.job_id, self.attempt)
        if not current:
            raise TakenOver(
                f"job {self.job_id} was put back in the queue while attempt {self.attempt} "
                "ran (its worker's heartbeat was late: stopped, suspended or starved) and "
                "another attempt runs it now: this one stops without writing"
            )


def lock_branch(conn: Any, repository: str, branch: str, lease: Lease | None) -> None:
    """The branch's writer lock (store.commits.lock_branch), then `lease` checked under
    it: another attempt's writes wait for this transaction's. No lease (a job run
    outside the queue): the lock alone."""
    commits.lock_branch(conn, repository, branch)
    if lease is not None:
        lease.check(conn)
