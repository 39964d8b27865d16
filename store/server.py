"""What the PostgreSQL server itself says (catalogues and functions, no table of ours).

    ping(conn) / await ping_async(conn)     # the server answers a statement
    await write_probe_async(conn)           # it takes writes, its disk new pages (healthz)
    extensions(conn)                        # created: name → version
    available_extensions(conn)              # installable on this server
    server_clock(conn)                      # (start time, seconds since): a restart shows

Each function runs on the caller's connection.
"""

from __future__ import annotations

from typing import Any

import psycopg

# How long /healthz's write probe may take: a database that needs longer to write one
# page is not healthy either (a round figure, far above the ~5 ms it takes here).
WRITE_PROBE_TIMEOUT_MS = 3000
# Rows the write probe counts: as a function's result they are kept in work_mem (64 kB
# for the probe) and spill to a temporary file beyond it; 5,000 integers write 9 pages
# (EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL 17: "temp written=9").
PROBE_ROWS = 5000


def ping(conn: Any) -> None:
    conn.execute("SELECT 1")


async def ping_async(conn: Any) -> None:
    await conn.execute("SELECT 1")


async def write_probe_async(conn: Any) -> None:
    """Raise a server error unless writes can land: the server takes writes, and the
    disk under the database takes new pages. Leaves nothing behind.

    A database whose disk is full still answers reads; it refuses a write when a file
    must grow (DiskFull, SQLSTATE 53100: "could not extend file"). So the probe makes a
    file grow without touching a table: a query whose rows overflow a 64 kB work_mem
    spills them to a temporary file (~70 kB), put in the database's own tablespace
    (temp_tablespaces emptied for the transaction), where the tables grow; the file is
    gone when the query ends. No catalogue row, no WAL, no transaction id, no lock: a
    table created and rolled back on every call (as before) left dead rows in four
    catalogues and sent every backend an invalidation. Then whether the server takes
    writes at all: a standby in recovery, or a read-only default, refuses every write,
    said as PostgreSQL says it (ReadOnlySqlTransaction). Bounded by
    WRITE_PROBE_TIMEOUT_MS."""
    async with conn.transaction():
        await conn.execute(
            f"SET LOCAL statement_timeout = {WRITE_PROBE_TIMEOUT_MS};"
            " SET LOCAL work_mem = '64kB'; SET LOCAL temp_tablespaces = ''"
        )
        cur = await conn.execute(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on',"
            f" (SELECT count(*) FROM generate_series(1, {PROBE_ROWS}))"
        )
        recovery, read_only, _ = await cur.fetchone()
    if recovery or read_only:
        why = "in recovery (a standby)" if recovery else "read-only (default_transaction_read_only)"
        raise psycopg.errors.ReadOnlySqlTransaction(f"the database server is {why}")


def extensions(conn: Any) -> dict[str, str]:
    """Extensions created in the database: name → version."""
    return {r[0]: r[1] for r in conn.execute("SELECT extname, extversion FROM pg_extension")}


def available_extensions(conn: Any) -> set[str]:
    """Extensions the server could create (installed on its machine)."""
    return {r[0] for r in conn.execute("SELECT name FROM pg_available_extensions")}


def server_clock(conn: Any) -> tuple[object, float]:
    """pg_postmaster_start_time() and the seconds since (a restart changes the first)."""
    row = conn.execute(
        "SELECT pg_postmaster_start_time(),"
        " extract(epoch FROM now() - pg_postmaster_start_time())::float8"
    ).fetchone()
    return (row[0], float(row[1])) if row else (None, float("inf"))
