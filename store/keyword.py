"""Keyword search: which engine ranks a database's keywords, and a query's content words.

    backend = choose_backend(conn)             # store.pgsearch.PgSearchBackend or store.fts.FtsBackend
    hits = backend.search(conn, "chandelles soleil lumière", repository="bastiat",
                          branch="main", filters={"level": 0}, k=10)   # [(row id, score), …]

Both engines rank with the same Okapi BM25 and implement the same interface
(store.bm25: the formula, `KeywordBackend`, the query's lexemes, the index names).
This module sits above them: it names both and picks one by what the database
has (`BACKEND_COLUMNS`: pg_search's index, else PostgreSQL's own text search).
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg

from store.bm25 import (
    CHAPTER_BM25_INDEX,
    ROWS_BM25_INDEX,
    TSV_INDEX,
    KeywordBackend,
    bm25_index_sql,
    lexemes_sql,
)
from store.fts import FtsBackend
from store.pgsearch import PgSearchBackend

# What `choose_backend` and chapter evidence need, as three columns a caller can put in
# a SELECT of its own (search asks them together with the branch's repositories: one
# round trip, not four): pg_search's rows' index (with its extension), the GIN index on
# the rows' tsvectors that PostgreSQL's own text search uses, and pg_search's chapters'
# index (store.chapters' engine).
BACKEND_COLUMNS = (
    f"{bm25_index_sql(ROWS_BM25_INDEX)}, to_regclass('{TSV_INDEX}') IS NOT NULL,"
    f" {bm25_index_sql(CHAPTER_BM25_INDEX)}"
)


def backend_for(pg_search: bool, text_search: bool) -> KeywordBackend:
    """The backend for what `BACKEND_COLUMNS` found: pg_search with its index, else
    PostgreSQL's own text search (store.fts), with its GIN index (`text_search`) or,
    until `Database.start()` makes it, without (same ranking, each query scanning the
    branch's rows). There is no third engine: a plain PostgreSQL is the fallback's."""
    if pg_search:
        return PgSearchBackend()
    return FtsBackend(indexed=text_search)


def choose_backend(conn: psycopg.Connection) -> KeywordBackend:
    """pg_search or PostgreSQL's text search, by what is there (one query)."""
    row = conn.execute(f"SELECT {BACKEND_COLUMNS}").fetchone()
    return backend_for(bool(row and row[0]), bool(row and row[1]))


# The words of a text that its own language keeps (its stop words dropped), in order,
# through the language's configuration (migration 021's glossator_ts_config: `simple`,
# which stops nothing, for a language without one), and their lexemes in each
# (repository, branch) of %(repos)s, %(branches)s (store.bm25.lexemes_sql, as
# jsonb {repository: [lexeme, …]}). Reads no BM25 table.
_CONTENT_WORDS = (
    """
WITH w AS (
SELECT coalesce(string_agg(p.token, ' ' ORDER BY p.ord), '') AS words
  FROM ts_parse('default', %(text)s) WITH ORDINALITY AS p(tokid, token, ord)
 WHERE length(glossator_tsvector(glossator_ts_config(%(lang)s), p.token)) > 0
)
SELECT w.words, (SELECT jsonb_object_agg(p.r, """
    + lexemes_sql("w.words", "p.r", "p.b")
    + """) FROM unnest(%(repos)s::text[], %(branches)s::text[]) AS p(r, b))
  FROM w
"""
)


def content_words(conn: psycopg.Connection, text: str, lang: str) -> str:
    """`text` without the stop words of `lang` (ISO 639-1): what a question in one
    language keeps for a BM25 search of a book in another, whose analysis would take
    "to" or "come" for words of its own (search.language)."""
    return content_lexemes(conn, text, lang, {})[0]


def content_lexemes(
    conn: psycopg.Connection, text: str, lang: str, branches: Mapping[str, str]
) -> tuple[str, dict[str, list[str]]]:
    """`content_words`, and their lexemes in each repository of `branches` (repository
    → branch: the foreign ones, whose BM25 statements take them). One statement."""
    row = conn.execute(
        _CONTENT_WORDS,
        {"text": text, "lang": lang, "repos": list(branches), "branches": list(branches.values())},
    ).fetchone()
    return (str(row[0]), dict(row[1] or {})) if row else ("", {})
