"""Chapter-level evidence: BM25 over whole chapters, and the chapter summaries' cosines.

A paragraph is a small window on an argument: a question that restates a
chapter's thesis in other words shares a few terms with many of its paragraphs
and most of them with none. Scored as one document, the chapter collects that
evidence; its summary, embedded on its own, states the chapter as a whole. The
search engine (`search.chapters`) turns both into chapter rankings that every
row of the chapter inherits in fusion.

    found = chapter_evidence(conn, "pourquoi la disette n'enrichit pas", query_vector,
                             model="intfloat/multilingual-e5-small", dimension=384,
                             repository="bastiat", branch="main", depth=20)
    found.keyword   # [(chapter folder, BM25 score)], best first
    found.summary   # [(chapter folder, cosine of its summary)], best first

Chapter BM25 is the same Okapi BM25 as `store.bm25` (k1 1.2, b 0.75, Lucene's
idf) with a chapter — every paragraph (level 0) of one `source.md` — as the
document: tf sums the paragraphs' counts, |D| their lengths. A chapter is one row
of `chapter_documents` (migration 034, written by the loader: store.catalogue),
its paragraphs' lexemes one after the other. With pg_search (`engine`
"pg_search") its bm25 index over those lexemes scores them (N and avgdl of the
whole index, as for the rows: store.pgsearch); without it (store.fts) the
formula is computed in SQL over the paragraphs the rows' GIN index matches,
with the chapters' lengths from `chapter_documents`: N and avgdl are counted
over the chapters of the (repository, branch), df over the chapters that
contain the term. Summaries are level-1 rows; their cosine is computed for all
of them (one per chapter: a few hundred for a large book), exactly, without the
HNSW index, so no chapter is missed by an approximate scan.

Both queries are sent together (one round trip), as two prepared statements.
The `work` filter narrows the chapters; other filters (level, node type) do not
apply here, since they choose rows, and the engine only gives chapter evidence to
rows of a chapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH
from store import pgsearch
from store import vectors as store_vectors
from store.bm25 import K1, QUERY_LEXEMES, B, bm25_index_exists

# pg_search: the chapters' bm25 index (migration 034), as store.pgsearch queries the rows'
_PG_SEARCH = (
    "WITH"
    + QUERY_LEXEMES
    + """,
keyword AS (
    SELECT c.source_file, pdb.score(c.id) AS score
      FROM chapter_documents c
     WHERE c.lexemes ||| (SELECT coalesce(string_agg(lexeme, ' '), '') FROM q)
       AND c.repository = %(repository)s AND c.branch = %(branch)s AND {work_c}
     ORDER BY score DESC, c.id
     LIMIT {depth}
)
SELECT 'keyword'::text AS kind, source_file, score::float8 FROM keyword
"""
)

# PostgreSQL's text search (store.fts): tf from the paragraphs the rows' GIN index
# matches (a paragraph's tsvector counts every occurrence; a whole chapter's would not:
# at most 256 positions a lexeme), |D|, N and avgdl from the chapters' rows
_SQL = (
    "WITH"
    + QUERY_LEXEMES
    + """,
