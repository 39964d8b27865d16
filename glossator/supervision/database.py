"""The database of `glossator serve`, watched: the embedded PostgreSQL started again
when it dies, and one line saying what is wrong while it is down.

    supervisor = DatabaseSupervisor(db)   # a started store.db.Database
    supervisor.start()                    # a task in the running event loop
    supervisor.problem                    # None while the database answers, else one line
    await supervisor.stop()

Every `interval_s` it asks the server for `SELECT 1` on a new connection, as a
client would (a pooled connection says nothing about a server that restarted).
When the embedded PostgreSQL's postmaster is gone (killed, out of memory, a PANIC
whose crash recovery failed, a full disk) it runs `pg_ctl start` again on the same
data directory and socket, so the URL the pools, the worker and the hooks hold
stays valid (store.embedded.restart). Failed attempts are spaced 1, 2, 4, then
every 5 s: PostgreSQL refuses to start while a process of the dead server still
holds its shared memory, or while its disk is full, and neither lasts. A server
given by GLOSSATOR_DATABASE_URL is only watched: someone else runs it.

The log gets one line per change of state (down and why, a new reason, back and
after how long), never the driver's message (it may quote the connection string);
the data directory's path is named there and in no client-facing line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path

from store.db import Database
from store.errors import DatabaseError, describe_failure

log = logging.getLogger(__name__)

INTERVAL_S = 1.0  # a probe is one local connection: ~1 ms of the server's time
# First and longest wait between two failed restarts. The longest is what everyone
# waits, at worst, after the obstacle is gone (a backend of the dead server exits, a
# file is deleted) before the database is back: with 30 s, 29 s of a 93 s outage in
# tests/test_db_supervisor.py came after its backend had exited. An attempt that fails
# is one `pg_ctl start` that PostgreSQL refuses in ~0.1 s (measured there; its log says
# why), so one every 5 s costs nothing while it lasts.
BACKOFF_S = (1.0, 5.0)
PROBE_TIMEOUT_S = 5.0
# Free space under which a failure is the disk's: PostgreSQL writes its WAL in
# segments of 16 MiB (its default wal_segment_size), and a server that cannot make
# the next one PANICs and cannot finish its crash recovery.
DISK_LOW_BYTES = 16 * 1024 * 1024

DISK_FULL = (
    "the database's disk is full: free space where Glossator keeps its data "
    "(GLOSSATOR_DATA_DIR); the server starts the database again by itself once there is room"
)


def _restarting(attempts: int) -> str:
    tried = f" ({attempts} attempt{'s' if attempts > 1 else ''} so far)" if attempts else ""
    return (
        "the embedded PostgreSQL stopped (killed or crashed): glossator serve is "
        f"starting it again{tried}; retry in a moment, and if it lasts see the server's log"
    )


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def explain(error: BaseException, pgdata: Path | None) -> str:
    """A database failure in one line; the disk's when the embedded server's data
    directory `pgdata` (None: a URL's server, whose disk we cannot see) is full."""
    if pgdata is not None:
        free = free_bytes(pgdata)
        if free is not None and free < DISK_LOW_BYTES:
            return DISK_FULL
    return describe_failure(error)


class DatabaseSupervisor:
    def __init__(
        self,
        db: Database,
        *,
        interval_s: float = INTERVAL_S,
        backoff_s: tuple[float, float] = BACKOFF_S,
        restart_timeout_s: float = 120.0,
    ) -> None:
        self.db = db
        self.interval_s = interval_s
        self.backoff_s = backoff_s
        self.restart_timeout_s = restart_timeout_s
        self.problem: str | None = None  # what a client is told while the database is down
        self.restarts = 0  # successful restarts since start (status, tests)
        self._down_since: float | None = None
        self._attempts = 0
        self._next_attempt = 0.0
        self._delay = backoff_s[0]
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="glossator-db-supervisor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        # a restart in progress holds Database._lifecycle: db.stop() waits for it

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the watch itself must not die; say it once
                self._set_problem(f"the database could not be checked ({type(e).__name__})")
            await asyncio.sleep(self.interval_s)

    # -- one round ----------------------------------------------------------------

    async def check(self) -> None:
        """Probe once; start the embedded server again when it is gone and it is time."""
        error = await asyncio.to_thread(self.db.probe, PROBE_TIMEOUT_S)
        if error is None:
            self._back()
            return
        owned = self.db.embedded and self.db.owns_server
        if owned and not await asyncio.to_thread(self.db.server_alive):
            await self._restart()
            return
        self._set_problem(DISK_FULL if self._disk_low() else describe_failure(error))

    async def _restart(self) -> None:
        now = time.monotonic()
        if now < self._next_attempt:
            self._set_problem(DISK_FULL if self._disk_low() else _restarting(self._attempts))
            return
        if self._down_since is None:  # first seen now: say so before the attempt
            self._set_problem(_restarting(0))
        try:
            await asyncio.to_thread(self.db.restart_embedded, self.restart_timeout_s)
        except DatabaseError as e:
            self._attempts += 1
            self._next_attempt = time.monotonic() + self._delay
            if self._attempts == 1:
                log.warning("%s; trying again with backoff up to %.0f s", e, self.backoff_s[1])
            self._delay = min(self._delay * 2, self.backoff_s[1])
            self._set_problem(DISK_FULL if self._disk_low() else _restarting(self._attempts))
            return
        self.restarts += 1
        error = await asyncio.to_thread(self.db.probe, PROBE_TIMEOUT_S)
        if error is None:
            self._back()
        else:  # started but not answering yet (crash recovery): the next round sees
            self._set_problem(describe_failure(error))

    # -- state ----------------------------------------------------------------------

    def _disk_low(self) -> bool:
        if not self.db.embedded:
            return False  # its disk is not ours to see
        free = free_bytes(self.db.pgdata)
        return free is not None and free < DISK_LOW_BYTES

    def _set_problem(self, line: str) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
        # "N attempts so far" changes every round: log a change of kind, not of count
        if self.problem is None or _kind(self.problem) != _kind(line):
            where = f" (data directory {self.db.pgdata})" if self.db.embedded else ""
            log.warning("database down: %s%s", line, where)
        self.problem = line

    def _back(self) -> None:
        if self._down_since is not None:
            log.warning(
                "database back after %.0f s%s",
                time.monotonic() - self._down_since,
                f" ({self.restarts} restart(s) so far)" if self.restarts else "",
            )
        self.problem = None
        self._down_since = None
        self._attempts = 0
        self._next_attempt = 0.0
        self._delay = self.backoff_s[0]


def _kind(line: str) -> str:
    return line.split(":", 1)[0]
