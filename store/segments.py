"""pg_search's index segments after incremental loads: the merge policy and the worker's step.

    segment_count(conn)         # live segments of the rows' BM25 index (0 without one)
    index_state(conn)           # its segments, live and deleted documents, bytes
    merge_policy(conn)          # set the indexes' merge layers (idempotent)
    maintain(conn)              # after a job that changed rows: merge policy + VACUUM,
                                # and a small index of several segments rebuilt into one

Every load writes new segments, and every query pays for each one. So the indexes get
merge layers a factor 2 apart (LAYER_SIZES) rather than pg_search's decades, the worker
VACUUMs after each job so that merges drop replaced rows soon, and a small index is
rebuilt into one segment (REINDEX CONCURRENTLY), put off rather than waited for when a
long transaction is open. The reasons and the measurements: docs/store.md, "Segments
after incremental loads".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import psycopg
from psycopg import sql

from store.bm25 import bm25_index_exists
from store.pgsearch import CHAPTER_INDEX, INDEX_NAME

log = logging.getLogger(__name__)

# Layers a factor 2 apart from 10KB to 10GB, 10KB x 2^0..2^20 (the module's docstring says why).
LAYER_SIZES = ", ".join(f"{10 << k}KB" for k in range(21))

# A bm25 index whose segments weigh at most this is rebuilt into one segment when it has
# more (`maintain`). 256KB: the example's rows' index (1,985 rows, 190KB) was rebuilt by
# REINDEX INDEX CONCURRENTLY in 0.35-0.8 s at load ~6 on 2 shared cores, its chapters'
# (41 chapters, 142KB) in 0.12 s: a bound near that size keeps the rebuild around a second
# at worst on a loaded machine, and at 10^5 rows (~9MB) the layers do the merging.
SMALL_INDEX_BYTES = 256 * 1024

# A rebuild is skipped while another transaction of the database is older than this. A
# search answers in milliseconds (its p95 at 10^5-10^6 rows is tens of ms, bench/RESULTS.md)
# and is waited for; one a second old is a load, a job waiting for its branch's lock or an
# idle session, which can last minutes.
BUSY_AFTER_S = 1.0

# The longest one lock wait of a rebuild may last before it is given up (SET lock_timeout):
# the rebuild itself took 0.35-0.8 s on the example (above), so the job's end is delayed by
# a few seconds at most when a transaction the check above missed turns out long.
REBUILD_LOCK_TIMEOUT_MS = 2000

# Each bm25 index and the table it indexes.
INDEXES = ((INDEX_NAME, "hierarchical_content_nodes"), (CHAPTER_INDEX, "chapter_documents"))


@dataclass(frozen=True)
class IndexState:
    """A bm25 index's visible segments and what they hold."""

    segments: int = 0
    live: int = 0  # documents not marked deleted (a replaced row counts until VACUUM)
    deleted: int = 0
    bytes: int = 0

    @property
    def deleted_share(self) -> float:
        total = self.live + self.deleted
        return self.deleted / total if total else 0.0


def index_state(conn: psycopg.Connection, name: str = INDEX_NAME) -> IndexState:
    """The bm25 index `name`'s visible segments (empty without the index)."""
    if not bm25_index_exists(conn, name):
        return IndexState()
    row = conn.execute(
        "SELECT count(*), coalesce(sum(num_docs), 0), coalesce(sum(num_deleted), 0),"
        " coalesce(sum(byte_size), 0) FROM paradedb.index_info(%s::regclass)",
        (name,),
    ).fetchone()
    if not row:
        return IndexState()
    return IndexState(int(row[0]), int(row[1]), int(row[2]), int(row[3]))


def segment_count(conn: psycopg.Connection) -> int:
    """The rows' BM25 index's visible segments (0 when there is no index)."""
    return index_state(conn).segments


def _present(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """The INDEXES that exist, with their tables (one catalogue lookup each)."""
    return [(name, table) for name, table in INDEXES if bm25_index_exists(conn, name)]


def merge_policy(conn: psycopg.Connection, present: list[tuple[str, str]] | None = None) -> bool:
    """Give the bm25 indexes the foreground layers LAYER_SIZES when they have others;
    True when one was set now (ALTER INDEX: a short exclusive lock, once per index).
    `present`: the indexes that exist, when the caller has looked already."""
    changed = False
    wanted = f"layer_sizes={LAYER_SIZES}"
    for name, _table in _present(conn) if present is None else present:
        row = conn.execute(
            "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = %s::regclass", (name,)
        ).fetchone()
        if row and wanted in row[0]:
            continue
        conn.execute(
            sql.SQL("ALTER INDEX {} SET (layer_sizes = {})").format(
                sql.Identifier(name), sql.Literal(LAYER_SIZES)
            )
        )
        log.info("pg_search index %s: merge layers %s", name, LAYER_SIZES)
        changed = True
    return changed


def maintain(
    conn: psycopg.Connection,
    small_bytes: int = SMALL_INDEX_BYTES,
    *,
    busy_after_s: float | None = BUSY_AFTER_S,
    lock_timeout_ms: int = REBUILD_LOCK_TIMEOUT_MS,
) -> bool:
    """After a job that changed rows: the merge policy, then VACUUM of each indexed
    table, which marks the replaced rows deleted in their segments and starts the
    merges their layers call for (pg_search merges after writes and on VACUUM); then
    each index of more than one segment weighing at most `small_bytes` is rebuilt into
    one (`rebuild_small`, with `busy_after_s` and `lock_timeout_ms`).

    `conn` must be in autocommit mode (VACUUM cannot run in a transaction). A no-op
    without the rows' BM25 index (the fallback, store.fts); True when it ran.
    """
    if not conn.autocommit:
        raise ValueError("maintain needs an autocommit connection (VACUUM)")
    present = _present(conn)
    if INDEX_NAME not in (name for name, _table in present):
        return False
    merge_policy(conn, present)
    for _name, table in present:
        conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))
    rebuild_small(
        conn, present, small_bytes, busy_after_s=busy_after_s, lock_timeout_ms=lock_timeout_ms
    )
    return True


