"""ParadeDB's pg_search as the keyword backend, behind `store.bm25.KeywordBackend`.

Chosen by `store.keyword.choose_backend` when the `pg_search` extension is installed
and its BM25 index exists. `Database.start()` makes the rows' index (INDEX_NAME) and
the chapters' (CHAPTER_INDEX) when the server offers the extension
(`enable_if_available`); `glossator db pg-search` does it by hand. Each row is indexed
by its own lexemes (those of its `tsv`), so the terms are exactly those the fallback
(store.fts) and the phrase check (store.phrases) see; the filter columns are in the
index so that pg_search filters inside its top-k scan; `mutable_segment_rows = 0`
keeps rows out of the slow mutable segment. The index definitions and the figures
behind each choice: docs/store.md, "pg_search's BM25 indexes".
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

from store.bm25 import (
    CHAPTER_BM25_INDEX,
    ROWS_BM25_INDEX,
    Filters,
    KeywordBackend,
    bm25_index_exists,
    filter_sql,
)

log = logging.getLogger(__name__)

INDEX_NAME = ROWS_BM25_INDEX
CHAPTER_INDEX = CHAPTER_BM25_INDEX
CHAPTER_INDEX_SQL = (
    "CREATE INDEX {} ON chapter_documents USING bm25"
    " (id, (lexemes::pdb.whitespace), (repository::pdb.literal),"
    " (branch::pdb.literal), (work::pdb.literal))"
    " WITH (key_field = 'id', mutable_segment_rows = 0)"
)

# The indexed expression, as the index has it (a query must spell it the same way).
LEXEMES = "glossator_lexeme_text(h.tsv)"

# the query's lexemes are given as one text (store.bm25.lexeme_params: computed once a
# search, in its catalogue statement, for this statement and the chapters')
_QUERY = (
    """
SELECT h.id, pdb.score(h.id) AS score
  FROM hierarchical_content_nodes h
 WHERE """
    + LEXEMES
    + """ ||| %(terms)s::text
   AND h.repository = %(repository)s AND h.branch = %(branch)s
   AND {keep}
 ORDER BY score DESC, h.id
 LIMIT {limit}
"""
)

# Around each search's pg_search statements, in their transaction: no parallel workers,
# generic plans (`PgSearchBackend`); the settings as they were are put back after them.
AROUND = (
    "SELECT set_config('glossator.parallel',"
    " current_setting('max_parallel_workers_per_gather'), true),"
    " set_config('max_parallel_workers_per_gather', '0', true),"
    " set_config('glossator.plan_cache_mode', current_setting('plan_cache_mode'), true),"
    " set_config('plan_cache_mode', 'force_generic_plan', true)",
    "SELECT set_config('max_parallel_workers_per_gather',"
    " current_setting('glossator.parallel'), true),"
    " set_config('plan_cache_mode', current_setting('glossator.plan_cache_mode'), true)",
)


class PgSearchBackend(KeywordBackend):
    """BM25 computed by pg_search (Tantivy) over its own index."""

    name = "pg_search"
    # No parallel workers for a search: with more than one segment pg_search plans a
    # parallel scan, and starting its workers cost ~45 ms of a 63 ms query on the
    # example (2 workers reading 4 segments in 5 ms each), against < 1 ms for the
    # scan itself (bench/RESULTS.md, latency). The setting is local to the
    # search's transaction and put back after it, as retrieval.vector does enable_sort.
    # Prepared at once and planned once a connection (a generic plan, forced local to
    # the search): planning the statement with its values cost 1.5-1.8 ms of a ~3.5 ms
    # query on the example, the generic plan 0.02 ms, for the same plan shape and rows
    # (pg_search's TopN scan, the repository and branch filters evaluated as it starts:
    # bench/RESULTS.md). The LIMIT is written into the text, not a parameter:
    # with LIMIT $k pg_search cannot plan its TopN scan and returns every match for
    # PostgreSQL to sort (the generic plan of an earlier version of this query took ~2 s
    # on an 85-segment index, against ~0.1 s planned with its values). Checked on an
    # index of 41 segments: the same rows and scores as custom plans for the 85 queries
    # of bench/queries.jsonl, and the same rows after a REINDEX under the cached plan.
    prepare = True
    around = AROUND

    def query(self, filters: Filters | None, k: int) -> tuple[sql.Composed, dict[str, Any]]:
        keep, params = filter_sql(filters, "h")
        return sql.SQL(_QUERY).format(keep=keep, limit=sql.Literal(int(k))), params

    @staticmethod
    def create_index(conn: psycopg.Connection) -> bool:
        """Make the pg_search indexes (and the extension) if missing: the rows' and the
        chapters'; True when the rows' was created now."""
        if not bm25_index_exists(conn, CHAPTER_INDEX):
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_search")
            conn.execute(sql.SQL(CHAPTER_INDEX_SQL).format(sql.Identifier(CHAPTER_INDEX)))
            log.info("created the pg_search BM25 index %s", CHAPTER_INDEX)
        if bm25_index_exists(conn, INDEX_NAME):
            return False
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_search")
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON hierarchical_content_nodes USING bm25 "
                "(id, (glossator_lexeme_text(tsv)::pdb.whitespace('alias=lexemes')),"
                " (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),"
                " (node_type::pdb.literal), level) "
                "WITH (key_field = 'id', mutable_segment_rows = 0)"
            ).format(sql.Identifier(INDEX_NAME))
        )
        log.info("created the pg_search BM25 index %s", INDEX_NAME)
        return True


def enable_if_available(conn: psycopg.Connection) -> bool:
    """Create the extension and index when the server offers pg_search; True if in use.

    A failure (no privilege, pg_search not in shared_preload_libraries…) is
    logged and leaves PostgreSQL's own text search in charge (store.fts, whose
    indexes the caller makes): keyword search keeps working.
    """
    offered = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_search'"
    ).fetchone()
    if not offered:
        return False
    try:
        with conn.transaction():
            PgSearchBackend.create_index(conn)
    except psycopg.Error as e:
        log.warning(
            "pg_search is offered but could not be enabled (%s: %s); keyword search uses "
            "PostgreSQL's own text search (postgres-fts)",
            type(e).__name__,
            e.sqlstate,
        )
        return False
    return True
