"""Errors of the PostgreSQL store; each says how to fix the problem.

GlossatorError                      (core.errors)
 └── DatabaseError                  the database cannot be used as configured
      ├── DataDirLocked             another process runs the embedded server of this data dir
      ├── ServerUnsuitable          too old a PostgreSQL, or an extension is missing
      └── SchemaTooNew              the database was migrated by a newer Glossator
"""

from __future__ import annotations

from core.errors import GlossatorError


class DatabaseError(GlossatorError):
    """The database cannot be used as configured; the message says why and what to do."""


class DataDirLocked(DatabaseError):
    """Another process holds the embedded server's data directory."""

    holder: str | None = None  # its pid, as written in the lock file
    url: str | None = None  # its server's connection string, when it wrote one


class ServerUnsuitable(DatabaseError):
    """The PostgreSQL server is too old or lacks an extension Glossator needs."""


class SchemaTooNew(DatabaseError):
    """The database schema is newer than this code: refuse rather than corrupt it."""


# SQLSTATE classes that mean "the server is out of a resource" (53: disk full, out
# of memory, too many connections) or "the connection is gone" (08; 57P01-57P03:
# the server is shutting down or restarting after a crash, e.g. a PANIC).
_RESOURCE = "53"
_CONNECTION = "08"
_SHUTDOWN = ("57P01", "57P02", "57P03")
_READ_ONLY = "25006"  # read_only_sql_transaction: a standby, default_transaction_read_only


def is_outage(e: BaseException) -> bool:
    """Whether a database failure is the server's state (out of a resource: a full disk;
    the connection gone; shutting down), not the statement's: every statement would meet it."""
    sqlstate = getattr(e, "sqlstate", None) or ""
    return (
        sqlstate.startswith((_RESOURCE, _CONNECTION))
        or sqlstate in _SHUTDOWN
        or (not sqlstate and type(e).__name__ == "OperationalError")
    )


def describe_failure(e: BaseException) -> str:
    """A database failure as one line for a client or a log: what, and what to do.

    Never the driver's own message: it spans lines and may quote a connection
    string or a server path."""
    sqlstate = getattr(e, "sqlstate", None) or ""
    name = type(e).__name__
    if sqlstate == "53100" or name == "DiskFull":
        return (
            "the database's disk is full: free space where the server keeps its data "
            "(GLOSSATOR_DATA_DIR); it recovers by itself once there is room"
        )
    if sqlstate == _READ_ONLY:
        return (
            "the database refuses writes (a standby in recovery, or read-only by default): "
            "point GLOSSATOR_DATABASE_URL at a server that takes writes"
        )
    if sqlstate.startswith(_RESOURCE):
        return f"the database is out of a resource ({name}, SQLSTATE {sqlstate}): see its log"
    if (
        sqlstate.startswith(_CONNECTION)
        or sqlstate in _SHUTDOWN
        or name in ("OperationalError", "PoolTimeout", "ConnectionTimeout")
    ):
        return (
            "the database does not answer (connection lost, or the server is restarting): "
            "Glossator retries by itself; if it lasts, check disk space and the server log"
        )
    return f"database error ({name}{', SQLSTATE ' + sqlstate if sqlstate else ''})"
