"""store.server's write probe (/healthz) against a real PostgreSQL: it writes a page
and leaves nothing behind; a server that refuses writes is said. A full disk is
tests/test_e2e_disk_full.py's (a tmpfs tablespace filled under a running server)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from store.errors import describe_failure
from store.server import write_probe_async


def probe(url: str, *, setup: str | None = None) -> None:
    async def run() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            if setup:
                await conn.execute(setup)
            await write_probe_async(conn)
            # A backend reports its counts at idle points, at most once a second, and
            # at exit, which races the reader; ask for a flush, done before this
            # statement's ReadyForQuery, so the watcher sees the probe's temporary file.
            await conn.execute("SELECT pg_stat_force_next_flush()")

    asyncio.run(run())


def counters(conn: psycopg.Connection) -> tuple[int, int]:
    """This database's temporary files, and rows ever inserted into pg_class, as the
    statistics say once this backend's pending counts are flushed."""
    conn.execute("SELECT pg_stat_force_next_flush()")  # flushed as that statement ends
    conn.execute("SELECT pg_stat_clear_snapshot()")
    (temp_files,) = conn.execute(
        "SELECT temp_files FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    (inserted,) = conn.execute(
        "SELECT n_tup_ins FROM pg_stat_sys_tables WHERE relname = 'pg_class'"
    ).fetchone()
    return temp_files, inserted


def test_the_write_probe_writes_a_file_and_leaves_no_trace(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as watch:
        before = counters(watch)
        relations = watch.execute("SELECT count(*) FROM pg_class").fetchone()
        for _ in range(3):
            probe(db_url)
        files, inserted = counters(watch)
        # each probe made the disk take a file (the temporary one its rows spilled to)
        assert files >= before[0] + 3
        # and touched no catalogue: no table made and rolled back, nothing to vacuum
        assert inserted == before[1]
        assert watch.execute("SELECT count(*) FROM pg_class").fetchone() == relations


def test_a_server_that_refuses_writes_fails_the_probe_in_one_line(db_url: str) -> None:
    """Read-only by default (as a standby is read-only): every write would be refused."""
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as refused:
        probe(db_url, setup="SET default_transaction_read_only = on")
    said = describe_failure(refused.value)
    assert said.startswith("the database refuses writes") and "\n" not in said, said
