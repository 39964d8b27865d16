"""The database: the embedded PostgreSQL or a given URL, its pools, its schema.

    db = Database(DatabaseConfig(data_dir, url))   # nothing happens yet: no connection
    db.start()                       # embedded server up (or URL checked), migrations applied
    with db.pool.connection() as conn:   # pgvector registered on every pooled connection
        ...
    apool = await db.open_async_pool()   # same, for the async server and MCP
    db.stop()                        # pools closed; the embedded server stopped

It takes plain values (`DatabaseConfig`), never the settings; its messages name the
variables (GLOSSATOR_DATABASE_URL…) because that is what the user sets. Without a URL
the embedded PostgreSQL (store.embedded) runs in `<data_dir>/postgres`, one process at
a time (a lock: a second one gets `DataDirLocked`, naming the holder and its URL);
`on_new_cluster` rebuilds the rows when a data directory had to be made anew. A URL's
server must be PostgreSQL ≥ 15 with pgvector (`ServerUnsuitable` says what is missing).
Keyword search uses pg_search's BM25 indexes where the server offers it (made at start,
store.pgsearch), else, or with GLOSSATOR_KEYWORD_BACKEND=fts, PostgreSQL's own text
search (store.fts; a warning when pg_search was wanted).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import conninfo as pg_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from core.masking import mask
from store import embedded, fts, migrations
from store.embedded import EmbeddedServer
from store.errors import DatabaseError, DataDirLocked, ServerUnsuitable
from store.pginstall import PgNotInstalled
from store.pgsearch import enable_if_available

log = logging.getLogger(__name__)

MIN_SERVER_VERSION = 150000
# How long a caller waits for a pooled connection before PoolTimeout ("the database
# does not answer"): a request while the server is down fails in this time, not in
# psycopg_pool's default 30 s; a healthy pool of 8 hands one out in milliseconds.
POOL_WAIT_S = 10.0
# How long a pool keeps replacing a lost connection before it gives up (psycopg_pool's
# `reconnect_timeout`, 5 minutes by default). Its attempts are spaced 1, 2, 4 … s, so
# after an outage of a minute the next one was due a minute after the database came
# back, and every caller in between waited POOL_WAIT_S and failed with the database
# up (a job's load did, then its retries: minutes before a push was indexed). With
# 4 s the attempts come at 0, 1, 3 and 4 s, never more than 2 s apart; when they give
# up while a caller waits, `_regrow` starts them again at once, and otherwise the
# next caller does. An attempt on a server that is down is one refused connection.
RECONNECT_S = 4.0
EMBEDDED_DBNAME = "glossator"
REQUIRED_EXTENSIONS = {
    "vector": (
        "pgvector is not installed on that server: install it (Debian/Ubuntu: "
        "apt install postgresql-<major>-pgvector; Docker: the pgvector/pgvector or "
        "paradedb/paradedb image; see https://github.com/pgvector/pgvector#installation)"
    ),
}


def configure_connection(conn: psycopg.Connection) -> None:
    """Pool `configure` hook: register pgvector's types (binary dumper for COPY)."""
    # TypeInfo.fetch runs a query; autocommit leaves the connection idle as the pool wants.
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        register_vector(conn)
    finally:
        conn.autocommit = autocommit


async def configure_async_connection(conn: psycopg.AsyncConnection) -> None:
    autocommit = conn.autocommit
    await conn.set_autocommit(True)
    try:
        await register_vector_async(conn)
    finally:
        await conn.set_autocommit(autocommit)


@dataclass(frozen=True)
class DatabaseConfig:
    """Which database: the server at `url`, or (no url) the embedded one in `data_dir`."""

    data_dir: Path
    url: str | None = None
    keyword_backend: str = "pg_search"  # or "fts" (store.fts only, even where pg_search is)

    @property
    def embedded(self) -> bool:
        return not self.url


@dataclass(frozen=True)
class ServerInfo:
    """What `glossator db status` shows about the server (no secrets)."""

    embedded: bool
    version: str
    address: str  # socket directory or host:port
    data_dir: Path | None
    database: str


