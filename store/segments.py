"""pg_search's index segments after incremental loads: the merge policy and the worker's step.

    segment_count(conn)         # live segments of the BM25 index (0 without one)
    merge_policy(conn)          # set the index's foreground layer sizes (once; idempotent)
    maintain(conn)              # after a job that changed rows: merge policy + VACUUM

Every write to a bm25 index makes a new segment and marks the replaced rows
deleted in the old ones. pg_search 0.21 merges segments in the background by
default (`background_layer_sizes` 100KB … 10GB, no foreground `layer_sizes`),
and measured here that merging did not keep up: 150 single-file reloads of a
20,000-row corpus left 19 segments holding 15,000 deleted documents, and BM25
p95 at 3-10× a freshly built index (bench/reloads.py, bench/RESULTS.md). A VACUUM
alone changed nothing; with foreground `layer_sizes` set, the next VACUUM (or
write) merged them to 3 segments without deleted documents and p95 came back to
that of a fresh index.

So the index gets foreground layers up to LAYER_SIZES' largest (small merges,
cheap: at most a few MB rewritten per write) and keeps pg_search's background
layers for the large ones; the worker runs `maintain` after each job that loaded
or deleted rows, on its own autocommit connection (VACUUM cannot run in a
transaction), so the segments a push left are merged before the next searches
instead of whenever autovacuum comes. The sizes are pg_search's own layer
thresholds (its documented defaults), not fitted to a corpus.
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql

from store.keyword import bm25_index_exists
from store.pgsearch import INDEX_NAME

log = logging.getLogger(__name__)

# pg_search's own layer thresholds (docs.paradedb.com, "write throughput"), the
# foreground ones up to 10MB: a merge in a writer's transaction rewrites at most that.
LAYER_SIZES = "100KB, 1MB, 10MB"


def segment_count(conn: psycopg.Connection) -> int:
    """The BM25 index's visible segments (0 when there is no index)."""
    if not bm25_index_exists(conn, INDEX_NAME):
        return 0
    row = conn.execute("SELECT count(*) FROM paradedb.index_info(%s::regclass)", (INDEX_NAME,))
    found = row.fetchone()
    return int(found[0]) if found else 0


def merge_policy(conn: psycopg.Connection) -> bool:
    """Give the BM25 index foreground layer sizes when it has none; True when set now."""
    if not bm25_index_exists(conn, INDEX_NAME):
        return False
    row = conn.execute(
        "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = %s::regclass", (INDEX_NAME,)
    ).fetchone()
    wanted = f"layer_sizes={LAYER_SIZES}"
    if row and wanted in row[0]:
        return False
    conn.execute(
        sql.SQL("ALTER INDEX {} SET (layer_sizes = {})").format(
            sql.Identifier(INDEX_NAME), sql.Literal(LAYER_SIZES)
        )
    )
    log.info("pg_search index %s: foreground merging up to %s", INDEX_NAME, LAYER_SIZES)
    return True


def maintain(conn: psycopg.Connection) -> bool:
    """After a job that changed rows: the merge policy, then VACUUM of the rows' table,
    which merges the segments the job's writes left (pg_search merges on VACUUM).

    `conn` must be in autocommit mode (VACUUM cannot run in a transaction). A no-op
    without the BM25 index (the fallback, store.fts); True when it ran.
    """
    if not conn.autocommit:
        raise ValueError("maintain needs an autocommit connection (VACUUM)")
    if not bm25_index_exists(conn, INDEX_NAME):
        return False
    merge_policy(conn)
    conn.execute("VACUUM hierarchical_content_nodes")
    return True
