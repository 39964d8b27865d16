"""Short connections: the one place outside the pools (store.db) where a connection is
opened.

    with connections.connect(conninfo, autocommit=True, connect_timeout=5) as conn: …

For a process or a step that has no pool: the post-receive hook, a CLI command, a
check of the server, the queue's statements run beside procrastinate's own
connector. The caller closes it (its `with` block); nothing is opened at import.
"""

from __future__ import annotations

import psycopg
from psycopg.rows import TupleRow


def connect(
    conninfo: str, *, autocommit: bool = False, connect_timeout: int | None = None
) -> psycopg.Connection[TupleRow]:
    """A connection of its own to `conninfo`. `connect_timeout` in seconds; unset, the
    URL's own or else psycopg's default (130 s) applies."""
    if connect_timeout is None:
        return psycopg.connect(conninfo, autocommit=autocommit)
    return psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=connect_timeout)