class Database:
    """One database for the process: server lifecycle, pools, migrations."""

    def __init__(
        self,
        config: DatabaseConfig,
        *,
        pool_min: int = 1,
        pool_max: int = 8,
        share: bool = False,
        on_new_cluster: Callable[[Database, Path], object] | None = None,
    ) -> None:
        """`share`: when another process (a running `glossator serve`) holds the embedded
        data directory, use its server instead of failing. For commands that only read
        or load (search, mcp, load, status, doctor); never for the server itself.
        `on_new_cluster(db, old)`: called by `start()` (the database started, migrated)
        when the embedded data directory of another PostgreSQL major version was moved
        to `old` (store.embedded); when it returns the move is done with."""
        self.config = config
        self.share = share
        self.on_new_cluster = on_new_cluster
        self.pool_min = pool_min
        self.pool_max = pool_max
        self._conninfo: str | None = None
        self._server: EmbeddedServer | None = None  # when this process runs the embedded one
        self._lock_file: Any = None
        self._pool: ConnectionPool | None = None
        self._async_pool: AsyncConnectionPool | None = None
        # a restart of the embedded server (glossator.supervision.database) and stop()
        # never overlap
        self._lifecycle = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------

    @property
    def embedded(self) -> bool:
        return self.config.embedded

    @property
    def pgdata(self) -> Path:
        return Path(self.config.data_dir).expanduser().resolve() / "postgres"

    @property
    def started(self) -> bool:
        return self._conninfo is not None

    def start(self, *, migrate: bool = True) -> Database:
        """Start the embedded server or check the URL's, then migrate. Idempotent."""
        if self._conninfo is not None:
            return self
        conninfo = self._start_embedded() if self.embedded else (self.config.url or "")
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                check_server(conn, self.embedded)
                if migrate:
                    applied = migrations.migrate(conn)
                    if applied:
                        log.info("database migrated: %s", ", ".join(applied))
                    if self.config.keyword_backend == "fts" or not _enable_pg_search(
                        conn, self.embedded, quiet=self.share
                    ):  # no pg_search: PostgreSQL's own text search (store.fts)
                        fts.enable(conn)
        except psycopg.OperationalError as e:
            self._stop_embedded()
            where = "the embedded PostgreSQL" if self.embedded else mask(conninfo)
            raise DatabaseError(
                f"cannot connect to {where}: {str(e).strip()}. Check GLOSSATOR_DATABASE_URL "
                "(or unset it to use the embedded PostgreSQL)"
            ) from None
        except BaseException:
            self._stop_embedded()
            raise
        self._conninfo = conninfo
        server = self._server
        if server is not None and server.replaced is not None and migrate:
            try:
                if self.on_new_cluster is not None:
                    self.on_new_cluster(self, server.replaced)
            except BaseException:
                self.stop()
                raise
            embedded.rebuilt(self.pgdata)
            server.replaced = None
        return self

    def stop(self) -> None:
        """Close the pools and stop the embedded server (a no-op when not started)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._async_pool is not None:
            log.warning(
                "async pool still open at stop(); close it with await db.close_async_pool()"
            )
        self._conninfo = None
        self._stop_embedded()

    def __enter__(self) -> Database:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connections -------------------------------------------------------------

    @property
    def conninfo(self) -> str:
        if self._conninfo is None:
            raise DatabaseError("the database is not started: call Database.start() first")
        return self._conninfo

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection:
        """A new connection outside the pool, pgvector registered (CLI, tests)."""
        conn = psycopg.connect(self.conninfo, autocommit=autocommit)
        configure_connection(conn)
        return conn

    @property
    def pool(self) -> ConnectionPool:
        """The process's synchronous pool, opened on first use."""
        if self._pool is None:
            self._pool = ConnectionPool(
                self.conninfo,
                min_size=self.pool_min,
                max_size=self.pool_max,
                configure=configure_connection,
                check=ConnectionPool.check_connection,  # _CHECK below
                timeout=POOL_WAIT_S,
                reconnect_timeout=RECONNECT_S,
                reconnect_failed=_regrow,
                name="glossator",
                open=False,
            )
            self._pool.open(wait=True, timeout=30)
        return self._pool

    async def open_async_pool(self) -> AsyncConnectionPool:
        """The async pool (server, MCP); open it inside the event loop that will use it."""
        if self._async_pool is None:
            pool = AsyncConnectionPool(
                self.conninfo,
                min_size=self.pool_min,
                max_size=self.pool_max,
                configure=configure_async_connection,
                check=AsyncConnectionPool.check_connection,  # _CHECK below
                **async_pool_options(),
                name="glossator-async",
                open=False,
            )
            await pool.open(wait=True, timeout=30)
            self._async_pool = pool
        return self._async_pool

    async def close_async_pool(self) -> None:
        if self._async_pool is not None:
            await self._async_pool.close()
            self._async_pool = None

    def info(self) -> ServerInfo:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
            params = conn.info.get_parameters()
        host = params.get("host", "")
        address = host if host.startswith("/") else f"{host}:{params.get('port', '5432')}"
        return ServerInfo(
            embedded=self.embedded,
            version=row[0] if row else "?",
            address=address,
            data_dir=self.pgdata if self.embedded else None,
            database=params.get("dbname", ""),
        )

    def held_by(self) -> DataDirLocked | None:
        """What starting would raise because another process holds the embedded data
        directory, or None (always None for an external PostgreSQL). A look, not a
        hold: the lock is let go at once."""
        if not self.embedded:
            return None
        lock_path = self.pgdata.parent / "postgres.lock"
        if not lock_path.exists():
            return None
        try:
            _lock_data_dir(lock_path, self.pgdata).close()
        except DataDirLocked as e:
            return e
        return None

    # -- embedded server -----------------------------------------------------------

    def _start_embedded(self) -> str:
        pgdata = self.pgdata
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock_file = _lock_data_dir(pgdata.parent / "postgres.lock", pgdata)
        except DataDirLocked as e:
            if self.share and e.url:
                log.info("using the embedded PostgreSQL of process %s (%s)", e.holder, pgdata)
                return e.url
            raise
        if self.share:
            # a command that would have used a running server's: say which one it starts
            # and why, since rows it loads there are seen only by servers on this directory
            log.warning(
                "no `glossator serve` is running on %s: starting its embedded PostgreSQL "
                "for this command (set GLOSSATOR_DATA_DIR to use another one)",
                pgdata.parent,
            )
        try:
            server = EmbeddedServer.start(pgdata)
        except PgNotInstalled:
            self._release_lock()
            raise
        except Exception as e:
            self._release_lock()
            raise DatabaseError(
                f"the embedded PostgreSQL did not start in {pgdata}: {e}. Its log is "
                f"{pgdata / 'log'}; set GLOSSATOR_DATA_DIR elsewhere or GLOSSATOR_DATABASE_URL "
                "to use another server"
            ) from None
        self._server = server
        admin = server.uri("postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DBNAME,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{EMBEDDED_DBNAME}"')  # constant name
        uri = server.uri(EMBEDDED_DBNAME)
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"{os.getpid()}\n{uri}\n")
        self._lock_file.flush()
        log.info("embedded PostgreSQL running in %s", pgdata)
        return uri

    def _stop_embedded(self) -> None:
        with self._lifecycle:
            if self._server is not None:
                self._server.stop()
                self._server = None
                log.info("embedded PostgreSQL stopped (%s)", self.pgdata)
            self._release_lock()

    # -- supervision (glossator.supervision.database) --------------------------------

    @property
    def owns_server(self) -> bool:
        """Whether this process started the embedded server (and may start it again)."""
        return self._server is not None

    def probe(self, timeout: float = 5.0) -> psycopg.Error | None:
        """None when the server answers a query on a new connection, else the error."""
        return probe(self.conninfo, timeout)

    def server_alive(self) -> bool:
        """Whether the embedded server's postmaster still runs."""
        return embedded.postmaster_alive(self.pgdata)

    def restart_embedded(self, timeout: float = 120.0) -> None:
        """Start the embedded server again after it died (store.embedded.restart): same
        data directory and socket, so every URL handed out stays valid. DatabaseError
        (one line) when PostgreSQL refuses to start; the caller retries."""
        with self._lifecycle:
            if self._server is not None and not self.server_alive():
                embedded.restart(self._server, timeout)
                log.info("embedded PostgreSQL started again in %s", self.pgdata)

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None


