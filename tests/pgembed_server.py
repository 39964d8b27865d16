"""A throwaway embedded PostgreSQL 17 (pg_search, pgvector) for tests and benches.

    with PgembedServer.start() as server:   # initdb + pg_ctl start in a temporary directory
        server.uri("postgres")             # postgresql://postgres@/postgres?host=…

The production server (store.embedded, the binaries `make setup` installed:
store.pginstall), with durability off (fsync, synchronous_commit and full-page
writes: a throwaway cluster, and every test's time) and its directory removed at stop.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from store.embedded import EmbeddedServer

THROWAWAY = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    # the xdist workers of a test run share one cluster (tests/plugins/shared.py), each
    # test's `glossator serve` with its pools: PostgreSQL's default 100 is too tight
    "max_connections": "200",
}


class PgembedServer:
    """One running cluster in `directory` (data in `data/`)."""

    def __init__(self, server: EmbeddedServer, directory: Path) -> None:
        self.server = server
        self.directory = directory
        self.data = server.pgdata

    @classmethod
    def start(cls, directory: Path | None = None) -> PgembedServer:
        # a short path: a Unix socket's path is limited to ~100 bytes
        directory = directory or Path(tempfile.mkdtemp(prefix="glossator-pgs-"))
        directory.chmod(0o755)  # its system user (as root) goes through it to the data
        try:
            server = EmbeddedServer.start(directory / "data", options=THROWAWAY)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return cls(server, directory)

    def uri(self, dbname: str = "postgres") -> str:
        return self.server.uri(dbname)

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PgembedServer:
        return self

    def __exit__(
        self, exc: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
