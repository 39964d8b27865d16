"""Where a job runs: a fresh, niced thread of its own, named after its process.

in_job_thread("glossator-job-42", JOB_NICE, lambda: indexer.run(...))
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable

# Jobs run at a lower CPU priority than the threads serving searches and pushes
# (Linux: a thread's nice value; the embedder's OpenMP threads it starts inherit
# it): on a 2-core machine a book being embedded must not starve queries.
JOB_NICE = 10


def in_job_thread(name: str, nice: int, work: Callable[[], None]) -> None:
    """Run `work` in a fresh thread whose priority is lowered, and wait for it.

    A fresh thread, not procrastinate's: it runs sync tasks on the event loop's
    shared executor, whose threads also serve the server, and a nice value can
    only be raised (never lowered back without privileges)."""
    failure: list[BaseException] = []

    def target() -> None:
        if nice and hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
            tid = threading.get_native_id()
            with contextlib.suppress(OSError):  # nice is relative to the server's own
                os.setpriority(
                    os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice)
                )
        try:
            work()
        except BaseException as e:
            failure.append(e)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def worker_name(pid: int | None = None) -> str:
    """`<host>:<pid>`: which process ran an attempt (glossator_job_runs.worker); this
    process's, or process `pid`'s on this host."""
    return f"{socket.gethostname()}:{os.getpid() if pid is None else pid}"
