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

Chapter BM25 is the same Okapi BM25 as `store.keyword` (k1 1.2, b 0.75, Lucene's
idf) with a chapter — every paragraph (level 0) of one `source.md` — as the
document: tf sums the paragraphs' counts, |D| their lengths; N and avgdl are
counted over the chapters of the (repository, branch), df over the chapters
that contain the term. It reads the inverted index that triggers keep per
chapter (`bm25_chapters`, `bm25_chapter_terms`: migration 011), so a query
looks up its few lexemes instead of re-reading every paragraph. Summaries are level-1 rows; their cosine is computed for
all of them (one per chapter: a few hundred for a large book), exactly, without
the HNSW index, so no chapter is missed by an approximate scan.

Both queries run as one statement (one round trip). The `work` filter narrows
the chapters; other filters (level, node type) do not apply here, since they
choose rows, and the engine only gives chapter evidence to rows of a chapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH
from store import vectors as store_vectors
from store.keyword import K1, QUERY_LEXEMES, B

_SQL = (
    "WITH"
    + QUERY_LEXEMES
    + """,
stats AS (
    SELECT count(*)::float8 AS n, avg(doc_len)::float8 AS avgdl
      FROM bm25_chapters WHERE repository = %(repository)s AND branch = %(branch)s
),
matched AS MATERIALIZED (
    -- LATERAL: one primary-key lookup per query lexeme, whatever the statistics say
    SELECT c.source_file, c.doc_len, t.lexeme, t.tf::float8 AS tf, c.work
      FROM q CROSS JOIN LATERAL (
           SELECT lexeme, chapter_id, tf FROM bm25_chapter_terms WHERE lexeme = q.lexeme
           ) AS t
      JOIN bm25_chapters c ON c.id = t.chapter_id
     WHERE c.repository = %(repository)s AND c.branch = %(branch)s
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
{summaries}
"""
)

_SUMMARIES = """
UNION ALL
(SELECT 'summary'::text, source_file,
        1 - ((embedding::{cast}) <=> %(q)s::{cast})::float8
   FROM hierarchical_content_nodes
  WHERE repository = %(repository)s AND branch = %(branch)s AND level = 1
    AND embedding_model = %(model)s AND {work}
  ORDER BY (embedding::{cast}) <=> %(q)s::{cast}, source_file
  LIMIT %(depth)s)
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
) -> ChapterEvidence:
    """Chapter BM25 and (given a query vector) the summaries' cosines, in one statement."""
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
    summaries: sql.Composable = sql.SQL("")
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
    stmt = sql.SQL(_SQL).format(work=work_c, summaries=summaries)
    found = ChapterEvidence()
    for kind, source_file, score in conn.execute(stmt, params).fetchall():
        ranking = found.keyword if kind == "keyword" else found.summary
        ranking.append((chapter_of_file(source_file), float(score)))
    # UNION ALL keeps no order: best first, ties by name (deterministic)
    found.keyword.sort(key=lambda x: (-x[1], x[0]))
    found.summary.sort(key=lambda x: (-x[1], x[0]))
    return found