def rebuild_small(
    conn: psycopg.Connection,
    present: list[tuple[str, str]],
    small_bytes: int,
    *,
    busy_after_s: float | None = BUSY_AFTER_S,
    lock_timeout_ms: int = REBUILD_LOCK_TIMEOUT_MS,
) -> list[str]:
    """REINDEX INDEX CONCURRENTLY each of the `present` indexes that has more than one
    segment and weighs at most `small_bytes` (the module's docstring says why); the names
    rebuilt. `conn` in autocommit mode.

    Put off, never waited for: nothing is rebuilt while another transaction of the
    database is older than `busy_after_s` (None: no such check), and a rebuild one of whose
    lock waits passes `lock_timeout_ms` is given up; both logged, neither an error. Any
    other failure drops the invalid copy it left, then raises."""
    conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{lock_timeout_ms}ms")))
    try:
        return _rebuild(conn, present, small_bytes, busy_after_s, lock_timeout_ms)
    finally:
        conn.execute("RESET lock_timeout")


def _rebuild(
    conn: psycopg.Connection,
    present: list[tuple[str, str]],
    small_bytes: int,
    busy_after_s: float | None,
    lock_timeout_ms: int,
) -> list[str]:
    """rebuild_small's loop, its lock timeout set."""
    rebuilt: list[str] = []
    for name, table in present:
        _drop_leftovers(conn, name, table)
        state = index_state(conn, name)
        if state.segments <= 1 or state.bytes > small_bytes:
            continue
        if busy_after_s is not None and (older := _older_transactions(conn, busy_after_s)):
            log.info(
                "pg_search index %s: rebuild of its %d segments put off, %d transaction(s)"
                " older than %.1f s running",
                name, state.segments, older, busy_after_s,
            )  # fmt: skip
            return rebuilt
        try:
            conn.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.Identifier(name)))
        except psycopg.errors.LockNotAvailable:
            log.info(
                "pg_search index %s: rebuild given up, a transaction older than it ran"
                " past %d ms",
                name, lock_timeout_ms,
            )  # fmt: skip
            _drop_leftovers(conn, name, table)
            return rebuilt
        except psycopg.Error:
            _drop_leftovers(conn, name, table)
            raise
        log.info("pg_search index %s: %d segments rebuilt into one", name, state.segments)
        rebuilt.append(name)
    return rebuilt


def _older_transactions(conn: psycopg.Connection, seconds: float) -> int:
    """How many other sessions of this database hold a snapshot or a transaction id
    in a transaction begun more than `seconds` ago (what a concurrent rebuild would wait
    for). Sessions of other roles show no xact_start without pg_read_all_stats: the lock
    timeout stands in for this check there."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid()"
        " AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)"
        " AND xact_start < clock_timestamp() - make_interval(secs => %s)",
        (seconds,),
    ).fetchone()
    return int(row[0]) if row else 0


def _drop_leftovers(conn: psycopg.Connection, name: str, table: str) -> None:
    """Drop the invalid indexes a failed REINDEX CONCURRENTLY of `name` left on `table`
    (PostgreSQL names them `<name>_ccnew`, `<name>_ccold`, with a number when taken)."""
    for (leftover,) in conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = %s::regclass AND NOT i.indisvalid"
        " AND (c.relname LIKE %s OR c.relname LIKE %s)",
        (table, f"{name}\\_ccnew%", f"{name}\\_ccold%"),
    ).fetchall():
        try:
            conn.execute(
                sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(leftover))
            )
        except psycopg.errors.LockNotAvailable:  # under rebuild_small's lock timeout
            log.warning(
                "pg_search index %s: %s, left by a failed rebuild, not dropped yet (a long"
                " transaction runs); the next maintenance drops it",
                name, leftover,
            )  # fmt: skip
            continue
        log.warning("pg_search index %s: dropped %s, left by a failed rebuild", name, leftover)
