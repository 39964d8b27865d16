"""store.db and store.migrations against a real PostgreSQL."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector import Vector

from store import fts, migrations
from store.db import Database, DatabaseConfig
from store.errors import DataDirLocked, SchemaTooNew
from store.keyword import choose_backend


def test_migrations_rerun_is_noop(conn: psycopg.Connection) -> None:
    conn.autocommit = True
    before = conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
    assert [v for v, _ in before] == [m.version for m in migrations.available()]
    assert migrations.migrate(conn) == []
    assert conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall() == before


def test_fresh_database_gets_every_migration(pg_server, db_url: str) -> None:
    name = "glossator_test_fresh"
    with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}"')
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(pg_server.url(name), autocommit=True) as c:
            applied = migrations.migrate(c)
            assert applied == [m.name for m in migrations.available()]
            assert c.execute("SELECT to_regclass('hierarchical_content_nodes')").fetchone()[0]
    finally:
        with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_an_old_text_of_a_migration_is_up_to_date_without_a_warning(
    conn: psycopg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    """001 and 003 learnt to work without unaccent: a database that applied their
    earlier text (same effect with unaccent) is up to date, no warning."""
    conn.autocommit = True
    for version, old in migrations.EQUIVALENT.items():
        conn.execute(
            "UPDATE schema_migrations SET checksum = %s WHERE version = %s", (min(old), version)
        )
    with caplog.at_level("WARNING", logger="store.migrations"):
        assert migrations.migrate(conn) == []
    assert "changed after it was applied" not in caplog.text
    conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
    with caplog.at_level("WARNING", logger="store.migrations"):
        migrations.migrate(conn)
    assert "001_init.sql changed after it was applied" in caplog.text


@pytest.mark.pg_backends("postgres")
def test_pg_search_backend_asked_of_a_server_without_it(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The default (pg_search) on a server without it (PostgreSQL 18 here, a managed
    service for real) starts with a warning saying what ranks keywords instead."""
    config = DatabaseConfig(tmp_path / "data", db_url, keyword_backend="pg_search")
    with (
        caplog.at_level(logging.WARNING, logger="store.db"),
        Database(config) as db,
        db.connect() as c,
    ):
        assert choose_backend(c).name == "postgres-fts"
        assert fts.index_exists(c)  # its GIN index made at start
    [line] = [r.getMessage() for r in caplog.records if "pg_search" in r.getMessage()]
    assert "has no pg_search extension" in line and "postgres-fts" in line and "ParadeDB" in line


def test_newer_database_is_refused(conn: psycopg.Connection) -> None:
    conn.autocommit = True
    future = migrations.code_version() + 1
    conn.execute(
        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
        (future, f"{future:03d}_future.sql", "x"),
    )
    with pytest.raises(SchemaTooNew, match=rf"version {future}.*upgrade Glossator"):
        migrations.migrate(conn)


def test_database_with_url_pools_and_registers_vector(database: Database) -> None:
    with database.pool.connection() as c:
        row = c.execute("SELECT %s::vector(3)", (Vector([1.0, 2.0, 3.0]),)).fetchone()
        assert row[0].to_list() == [1.0, 2.0, 3.0]
    info = database.info()
    assert not info.embedded and info.version.startswith(("15", "16", "17", "18"))
    assert database.start() is database  # idempotent


async def test_async_pool_registers_vector(database: Database) -> None:
    pool = await database.open_async_pool()
    try:
        async with pool.connection() as c:
            cur = await c.execute("SELECT '[1,2]'::vector")
            row = await cur.fetchone()
            assert row[0].to_list() == [1.0, 2.0]
    finally:
        await database.close_async_pool()


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A directory outside pytest's tmp root: a concurrent pytest session resets that root
    to mode 0700, which the embedded server's own user (it drops root) could not cross."""
    path = Path(tempfile.mkdtemp(prefix="glossator-test-embedded-"))
    try:
        yield path
    finally:
        # a failed test may leave its server running: stop it (fast shutdown) by its pid
        for pidfile in path.glob("**/postmaster.pid"):
            with contextlib.suppress(ValueError, OSError):
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGINT)
        shutil.rmtree(path, ignore_errors=True)