# _CHECK: the pools test a connection (an empty query) before handing it out, and
# replace it when it is broken: after a restart of the server (a crash, a PANIC,
# glossator.supervision.database) the first request gets a fresh connection, not the error.


def probe(conninfo: str, timeout: float = 5.0) -> psycopg.Error | None:
    """None when the server at `conninfo` answers a query on a new connection (a pooled
    one says nothing of a server that restarted), else the error."""
    try:
        with psycopg.connect(
            conninfo, autocommit=True, connect_timeout=max(2, round(timeout))
        ) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        return e
    return None


def async_pool_options() -> dict[str, Any]:
    """How an async pool of ours waits and reconnects (POOL_WAIT_S, RECONNECT_S); also
    given to procrastinate's (hooks.job_runner), which a worker fetches jobs from."""
    return {
        "timeout": POOL_WAIT_S,
        "reconnect_timeout": RECONNECT_S,
        "reconnect_failed": _regrow_async,
    }


def _regrow(pool: ConnectionPool) -> None:
    """`reconnect_failed`: the pool gave up replacing a connection (RECONNECT_S); when a
    caller waits for one, try again at once rather than leave it to its timeout."""
    if pool.get_stats().get("requests_waiting"):
        pool.check()  # an empty pool starts connecting again


async def _regrow_async(pool: AsyncConnectionPool) -> None:
    if pool.get_stats().get("requests_waiting"):
        await pool.check()


