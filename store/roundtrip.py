"""Statements sent together: one round trip for several queries of a search.

    rows = run(conn, [Statement(query, params, prepare=True, around=pgsearch.AROUND), …])
    rows[0]   # the first statement's rows, as tuples

A search sends its rows' BM25 and its chapters' together (search.retrieval), and its
vector query and the chapter summaries' cosines together (store.vectors): each group
in one psycopg pipeline, so one Sync, one round trip. Statements that need settings
around them (`around`: pg_search's, store.pgsearch.AROUND) are sent first, between
those two statements, once for all of them; the others after, under the caller's
settings (store.fts's statements are not planned generic).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql


@dataclass(frozen=True)
class Statement:
    """One query and its parameters; `prepare` as psycopg's `execute` takes it (None:
    prepared on its 5th execution; True: at once); `around`: the two statements to run
    before and after it, in its transaction."""

    query: sql.SQL | sql.Composed | str
    params: dict[str, Any] = field(default_factory=dict)
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
        # settings local to the transaction: an autocommit connection needs one
        own = conn.transaction() if around and conn.autocommit else nullcontext()
        with conn.pipeline(), own:
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
