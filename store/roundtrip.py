"""Statements sent together: one round trip for several queries of a search.

    rows = run(conn, [Statement(query, params, prepare=True, around=pgsearch.AROUND), …])
    rows[0]   # the first statement's rows, as tuples

A search sends three batches (docs/search.md, "How a query runs"): what its scope,
catalogue and freshness read; its rows' and chapters' BM25 with its vector query and
the chapter summaries' cosines; its rows by id. Each batch goes in one psycopg
pipeline, so one Sync, one round trip. Statements that need settings around them
(`around`: pg_search's, store.pgsearch.AROUND) are sent first, between those two
statements, once for all of them; the others after, in the order given, under the
caller's settings (store.fts's statements are not planned generic; the vector query
brings its own, store.vectors.nearest_statements).

The statements of one pipeline are one transaction even without BEGIN: the server
ends it at the Sync (PostgreSQL's extended query protocol). So a search reads in
`batches`: an idle connection is switched to autocommit meanwhile, and psycopg sends
no BEGIN (which it syncs at once: a round trip of its own, waited for before the
first statement) and no COMMIT; settings local to the transaction last to the end
of their batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import pq, sql


@dataclass(frozen=True)
class Statement:
    """One query and its parameters; `prepare` as psycopg's `execute` takes it (None:
    prepared on its 5th execution; True: at once); `around`: the two statements to run
    before and after it, in its transaction."""

    query: sql.SQL | sql.Composed | str
    params: dict[str, Any] | tuple[Any, ...] = field(default_factory=dict)
    prepare: bool | None = None
    around: tuple[str, str] | None = None


def run(conn: psycopg.Connection, statements: Sequence[Statement | None]) -> list[list[Any]]:
    """The rows of each statement (none for a None), all sent in one pipeline."""
    given = [(n, s) for n, s in enumerate(statements) if s is not None]
    arounds = {s.around for _, s in given if s.around}
    if len(arounds) > 1:
        raise ValueError("statements sent together share the settings around them")
    around = next(iter(arounds), None)
    cursors: dict[int, psycopg.Cursor[Any]] = {}
    if given:
        # settings local to the transaction: on an autocommit connection, the pipeline's
        # own (the server ends it at the Sync; module doc)
        with conn.pipeline():
            if around:
                conn.execute(around[0])
                for n, s in given:
                    if s.around:
                        cursors[n] = conn.execute(s.query, s.params, prepare=s.prepare)
                conn.execute(around[1])
            for n, s in given:
                if not s.around:
                    cursors[n] = conn.execute(s.query, s.params, prepare=s.prepare)
    return [cursors[n].fetchall() if n in cursors else [] for n in range(len(statements))]


@contextmanager
def batches(conn: psycopg.Connection) -> Iterator[None]:
    """Meanwhile each pipeline (and each statement sent alone) is a transaction of its
    own, when `conn` is idle (module doc); a connection in a transaction, or in
    autocommit already, is left as it is. For reads: nothing is written meanwhile."""
    if conn.autocommit or conn.info.transaction_status != pq.TransactionStatus.IDLE:
        yield
        return
    conn.autocommit = True
    try:
        yield
    finally:
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.rollback()  # a BEGIN sent meanwhile: not a search's
        conn.autocommit = False