def _enable_pg_search(conn: psycopg.Connection, embedded: bool, *, quiet: bool) -> bool:
    """pg_search's indexes where the server offers it; False when keyword search falls
    back to PostgreSQL's own text search (store.fts), said here. `quiet`: a command
    (share=True) logs the missing extension at INFO, not on every run; the server says
    it at WARNING, and `doctor` and `db status` name the engine."""
    if enable_if_available(conn):
        return True
    offered = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_search'"
    ).fetchone()
    if not offered:
        where = "the embedded PostgreSQL" if embedded else "the GLOSSATOR_DATABASE_URL server"
        log.log(
            logging.INFO if quiet else logging.WARNING,
            "keyword search: %s has no pg_search extension, so keywords are ranked by "
            "PostgreSQL's own text search (postgres-fts: slower on large corpora); for "
            "pg_search use ParadeDB's image (docker-compose.yml) or install pg_search there",
            where,
        )
    # created but refused (privileges…): logged by enable_if_available
    return False


def _lock_data_dir(lock_path: Path, pgdata: Path) -> Any:
    f = open(lock_path, "a+")  # noqa: SIM115 - held open for the server's lifetime
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        lines = f.read().splitlines()
        f.close()
        holder = f"process {lines[0]}" if lines else "another process"
        hint = (
            f" To share its server, export GLOSSATOR_DATABASE_URL='{lines[1]}'."
            if len(lines) > 1
            else ""
        )
        error = DataDirLocked(
            f"the embedded PostgreSQL data directory {pgdata} is in use by {holder} "
            f"(lock {lock_path}). Stop that process (e.g. the running `glossator serve`), "
            f"or set GLOSSATOR_DATA_DIR to another directory.{hint}"
        )
        error.holder = lines[0] if lines else None
        error.url = lines[1] if len(lines) > 1 else None
        raise error from None
    return f


def check_server(conn: psycopg.Connection, embedded: bool = False) -> None:
    """Refuse a PostgreSQL older than 15 or without pgvector, saying how to fix it."""
    if conn.info.server_version < MIN_SERVER_VERSION:
        version = conn.execute("SELECT current_setting('server_version')").fetchone()
        raise ServerUnsuitable(
            f"PostgreSQL {version[0] if version else '?'} is too old: Glossator needs 15 or newer "
            "(or unset GLOSSATOR_DATABASE_URL to use the embedded PostgreSQL 17)"
        )
    names = list(REQUIRED_EXTENSIONS)
    rows = conn.execute(
        "SELECT name FROM pg_available_extensions WHERE name = ANY(%s)", (names,)
    ).fetchall()
    have = {r[0] for r in rows}
    for name in names:
        if name not in have:
            where = "the embedded PostgreSQL" if embedded else "the GLOSSATOR_DATABASE_URL server"
            raise ServerUnsuitable(
                f"extension {name!r} is missing on {where}: {REQUIRED_EXTENSIONS[name]}"
            )


def with_dbname(conninfo: str, dbname: str) -> str:
    """The same server, another database (tests, `glossator db` tools)."""
    return pg_conninfo.make_conninfo(conninfo, dbname=dbname)
