"""What the PostgreSQL server itself says (catalogues and functions, no table of ours).

    ping(conn) / await ping_async(conn)     # the server answers a statement
    await write_probe_async(conn)           # it can also write a new page (healthz)
    extensions(conn)                        # created: name → version
    available_extensions(conn)              # installable on this server
    server_clock(conn)                      # (start time, seconds since): a restart shows

Each function runs on the caller's connection.
"""

from __future__ import annotations

import secrets
from typing import Any

from psycopg import sql

# How long /healthz's write probe may take: a database that needs longer to write one
# page is not healthy either (a round figure, far above the ~10 ms it takes here).
WRITE_PROBE_TIMEOUT_MS = 3000


def ping(conn: Any) -> None:
    conn.execute("SELECT 1")


async def ping_async(conn: Any) -> None:
    await conn.execute("SELECT 1")


async def write_probe_async(conn: Any) -> None:
    """Raise the server's error unless it can write a new page, then leave no trace.

    A database whose disk is full still answers reads, and an UPDATE of a row that fits
    in its page, or an INSERT into a temporary table (local buffers, written late), may
    pass; a full disk is met when a relation grows (DiskFull, SQLSTATE 53100: "could not
    extend file"). So: a new table (a new file), one row in it (its first page, in
    shared buffers: the file extended now), all rolled back. Bounded by
    WRITE_PROBE_TIMEOUT_MS; the name is random, so probes side by side never wait for
    each other."""
    name = sql.Identifier(f"glossator_write_probe_{secrets.token_hex(6)}")
    async with conn.transaction(force_rollback=True):
        await conn.execute(f"SET LOCAL statement_timeout = {WRITE_PROBE_TIMEOUT_MS}")
        await conn.execute(sql.SQL("CREATE UNLOGGED TABLE {} (x integer)").format(name))
        await conn.execute(sql.SQL("INSERT INTO {} VALUES (1)").format(name))


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