def test_embedded_start_stop_and_lock(private_dir: Path) -> None:
    tmp_path = private_dir
    config = DatabaseConfig(data_dir=tmp_path / "data")
    db = Database(config)
    db.start()
    try:
        assert db.start() is db  # idempotent
        info = db.info()
        assert info.embedded and info.data_dir == tmp_path.resolve() / "data" / "postgres"
        with db.pool.connection() as c:
            assert c.execute("SELECT count(*) FROM hierarchical_content_nodes").fetchone() == (0,)
        # another process wanting the same data dir gets a clear error
        other = subprocess.run(
            [sys.executable, "-c", _START_OTHER, str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 3, other.stderr
        assert "is in use by process" in other.stdout and "GLOSSATOR_DATABASE_URL=" in other.stdout
    finally:
        db.stop()
    db.stop()  # a second stop is a no-op
    # restart on the same data dir: the data survives, migrations are a no-op
    with Database(config) as again, again.connect() as c:
        assert c.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] >= 1


_START_OTHER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from store.db import Database, DatabaseConfig
    from store.errors import DataDirLocked
    try:
        Database(DatabaseConfig(data_dir=Path(sys.argv[1]))).start()
    except DataDirLocked as e:
        print(e)
        sys.exit(3)
    """
)


def test_lock_held_by_other_process_is_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a+'); fcntl.flock(f, fcntl.LOCK_EX);"
            "f.write('4242\\n'); f.flush(); print('locked', flush=True); time.sleep(300)",
            str(data / "postgres.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        with pytest.raises(DataDirLocked, match=r"in use by process 4242"):
            Database(DatabaseConfig(data_dir=data)).start()
        # fails fast: never waits for the holder (killed below, not before 300 s), nor
        # starts a server; the bound is generous for a loaded machine, far below 300 s
        assert time.monotonic() - start < 30
        assert not (data / "postgres").exists()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_two_sessions_migrating_at_once_apply_each_migration_once(pg_server) -> None:
    name = pg_server.create_database(template="template1")  # empty: nothing applied yet
    url = pg_server.url(name)
    results: list[list[str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            with psycopg.connect(url, autocommit=True) as c:
                barrier.wait(timeout=120)  # both connected: generous, a loaded machine
                results.append(migrations.migrate(c))
        except BaseException as e:  # reported below: a thread's exception is not the test's
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)  # every migration from an empty database, on a loaded machine
        assert not any(t.is_alive() for t in threads), "a migrating session never finished"
        assert not errors, errors
        names = [m.name for m in migrations.available()]
        assert sorted(results, key=len) == [[], names]  # one did it all, the other nothing
        with psycopg.connect(url) as c:
            assert c.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(names),)
    finally:
        pg_server.drop_database(name)


def test_embedded_server_left_by_a_killed_process_is_reused_then_stopped(
    private_dir: Path,
) -> None:
    config = DatabaseConfig(data_dir=private_dir / "data")
    pgdata = Database(config).pgdata
    victim = subprocess.Popen(
        [sys.executable, "-c", _START_AND_WAIT, str(private_dir / "data")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stdout is not None and victim.stdout.readline().strip() == "ready"
        victim.kill()  # SIGKILL: no cleanup; its server runs on, its pid stays listed
        victim.wait(timeout=30)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
        if victim.stdout is not None:
            victim.stdout.close()
    assert (pgdata / "postmaster.pid").exists()
    with Database(config) as again, again.connect() as c:  # lock freed by the kernel
        assert c.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] >= 1
    assert not (pgdata / "postmaster.pid").exists()  # stopped, not left running


_START_AND_WAIT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from store.db import Database, DatabaseConfig
    Database(DatabaseConfig(data_dir=Path(sys.argv[1]))).start()
    print("ready", flush=True)
    time.sleep(60)
    """
)


def test_share_uses_the_running_server_and_leaves_it_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = DatabaseConfig(data_dir=tmp_path / "data")
    # no server on that directory: a command says which PostgreSQL it starts, and why
    with caplog.at_level(logging.WARNING, logger="store.db"), Database(config, share=True):
        pass
    [notice] = [r.getMessage() for r in caplog.records if r.name == "store.db"]
    assert f"no `glossator serve` is running on {(tmp_path / 'data').resolve()}" in notice
    caplog.clear()
    with Database(config) as owner:
        with pytest.raises(DataDirLocked, match="GLOSSATOR_DATABASE_URL") as e:
            Database(config).start()
        assert e.value.url == owner.conninfo
        with caplog.at_level(logging.WARNING, logger="store.db"):
            guest = Database(config, share=True).start()
        assert guest.conninfo == owner.conninfo
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # it attached
        with guest.connect() as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        guest.stop()  # a guest never stops the owner's server
        with owner.connect() as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
