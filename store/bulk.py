"""Bulk loads: when a load is one, how its term entries are written, and ANALYZE after.

A load that writes at least half of a branch's files (a first load, a model
change, a whole tree: `bulk_load`) skips the add triggers of the term indexes
(store.loader sets `glossator.bulk_load`); `write_entries` then writes the
entries of every file it loaded, once, after the last COPY: by rebuilding the
term tables (migration 024) when the branch holds at least as many rows as all
other branches together, else by inserting them, sorted (migration 013). Why
and what it costs: docs/loading.md.
"""

from __future__ import annotations

import logging

import psycopg

log = logging.getLogger("store.loader")


def write_entries(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    loaded: list[str],
    rebuild: bool | None = None,
) -> bool:
    """The term entries the add triggers skipped; True when the term tables were rebuilt.

    Rebuilt (migration 024: new tables, their indexes built after the entries) when the
    branch holds at least as many rows as every other branch together, so that copying
    the others' entries costs at most what the load's own do; otherwise inserted into
    the tables as they are (migration 013).
    """
    row = conn.execute(
        "SELECT coalesce(sum(chunk_count) FILTER (WHERE repository = %s AND branch = %s), 0),"
        " coalesce(sum(chunk_count) FILTER (WHERE repository <> %s OR branch <> %s), 0)"
        " FROM loaded_files",
        (repository, branch, repository, branch),
    ).fetchone()
    mine, others = (int(row[0]), int(row[1])) if row else (0, 0)
    if rebuild if rebuild is not None else mine >= others:
        try:
            with conn.transaction():  # a savepoint: on a deadlock, the entries go in as below
                conn.execute(
                    "SELECT glossator_bulk_chapters(%s, %s, %s)", (repository, branch, loaded)
                )
                conn.execute("SELECT glossator_bulk_rebuild(%s, %s)", (repository, branch))
            return True
        except psycopg.errors.DeadlockDetected:
            # Two rebuilds at once (each had written into the tables, each wants them
            # shared): PostgreSQL chose this one to give way; the other goes on.
            log.info(
                "%s/%s: term tables busy with another bulk load; entries inserted",
                repository,
                branch,
            )
    conn.execute("SELECT glossator_bulk_index(%s, %s, %s)", (repository, branch, loaded))
    return False


# A rebuild writes the entries of the loaded files only, the deltas the same entries
# one statement per file: bulk is never more work, it pays once the files are many.
# Half the branch covers what the issue names (first load, model change, whole tree)
# and leaves a push of some files on the incremental path it was tested on.
BULK_SHARE = 0.5


def bulk_load(conn: psycopg.Connection, repository: str, branch: str, changed: int) -> bool:
    """Whether loading `changed` files into the branch is a bulk load (see the module doc)."""
    if changed == 0:
        return False
    row = conn.execute(
        "SELECT count(*) FROM loaded_files WHERE repository = %s AND branch = %s",
        (repository, branch),
    ).fetchone()
    have = int(row[0]) if row else 0
    return changed >= BULK_SHARE * max(have, changed)


# After a big load: the rows' table (the BM25, vector and context queries are planned on
# its statistics) and the chapter index's two tables (migration 011).
ANALYZE_SQL = (
    "ANALYZE hierarchical_content_nodes, bm25_chapters, bm25_chapter_terms, bm25_row_terms"
)


def analyze_if_stale(conn: psycopg.Connection, files: int) -> None:
    """ANALYZE after a load that changed a good part of the corpus (as autovacuum
    would, a minute later; the first searches after a first load would otherwise be
    planned on empty-table estimates: a scan of every chapter term where a primary-key
    lookup is right, 20 ms instead of 1 ms for the chapter BM25 on the example, and
    sequential scans where the GIN index is right). A small edit does not pay for it.
    """
    if files <= 0:
        return
    row = conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = 'bm25_chapters'::regclass"
    ).fetchone()
    known = float(row[0]) if row else -1.0  # -1: never analysed
    if known < 0 or files > 5 + 0.1 * known:
        conn.execute(ANALYZE_SQL)
