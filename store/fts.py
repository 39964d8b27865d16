"""Keyword search on PostgreSQL's own text search: the engine of a server without pg_search.

    backend = FtsBackend()                     # store.keyword.backend_for picks it
    hits = backend.search(conn, "chandelles soleil", repository="bastiat", k=10)
    enable(conn)                               # its GIN index, made at start (idempotent)

For a PostgreSQL that offers no ParadeDB pg_search (a managed service: RDS, Cloud SQL,
Azure…): `Database.start()` falls back to it, with a warning. The rows' own `tsv`
under a GIN index (`hcn_tsv`), and Okapi BM25 (store.bm25's formula, docs/store.md)
computed at query time over the rows that match: tf and |D| from each row's tsvector,
df over the matching rows, N and avgdl the branch's from the catalogue. Its cost at
scale sets it below pg_search: a query reads the tsvector of every row holding one of
its terms (a common word in 10⁶ paragraphs: hundreds of thousands of rows), where
pg_search answers a top-k from its own postings; `glossator doctor`, `glossator db
status` and the README say so. Chapters (store.chapters) are ranked the same way;
phrases (« … ») are matched by store.phrases on the same tsvectors, whatever the backend.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

from store.bm25 import (
    CORPUS_STATS,
    QUERY_LEXEMES,
    TSV_INDEX,
    Filters,
    KeywordBackend,
    filter_sql,
)

log = logging.getLogger(__name__)

INDEX_NAME = TSV_INDEX  # the name migration 001 gave it
# what this engine costs against pg_search (doctor and db status say it)
COST = (
    "Same BM25 ranking on a book, but each query reads every row holding one of its "
    "words: slower than pg_search on large corpora (bench/RESULTS.md)"
)
# said where the server has no pg_search (where it offers it, glossator.checks says why
# its index is not there)
CAVEAT = (
    f"PostgreSQL's own text search: this server has no pg_search. {COST}; install "
    "pg_search (ParadeDB) for those"
)

_QUERY = (
    "WITH"
    + QUERY_LEXEMES
    + ","
    + CORPUS_STATS
    + """,
tsq AS (
    -- the lexemes ORed, each quoted as tsquery syntax wants (no configuration applied again)
    SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''',
                      ' | ')::tsquery AS query,
           array_agg(lexeme) AS lexemes
      FROM q
),
matched AS MATERIALIZED (
    -- the branch's rows holding any query lexeme: a bitmap scan of the GIN index
    SELECT h.id, h.tsv, h.doc_len
      FROM hierarchical_content_nodes h, tsq
     WHERE h.tsv @@ tsq.query
       AND h.repository = %(repository)s AND h.branch = %(branch)s
),
terms AS (
    SELECT m.id, u.lexeme, cardinality(u.positions)::float8 AS tf, m.doc_len
      FROM matched m, tsq, unnest(m.tsv) AS u
     WHERE u.lexeme = ANY(tsq.lexemes)
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM terms GROUP BY lexeme),
scored AS (
    SELECT t.id,
           sum(ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5))
               * t.tf * (%(k1)s::float8 + 1)
               / (t.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * t.doc_len / s.avgdl))
           ) AS score
      FROM terms t JOIN df d USING (lexeme) CROSS JOIN stats s
     GROUP BY t.id
)
SELECT sc.id, sc.score
  FROM scored sc {rows}
 WHERE {keep}
 ORDER BY sc.score DESC, sc.id
 LIMIT %(k)s
"""
)


class FtsBackend(KeywordBackend):
    """Okapi BM25 over the rows' tsvectors, matched by PostgreSQL's GIN index (no pg_search)."""

    name = "postgres-fts"

    def __init__(self, indexed: bool = True) -> None:
        # without its GIN index (made by Database.start(): `enable`) a query scans the
        # branch's rows; `db status` and `doctor` say so
        self.indexed = indexed
        self.caveat = CAVEAT + (
            ""
            if indexed
            else f". Its GIN index {INDEX_NAME} is missing: `glossator serve` "
            "(or any command that starts the database) makes it"
        )

    def query(self, filters: Filters | None, k: int) -> tuple[sql.Composed, dict[str, Any]]:
        keep, params = filter_sql(filters, "h")  # k is the %(k)s parameter
        rows = sql.SQL("JOIN hierarchical_content_nodes h ON h.id = sc.id" if params else "")
        return sql.SQL(_QUERY).format(keep=keep, rows=rows), params


def index_exists(conn: psycopg.Connection) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX_NAME,)).fetchone()
    return bool(row and row[0])


def enable(conn: psycopg.Connection) -> bool:
    """Make the GIN index on the rows' tsvectors if missing; True when created now."""
    if index_exists(conn):
        return False
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON hierarchical_content_nodes USING gin (tsv)"
        ).format(sql.Identifier(INDEX_NAME))
    )
    log.info("created the text search index %s (keyword search without pg_search)", INDEX_NAME)
    return True
