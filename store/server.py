"""What the PostgreSQL server itself says (catalogues and functions, no table of ours).

    ping(conn) / await ping_async(conn)     # the server answers a statement
    extensions(conn)                        # created: name → version
    available_extensions(conn)              # installable on this server
    server_clock(conn)                      # (start time, seconds since): a restart shows

Each function runs on the caller's connection.
"""

from __future__ import annotations

from typing import Any


def ping(conn: Any) -> None:
    conn.execute("SELECT 1")


async def ping_async(conn: Any) -> None:
    await conn.execute("SELECT 1")


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
