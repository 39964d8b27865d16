"""Errors of the PostgreSQL store; each says how to fix the problem.

GlossatorError                      (glossator.errors)
 └── DatabaseError                  the database cannot be used as configured
      ├── DataDirLocked             another process runs the embedded server of this data dir
      ├── ServerUnsuitable          too old a PostgreSQL, or an extension is missing
      └── SchemaTooNew              the database was migrated by a newer Glossator
"""

from __future__ import annotations

from glossator.errors import GlossatorError


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
