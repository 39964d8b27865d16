"""A benchmark stopped by SIGTERM or Ctrl-C stops the servers it started.

    from bench.exiting import exit_on_signals
    exit_on_signals()                  # first thing in main()

Python's default SIGTERM ends the process at once, without running `finally` blocks
or `with` exits, so a `glossator serve` a bench started (tests.gitserver_support's
ServeProcess gives it a session of its own, out of reach of the terminal's signals)
or an embedded PostgreSQL outlived it. Here SIGTERM and SIGINT raise SystemExit
(status 128 + the signal, as a shell reports a killed process) wherever the bench is,
so the cleanup it already has runs. A second signal meanwhile is ignored: it would
cut that cleanup short; each server's stop is bounded by its own timeouts.
"""

from __future__ import annotations

import signal
from types import FrameType


def exit_on_signals() -> None:
    """SIGTERM and SIGINT raise SystemExit(128 + signal) in the main thread."""

    def leave(signum: int, frame: FrameType | None) -> None:
        for each in (signal.SIGTERM, signal.SIGINT):
            signal.signal(each, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    for each in (signal.SIGTERM, signal.SIGINT):
        signal.signal(each, leave)
