"""ParadeDB's pg_search as the keyword backend, behind `store.keyword.KeywordBackend`.

Chosen by `store.keyword.choose_backend` when the `pg_search` extension is
installed and its BM25 index exists. `Database.start()` makes both when the
server offers the extension (`enable_if_available`); `glossator db pg-search`
does it by hand:

    CREATE INDEX hcn_bm25 ON hierarchical_content_nodes USING bm25
      (id, (content::pdb.simple('stemmer=french', 'ascii_folding=true')),
       (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),
       (node_type::pdb.literal), level)
      WITH (key_field = 'id');

The filter columns are in the index, untokenized, so that pg_search applies
`repository = …` and the other filters inside its top-k scan instead of scoring
every match and letting PostgreSQL drop most of them (2.7× faster on 70,000 rows
of two repositories).

A query is ParadeDB's match disjunction (`|||`: any of the terms, as BM25
wants) scored by `pdb.score(id)` (pg_search ≥ 0.20's v2 API; checked with
0.21.14). Two differences from `SqlBm25`, both ParadeDB's design: the corpus
statistics are those of the whole index (every repository and branch), and the
index has one tokenizer, French (stemmer plus accent folding, no stop words),
whatever a work's `lang`.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

from store.keyword import Filters, KeywordBackend, filter_sql

log = logging.getLogger(__name__)

INDEX_NAME = "hcn_bm25"

_QUERY = """
SELECT h.id, pdb.score(h.id) AS score
  FROM hierarchical_content_nodes h
 WHERE h.content ||| %(text)s::text
   AND h.repository = %(repository)s AND h.branch = %(branch)s
   AND {keep}
 ORDER BY score DESC, h.id
 LIMIT %(k)s
"""


class PgSearchBackend(KeywordBackend):
    """BM25 computed by pg_search (Tantivy) over its own index."""

    name = "pg_search"

    def query(self, filters: Filters | None) -> tuple[sql.Composed, dict[str, Any]]:
        keep, params = filter_sql(filters, "h")
        return sql.SQL(_QUERY).format(keep=keep), params

    @staticmethod
    def index_exists(conn: psycopg.Connection) -> bool:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX_NAME,)).fetchone()
        return bool(row and row[0])

    @staticmethod
    def create_index(conn: psycopg.Connection) -> bool:
        """Make the pg_search index (and the extension) if missing; True when created now."""
        if PgSearchBackend.index_exists(conn):
            return False
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_search")
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON hierarchical_content_nodes USING bm25 "
                "(id, (content::pdb.simple('stemmer=french', 'ascii_folding=true')),"
                " (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),"
                " (node_type::pdb.literal), level) "
                "WITH (key_field = 'id')"
            ).format(sql.Identifier(INDEX_NAME))
        )
        log.info("created the pg_search BM25 index %s", INDEX_NAME)
        return True


def enable_if_available(conn: psycopg.Connection) -> bool:
    """Create the extension and index when the server offers pg_search; True if in use.

    A failure (no privilege, pg_search not in shared_preload_libraries…) is
    logged and leaves the SQL BM25 in charge: keyword search keeps working.
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
            "pg_search is offered but could not be enabled (%s: %s); using the SQL BM25",
            type(e).__name__,
            e.sqlstate,
        )
        return False
    return True
