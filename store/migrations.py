"""Versioned SQL migrations, applied at start-up.

Files `store/migrations/NNN_name.sql` are applied in version order, each
recorded in `schema_migrations` (version, name, sha256, applied_at). The whole
run is one transaction holding a transaction-scoped advisory lock, so two
processes starting at once (the server and a `glossator load`) serialise: the
second waits, then finds nothing left to do. PostgreSQL's DDL is transactional,
so a migration that fails leaves the database exactly as it was.

A database whose newest recorded version is above the newest file here was
migrated by a newer Glossator: we refuse to touch it (`SchemaTooNew`) rather
than run old code against a schema it does not know.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from store.errors import DatabaseError, SchemaTooNew

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key: any constant bigint; this one spells "glossmig" in ASCII.
LOCK_KEY = 0x676C6F73736D6967
_NAME = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")

# Earlier texts of a migration that do the same on the servers they ran on: a
# database that applied one of them is up to date, without a warning. 001 and 003
# learnt to work without unaccent; with it they do what they did.
EQUIVALENT = {
    1: {"0d08d5e73de66d166da298e14c60b0196da4cff5c3ce875c71ff20c7e368324c"},
    3: {"7826571d88249cdafbe1b0c98854561603732b37ba6498d5add25ca803e3cade"},
}


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def available() -> list[Migration]:
    """The migrations shipped with this code, in version order."""
    found = []
    for entry in resources.files("store").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise DatabaseError(f"two migration files share a version: {[m.name for m in found]}")
    return found


def code_version() -> int:
    migrations = available()
    return migrations[-1].version if migrations else 0


def applied(conn: psycopg.Connection) -> dict[int, str]:
    """version -> checksum of what the database has applied ({} on a fresh database)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    return dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())


def migrate(conn: psycopg.Connection, upto: int | None = None) -> list[str]:
    """Apply what is missing; return the names applied (empty when up to date).

    `conn` must not be inside a transaction: the run is its own transaction.
    `upto`: stop after that version (the upgrade tests: a database of an older schema).
    """
    migrations = [m for m in available() if upto is None or m.version <= upto]
    newest = migrations[-1].version if migrations else 0
    done: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version    integer PRIMARY KEY,
                   name       text NOT NULL,
                   checksum   text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        have = applied(conn)
        if have and max(have) > newest:
            raise SchemaTooNew(
                f"the database schema is at version {max(have)} but this Glossator knows "
                f"migrations up to {newest}: upgrade Glossator (pip install -U glossator), "
                "or point GLOSSATOR_DATABASE_URL / GLOSSATOR_DATA_DIR at another database"
            )
        for m in migrations:
            if m.version in have:
                if have[m.version] not in {m.checksum, *EQUIVALENT.get(m.version, ())}:
                    log.warning(
                        "migration %s changed after it was applied; the database keeps the old one",
                        m.name,
                    )
                continue
            log.info("applying migration %s", m.name)
            # No parameters: psycopg sends the file as one simple query, several statements.
            conn.execute(m.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (m.version, m.name, m.checksum),
            )
            done.append(m.name)
    return done
