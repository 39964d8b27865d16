"""Searches first: `glossator serve` stops its indexing worker while a search runs.

    first = SearchFirst()                          # one per server (the composition root's)
    service = SearchService(pool, …, foreground=first.search)
    first.attach(lambda: supervisor.pid)           # once the worker process runs
    with first.search(): …                         # what each search runs in
    first.detach()                                 # the worker continued, before it is stopped

Why: on the 2-core host, the same searches over the same rows took 1.09-1.12× as long
with a book being embedded beside them as with the worker stopped (their query's
encoding 1.2×), although the job's threads are niced by 10, and SCHED_IDLE did no better
on a quiet machine (bench/RESULTS.md, "search while a book embeds"): a scheduling policy
gives a search CPU time, not the cores' caches and memory bandwidth a job streaming its
encoder's weights takes, and a query encoded on two threads waits for both at every
node. A job that does not run while a search does leaves it all of them.
The worker is a child process of the server (glossator.supervision.worker_process), so
the server stops it with SIGSTOP when the first search in flight begins and continues
it with SIGCONT when the last one ends: no cooperation of the job's code is needed, the
stop takes effect at once (an engine batch under way, ~0.1-1 s, is frozen where it is),
and nothing the worker does changes, only when it runs.

Bounded, so that searches never starve indexing, nor a search hold the worker for
long: the worker is continued after `max_pause_s` stopped however many searches are in
flight, and then runs at least `min_run_s` before it is stopped again (`MAX_PAUSE_S`,
`MIN_RUN_S`). A server searched back to back indexes in the gaps between searches.
The worker's PostgreSQL backend is not stopped: a statement it runs ends, and a
transaction it holds open only waits (searches take no lock the job holds).
Only a worker this server started and supervises is stopped: a `serve --worker thread`
(the server's own process) and `glossator worker` processes elsewhere are not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

# The longest a worker stays stopped at a stretch, however many searches are in flight:
# a search takes 30-60 ms on the idle 2-core host (p95 ~120 ms; bench/mcp_latency.py), so
# one second covers any search that is not itself stuck.
MAX_PAUSE_S = 1.0
# After a stop that ran its full length, the worker runs at least this long: under
# searches that overlap without end it still gets a fifth of the time.
MIN_RUN_S = 0.25


class SearchFirst:
    """Stops the process `attach`'s `pid()` names while searches run (module docstring)."""

    def __init__(
        self,
        *,
        max_pause_s: float = MAX_PAUSE_S,
        min_run_s: float = MIN_RUN_S,
        send: Callable[[int, int], None] = os.kill,
    ) -> None:
        """`send(pid, signal)`: how a signal is sent (os.kill)."""
        self.max_pause_s = max_pause_s
        self.min_run_s = min_run_s
        self._send = send
        self._lock = threading.Condition()
        self._pid: Callable[[], int | None] | None = None
        self._searches = 0  # in flight
        self._stopped: int | None = None  # the process stopped, while it is
        self._since = 0.0  # when it was stopped
        self._not_before = 0.0  # no stop before (after a stop that ran its full length)
        self._watchdog: threading.Thread | None = None
        self.pauses = 0  # stops so far (tests, the log at detach)
        self.paused_s = 0.0  # time stopped so far

    def attach(self, pid: Callable[[], int | None]) -> None:
        """From now on, stop the process `pid()` names (None: none now) during searches."""
        with self._lock:
            self._pid = pid
            if self._watchdog is None:
                self._watchdog = threading.Thread(
                    target=self._watch, name="glossator-search-first", daemon=True
                )
                self._watchdog.start()

    def detach(self) -> None:
        """Continue the process if it is stopped, and stop no more (before it is stopped
        for good: a stopped process does not act on SIGTERM until continued)."""
        with self._lock:
            self._pid = None
            self._continue()
            self._lock.notify_all()
            watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.join(timeout=5)
        if self.pauses:
            log.info(
                "searches stopped the indexing worker %d times, %.1f s in all",
                self.pauses,
                self.paused_s,
            )

    @contextlib.contextmanager
    def search(self) -> Iterator[None]:
        """What a search runs in: the worker stopped from the first search in flight to
        the last (within the bounds)."""
        with self._lock:
            self._searches += 1
            if self._searches == 1 and not self._stop():
                self._lock.notify_all()  # a stop not allowed yet: the watchdog makes it later
        try:
            yield
        finally:
            with self._lock:
                self._searches -= 1
                if self._searches == 0:
                    self._continue()

    @property
    def stopped(self) -> int | None:
        """The process stopped now, if one is."""
        with self._lock:
            return self._stopped

    def _stop(self) -> bool:
        """Stop the process, if one is attached, running and may be stopped now (the lock
        held); whether it is stopped now."""
        if self._stopped is not None:
            return True
        if self._pid is None or time.monotonic() < self._not_before:
            return False
        pid = self._pid()
        if pid is None:
            return False
        try:
            self._send(pid, signal.SIGSTOP)
        except ProcessLookupError:  # it ended; the supervisor starts another
            return False
        self._stopped, self._since = pid, time.monotonic()
        self.pauses += 1
        self._lock.notify_all()  # the watchdog times the stop
        return True

    def _continue(self) -> None:
        """Continue the stopped process, if any (the lock held)."""
        if self._stopped is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._send(self._stopped, signal.SIGCONT)
        self.paused_s += time.monotonic() - self._since
        self._stopped = None

    def _watch(self) -> None:
        """Continue a worker stopped `max_pause_s`; stop it again `min_run_s` later if
        searches are still in flight."""
        with self._lock:
            while self._pid is not None:
                now = time.monotonic()
                if self._stopped is not None:
                    due = self._since + self.max_pause_s
                    if now < due:
                        self._lock.wait(due - now)
                        continue
                    self._continue()
                    self._not_before = now + self.min_run_s
                elif self._searches and now >= self._not_before:
                    if not self._stop():
                        self._lock.wait(self.max_pause_s)  # no process to stop now
                elif self._searches:
                    self._lock.wait(self._not_before - now)
                else:
                    self._lock.wait()  # a search's stop wakes it
