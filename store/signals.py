"""What the relevance gate reads (search.relevance.measure), in one statement.

    row = question_signals(conn, question, scope=[("bastiat", "main")], work=None,
                           model=…, vector=…, cast="vector(384)", hits=[(repo, branch, file, chunk)])
    words, fewest_kept, corpus_kept, n_docs, corpus_configs, centre, terms = row

* `words`: the question's words (`simple`), `fewest_kept` the fewest any language's
  configuration keeps of them (its stop words dropped: the three the gate was
  calibrated with and the corpus's own), `corpus_kept` the fewest the corpus's keep;
* `n_docs`: N, the rows of the scope (the catalogue, `branch_languages`);
* `corpus_configs`: the scope's text search configurations;
* `centre`: the question's best cosine with a work's centre (mean of its chapter
  summaries' vectors);
* `terms`: for each of the question's lexemes (through the scope's configurations), its
  document frequency over the scope's rows and which hits (1-based) hold it.

Document frequencies are counted over the rows' lexemes, by the index keyword search
uses (store.keyword.choose_backend): pg_search's bm25 index over
`glossator_lexeme_text(tsv)` (migration 033; the same lexemes), else the GIN index on
the rows' tsvectors (store.fts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from store.keyword import choose_backend

_SIGNALS_SQL = """
WITH corpus AS (
    SELECT repository, branch, ts_config, n_docs FROM branch_languages
     WHERE (repository, branch) IN
           (SELECT * FROM unnest(%(scope_repos)s::text[], %(scope_branches)s::text[]))
),
pairs AS (SELECT DISTINCT repository, branch FROM corpus),
configs AS (SELECT DISTINCT ts_config FROM corpus),
terms AS MATERIALIZED (  -- the question's terms as BM25 takes them
    SELECT q.lexeme
      FROM (SELECT DISTINCT l.lexeme
              FROM configs c,
                   unnest(tsvector_to_array(glossator_tsvector(c.ts_config, %(text)s))) AS l(lexeme)
           ) AS q
),
held AS MATERIALIZED (  -- the terms each candidate row holds (one unique-key probe per row)
    SELECT k.n, u.lexeme
      FROM (SELECT array_agg(lexeme) AS lexemes FROM terms) AS lex,
           unnest(%(repos)s::text[], %(branches)s::text[], %(files)s::text[], %(chunks)s::int[])
               WITH ORDINALITY AS k(repository, branch, source_file, chunk_index, n)
           CROSS JOIN LATERAL (
               SELECT h.tsv FROM hierarchical_content_nodes h
                WHERE h.repository = k.repository AND h.branch = k.branch
                  AND h.source_file = k.source_file AND h.chunk_index = k.chunk_index
           ) AS h
           CROSS JOIN LATERAL unnest(ts_filter(setweight(h.tsv, 'A', lex.lexemes), '{{a}}')) AS u
),
centres AS (
    SELECT avg(embedding::{cast}) AS centre
      FROM hierarchical_content_nodes
     WHERE level = 1 AND embedding_model = %(model)s
       AND (repository, branch) IN (SELECT repository, branch FROM pairs)
       AND (%(work)s::text IS NULL OR work = %(work)s)
     GROUP BY repository, work
),
languages AS (  -- words each language's configuration keeps (stop words removed)
    SELECT c.oid::regconfig AS cfg,
           glossator_tsv_len(glossator_tsvector(c.oid::regconfig, %(text)s)) AS kept
      FROM pg_ts_config c  -- the three the gate was calibrated with, and the corpus's own
     WHERE c.cfgname IN ('glossator_fr', 'glossator_en', 'glossator_de')
        OR c.oid::regconfig IN (SELECT ts_config FROM configs)
)
SELECT glossator_tsv_len(to_tsvector('simple', %(text)s)) AS words,
       (SELECT min(kept) FROM languages) AS fewest_kept,
       (SELECT min(kept) FROM languages WHERE cfg IN (SELECT ts_config FROM configs))
           AS corpus_kept,
       (SELECT sum(n_docs) FROM corpus)::float8 AS n_docs,
       (SELECT coalesce(array_agg(ts_config::text ORDER BY ts_config::text), '{{}}')
          FROM configs) AS corpus_configs,
       (SELECT max(1 - (centre <=> %(q)s::{cast})) FROM centres)::float8 AS centre,
       (SELECT coalesce(json_agg(json_build_array(
            t.lexeme,
            (SELECT coalesce(sum({df}), 0) FROM pairs p),
            (SELECT coalesce(array_agg(x.n), '{{}}') FROM held x WHERE x.lexeme = t.lexeme)
        )), '[]') FROM terms t) AS terms
"""

# df of the lexeme t.lexeme in the branch p: the rows holding it, by the keyword index.
# pg_search: its match on the indexed lexemes (never prepared); the
# GIN index otherwise (the lexeme quoted as tsquery syntax wants, no configuration
# applied again).
_DF_PG_SEARCH = """(SELECT count(*) FROM hierarchical_content_nodes r
                  WHERE glossator_lexeme_text(r.tsv) ||| t.lexeme
                    AND r.repository = p.repository AND r.branch = p.branch)"""
_DF_TEXT_SEARCH = """(SELECT count(*) FROM hierarchical_content_nodes r
                  WHERE r.tsv @@ ('''' || replace(replace(t.lexeme, '\\', '\\\\'), '''', '''''')
                                  || '''')::tsquery
                    AND r.repository = p.repository AND r.branch = p.branch)"""


def question_signals(
    conn: psycopg.Connection,
    text: str,
    *,
    scope: Sequence[tuple[str, str]],
    work: str | None,
    model: str,
    vector: Any,
    cast: str,
    hits: Sequence[tuple[str, str, str, int]],
) -> tuple[Any, ...]:
    """The gate's signals for `text` (see the module doc): `scope` the (repository,
    branch) pairs asked, `vector` the query vector as pgvector takes it, `cast` its
    type (store.vectors.cast_type), `hits` the candidate rows (repository, branch,
    source file, chunk index)."""
    pg_search = choose_backend(conn).name == "pg_search"
    stmt = sql.SQL(_SIGNALS_SQL).format(
        cast=sql.SQL(cast), df=sql.SQL(_DF_PG_SEARCH if pg_search else _DF_TEXT_SEARCH)
    )
    row = conn.execute(
        stmt,
        {
            "text": text,
            "scope_repos": [r for r, _ in scope],
            "scope_branches": [b for _, b in scope],
            "work": work,
            "model": model,
            "q": vector,
            "repos": [h[0] for h in hits],
            "branches": [h[1] for h in hits],
            "files": [h[2] for h in hits],
            "chunks": [h[3] for h in hits],
        },
        prepare=False if pg_search else None,
    ).fetchone()
    assert row is not None  # one aggregate row, whatever matched
    return tuple(row)
