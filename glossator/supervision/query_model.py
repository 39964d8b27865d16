"""The query model, loaded when `glossator serve` starts, in the background.

    model = QueryModel(lambda: warm_query_model(settings, service))
    model.start()                    # the lifespan: a daemon thread; git answers meanwhile
    model.state                      # "loading", "ready" or "failed: <why>" (/readyz)

Loaded at the first search instead, the model made that search wait 2-7 s (6.8 s
on a loaded two-core machine, later ones 27-165 ms). The server does not wait
for it: clones, pushes and BM25 searches are answered meanwhile, and `/readyz` says
when it is in. A load that fails is said once and left to the first search, which
tries again and reports its own error (a remote provider out of reach).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class QueryModel:
    """One background load of the query model (`load`), and where it stands."""

    def __init__(self, load: Callable[[], object]) -> None:
        self._load = load
        self._state = "loading"
        self._seconds: float | None = None
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> str:
        return self._state

    @property
    def ready(self) -> bool:
        return self._state == "ready"

    @property
    def seconds(self) -> float | None:
        """How long the load took, once done."""
        return self._seconds

    def start(self) -> None:
        # a daemon: a server stopped during the load does not wait for it
        self._thread = threading.Thread(target=self._run, name="query-model", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the load is over (ready or failed) within `timeout` seconds."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._state != "loading"

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self._load()
        except Exception as e:  # said here; the first search tries again and says why
            self._state = f"failed: {type(e).__name__}: {e}".splitlines()[0]
            log.warning("the query model did not load (%s); the first search will retry", e)
            return
        finally:
            self._seconds = time.perf_counter() - started
        self._state = "ready"
        log.info("query model ready in %.1f s", self._seconds)