stats AS (
    SELECT count(*)::float8 AS n, avg(doc_len)::float8 AS avgdl
      FROM chapter_documents WHERE repository = %(repository)s AND branch = %(branch)s
),
tsq AS (
    SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''',
                      ' | ')::tsquery AS query,
           array_agg(lexeme) AS lexemes
      FROM q
),
paragraphs AS MATERIALIZED (
    SELECT h.source_file, h.tsv
      FROM hierarchical_content_nodes h, tsq
     WHERE h.tsv @@ tsq.query AND h.level = 0
       AND h.repository = %(repository)s AND h.branch = %(branch)s
),
matched AS MATERIALIZED (
    SELECT c.source_file, c.doc_len, t.lexeme, t.tf, c.work
      FROM (SELECT p.source_file, u.lexeme, sum(cardinality(u.positions))::float8 AS tf
              FROM paragraphs p, tsq, unnest(p.tsv) AS u
             WHERE u.lexeme = ANY(tsq.lexemes)
             GROUP BY 1, 2) AS t
      JOIN chapter_documents c
        ON c.repository = %(repository)s AND c.branch = %(branch)s
       AND c.source_file = t.source_file
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM matched GROUP BY lexeme),
keyword AS (
    SELECT 'keyword'::text AS kind, m.source_file,
           sum(ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5))
               * m.tf * (%(k1)s::float8 + 1)
               / (m.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * m.doc_len / s.avgdl))
           ) AS score
      FROM matched m JOIN df d USING (lexeme) CROSS JOIN stats s
     WHERE {work}
     GROUP BY m.source_file
     ORDER BY score DESC, m.source_file
     LIMIT %(depth)s
)
SELECT kind, source_file, score FROM keyword
"""
)

# The summaries' cosines: a statement of its own, sent with the BM25 one (one round
# trip), prepared by psycopg and planned with its values (the pg_search statement is
# planned once, generic, under settings local to it: store.pgsearch).
_SUMMARIES = """
SELECT 'summary'::text, source_file,
       1 - ((embedding::{cast}) <=> %(q)s::{cast})::float8
  FROM hierarchical_content_nodes
 WHERE repository = %(repository)s AND branch = %(branch)s AND level = 1
   AND embedding_model = %(model)s AND {work}
 ORDER BY (embedding::{cast}) <=> %(q)s::{cast}, source_file
 LIMIT %(depth)s
"""


@dataclass
class ChapterEvidence:
    """Chapter rankings of one repository, best first; a chapter is its folder."""

    keyword: list[tuple[str, float]] = field(default_factory=list)
    summary: list[tuple[str, float]] = field(default_factory=list)


def chapter_of_file(source_file: str) -> str:
    """A chapter is a folder: its source.md and summary.md share it."""
    return source_file.rsplit("/", 1)[0]


def chapter_evidence(
    conn: psycopg.Connection,
    text: str,
    query_vector: Sequence[float] | None,
    *,
    model: str | None,
    dimension: int | None,
    repository: str,
    branch: str = DEFAULT_BRANCH,
    work: str | None = None,
    depth: int = 20,
    engine: str | None = None,
) -> ChapterEvidence:
    """Chapter BM25 and (given a query vector) the summaries' cosines, in one round trip.

    `engine`: "pg_search" or "postgres-fts" (store.keyword's backend names), as a
    search has it from the catalogue (store.catalogue.CorpusLanguages.chapter_engine);
    None: pg_search when the chapters' bm25 index is there (one more query)."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    params: dict[str, Any] = {
        "text": text,
        "repository": repository,
        "branch": branch,
        "depth": depth,
        "k1": K1,
        "b": B,
        "work": work,
    }
    work_sql = sql.SQL("work = %(work)s" if work is not None else "TRUE")
    work_c = sql.SQL("m.work = %(work)s" if work is not None else "TRUE")
    summaries: sql.Composed | None = None
    if query_vector is not None and model is not None and dimension is not None:
        if len(query_vector) != dimension:
            raise ValueError(
                f"the query vector has {len(query_vector)} dimensions, not {dimension}"
            )
        q: Any = np.asarray(query_vector, dtype=np.float32)
        if dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
            q = HalfVector(q)
        params.update(q=q, model=model)
        summaries = sql.SQL(_SUMMARIES).format(
            cast=sql.SQL(store_vectors.cast_type(dimension)), work=work_sql
        )
    if engine is None:
        indexed = bm25_index_exists(conn, pgsearch.CHAPTER_INDEX)
        engine = "pg_search" if indexed else "postgres-fts"
    found = ChapterEvidence()
    around: tuple[str, str] | None = None
    if engine == "pg_search":
        work_pg = sql.SQL("c.work = %(work)s" if work is not None else "TRUE")
        stmt = sql.SQL(_PG_SEARCH).format(work_c=work_pg, depth=sql.Literal(int(depth)))
        # as store.pgsearch runs the rows' query: prepared, a generic plan (the LIMIT in
        # its text), no parallel workers
        around, prepare = pgsearch.AROUND, True
    else:
        stmt, prepare = sql.SQL(_SQL).format(work=work_c), None
    # settings local to the transaction: an autocommit connection needs one
    own = conn.transaction() if around and conn.autocommit else nullcontext()
    with conn.pipeline(), own:
        if around:
            conn.execute(around[0])
        cursors = [conn.execute(stmt, params, prepare=prepare)]
        if around:
            conn.execute(around[1])
        if summaries is not None:
            cursors.append(conn.execute(summaries, params))
    rows = [row for cur in cursors for row in cur.fetchall()]
    for kind, source_file, score in rows:
        ranking = found.keyword if kind == "keyword" else found.summary
        ranking.append((chapter_of_file(source_file), float(score)))
    # UNION ALL keeps no order: best first, ties by name (deterministic)
    found.keyword.sort(key=lambda x: (-x[1], x[0]))
    found.summary.sort(key=lambda x: (-x[1], x[0]))
    return found
