"""Chapter-level evidence: BM25 over whole chapters, and the chapter summaries' cosines.

A paragraph is a small window on an argument: a question that restates a
chapter's thesis in other words shares a few terms with many of its paragraphs
and most of them with none. Scored as one document, the chapter collects that
evidence; its summary, embedded on its own, states the chapter as a whole. The
search engine (`search.chapters`) turns both into chapter rankings that every
row of the chapter inherits in fusion.

    chapters = ChapterScope("bastiat", branch="main", depth=20)
    found = chapter_evidence(conn, "pourquoi la disette n'enrichit pas", chapters,
                             query_vector, model="intfloat/multilingual-e5-small",
                             dimension=384)
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

Both queries are sent together (one round trip), as two prepared statements; in a
search, the BM25 one goes with the rows' BM25 and the summaries' with the vector
query (search.retrieval: `keyword_statement`, `summaries_statement`), the query's
lexemes computed once for both BM25 statements (store.bm25.LEXEMES_BY_REPOSITORY).
The `work` filter narrows the chapters; other filters (level, node type) do not
apply here, since they choose rows, and the engine only gives chapter evidence to
rows of a chapter.
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
from store import pgsearch
from store import vectors as store_vectors
from store.bm25 import K1, QUERY_LEXEMES, B, bm25_index_exists, lexeme_params, lexemes_of
from store.roundtrip import Statement, run

# pg_search: the chapters' bm25 index (migration 034), as store.pgsearch queries the rows'
_PG_SEARCH = """
WITH keyword AS (
    SELECT c.source_file, pdb.score(c.id) AS score
      FROM chapter_documents c
     WHERE c.lexemes ||| %(terms)s::text
       AND c.repository = %(repository)s AND c.branch = %(branch)s AND {work_c}
     ORDER BY score DESC, c.id
     LIMIT {depth}
)
SELECT 'keyword'::text AS kind, source_file, score::float8 FROM keyword
"""

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
# trip; in a search, with the vector query: store.vectors.nearest_statements), prepared by psycopg
# and planned with its values (the pg_search statement is planned once, generic, under
# settings local to it: store.pgsearch).
# A summary's vector is on its row, or beside it while a job embeds (store.landing).
_SUMMARIES = """
SELECT 'summary'::text, h.source_file,
       1 - ((coalesce(h.embedding, l.vector)::{cast}) <=> %(q)s::{cast})::float8
  FROM hierarchical_content_nodes h
  LEFT JOIN landed_vectors l ON l.node_id = h.id AND l.model = %(model)s
 WHERE h.repository = %(repository)s AND h.branch = %(branch)s AND h.level = 1
   AND (h.embedding_model = %(model)s OR l.node_id IS NOT NULL) AND {work}
 ORDER BY (coalesce(h.embedding, l.vector)::{cast}) <=> %(q)s::{cast}, h.source_file
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


@dataclass(frozen=True)
class ChapterScope:
    """The chapters a search's evidence reads: those of one repository on one branch,
    `work` their one filter (level and node type choose rows, not chapters), the `depth`
    best of each ranking. One object for the statements and `chapter_evidence`, so the
    search engine hands the store what it asks for in one piece."""

    repository: str
    branch: str = DEFAULT_BRANCH
    work: str | None = None
    depth: int = 20

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError("depth must be at least 1")

    def params(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "branch": self.branch,
            "depth": self.depth,
            "work": self.work,
        }


def keyword_statement(
    lexemes: Sequence[str], chapters: ChapterScope, engine: str = "pg_search"
) -> Statement | None:
    """The chapters' BM25 for the query's `lexemes` (store.bm25.lexemes_sql; None
    when there is none: it matches nothing), for `store.roundtrip.run`: a search sends it
    with the rows' BM25 (search.retrieval). `engine`: "pg_search" or "postgres-fts"."""
    if not lexemes:
        return None
    params: dict[str, Any] = {**lexeme_params(lexemes), **chapters.params(), "k1": K1, "b": B}
    work = chapters.work
    if engine == "pg_search":
        work_pg = sql.SQL("c.work = %(work)s" if work is not None else "TRUE")
        stmt = sql.SQL(_PG_SEARCH).format(work_c=work_pg, depth=sql.Literal(int(chapters.depth)))
        # as store.pgsearch runs the rows' query: prepared, a generic plan (the LIMIT in
        # its text), no parallel workers
        return Statement(stmt, params, True, pgsearch.AROUND)
    work_c = sql.SQL("m.work = %(work)s" if work is not None else "TRUE")
    return Statement(sql.SQL(_SQL).format(work=work_c), params)


def summaries_statement(
    query_vector: Sequence[float], chapters: ChapterScope, *, model: str, dimension: int
) -> Statement:
    """The chapter summaries' cosines, for `store.roundtrip.run`: a search sends it with
    its vector query (store.vectors.nearest_statements)."""
    if len(query_vector) != dimension:
        raise ValueError(f"the query vector has {len(query_vector)} dimensions, not {dimension}")
    q: Any = np.asarray(query_vector, dtype=np.float32)
    if dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
        q = HalfVector(q)
    params = {"q": q, "model": model, **chapters.params()}
    summaries = sql.SQL(_SUMMARIES).format(
        cast=sql.SQL(store_vectors.cast_type(dimension)),
        work=sql.SQL("h.work = %(work)s" if chapters.work is not None else "TRUE"),
    )
    return Statement(summaries, params)


def evidence_of(
    keyword: Sequence[tuple[Any, str, Any]], summary: Sequence[tuple[Any, str, Any]]
) -> ChapterEvidence:
    """A repository's evidence from its statements' rows (kind, source_file, score):
    best first, ties by name (deterministic)."""
    found = ChapterEvidence(
        [(chapter_of_file(f), float(score)) for _, f, score in keyword],
        [(chapter_of_file(f), float(score)) for _, f, score in summary],
    )
    found.keyword.sort(key=lambda x: (-x[1], x[0]))
    found.summary.sort(key=lambda x: (-x[1], x[0]))
    return found


def chapter_evidence(
    conn: psycopg.Connection,
    text: str,
    chapters: ChapterScope,
    query_vector: Sequence[float] | None = None,
    *,
    model: str | None = None,
    dimension: int | None = None,
    engine: str | None = None,
    lexemes: Sequence[str] | None = None,
) -> ChapterEvidence:
    """Chapter BM25 and (given a query vector) the summaries' cosines, in one round trip.

    `engine`: "pg_search" or "postgres-fts" (store.keyword's backend names), as a
    search has it from the catalogue (store.catalogue.CorpusLanguages.chapter_engine);
    None: pg_search when the chapters' bm25 index is there (one more query).
    `lexemes`: the text's (store.bm25.lexemes_sql), as a search has them from the
    catalogue; None: asked first (one more round trip). A search sends these statements
    with its others (`keyword_statement`, `summaries_statement`: search.retrieval)."""
    summaries: Statement | None = None
    if query_vector is not None and model is not None and dimension is not None:
        summaries = summaries_statement(query_vector, chapters, model=model, dimension=dimension)
    if engine is None:
        indexed = bm25_index_exists(conn, pgsearch.CHAPTER_INDEX)
        engine = "pg_search" if indexed else "postgres-fts"
    if lexemes is None:
        lexemes = lexemes_of(conn, [(text, chapters.repository, chapters.branch)])[0]
    keyword = keyword_statement(lexemes, chapters, engine)
    keyword_rows, summary_rows = run(conn, [keyword, summaries])
    return evidence_of(keyword_rows, summary_rows)
