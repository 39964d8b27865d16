"""Okapi BM25 as both keyword engines rank with it, and the interface they implement.

    class PgSearchBackend(KeywordBackend): ...     # store.pgsearch
    class FtsBackend(KeywordBackend): ...          # store.fts
    hits = backend.search(conn, "chandelles soleil lumière", repository="bastiat",
                          branch="main", filters={"level": 0}, k=10)   # [(row id, score), …]

A document is one row, its terms the lexemes of its `tsv`; filters narrow the results,
never the corpus statistics. A query's lexemes are ORed and computed once a search
(LEXEMES_BY_REPOSITORY). The formula, the parameters and how a query is parsed:
docs/store.md, "BM25, shared by both engines". What the engines share lives here,
below them; which engine a database gets is store.keyword's choice, above them.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH
from store.roundtrip import Statement, run

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
FILTER_COLUMNS = ("work", "level", "node_type", "source_file", "parent_source_file")

Filters = Mapping[str, Any]
Hits = list[tuple[int, float]]


def filter_sql(filters: Filters | None, alias: str = "h") -> tuple[sql.Composable, dict[str, Any]]:
    """`alias.col = ANY(%(f_col)s) AND …` for the known filter columns, and its parameters.

    A value may be one value or a sequence of them; None means no filter.
    """
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for key, value in (filters or {}).items():
        if key not in FILTER_COLUMNS:
            raise ValueError(f"unknown filter {key!r}: use one of {', '.join(FILTER_COLUMNS)}")
        if value is None:
            continue
        values = (
            list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        )
        if key == "level":
            values = [int(v) for v in values]
        parts.append(
            sql.SQL("{}.{} = ANY({})").format(
                sql.Identifier(alias), sql.Identifier(key), sql.Placeholder(f"f_{key}")
            )
        )
        params[f"f_{key}"] = values
    if not parts:
        return sql.SQL("TRUE"), params
    return sql.SQL(" AND ").join(parts), params


class KeywordBackend(ABC):
    """Ranks rows of a repository's branch for a text query; one method to implement."""

    name: str = "?"
    # what a user of this backend should know, said by `glossator db status` and
    # `glossator doctor` ("" when nothing): store.fts's lower quality at scale
    caveat: str = ""

    @abstractmethod
    def query(self, filters: Filters | None, k: int) -> tuple[sql.Composed, dict[str, Any]]:
        """The SQL returning (id, score) best first, the `k` best, with the query's
        lexemes (%(lexemes)s, or %(terms)s: `lexeme_params`), %(repository)s, %(branch)s
        and %(k)s placeholders (a backend may write `k` into the text instead:
        store.pgsearch), and the filter parameters."""

    def statements(
        self,
        requests: Sequence[tuple[Sequence[str], str, str]],
        *,
        filters: Filters | None = None,
        k: int = 10,
    ) -> list[Statement | None]:
        """The statements ranking each (query's lexemes, repository, branch), for
        `store.roundtrip.run` (None for a query of no lexeme: it matches nothing)."""
        if k < 1:
            raise ValueError("k must be at least 1")
        out: list[Statement | None] = []
        for lexemes, repository, branch in requests:
            if not lexemes:
                out.append(None)
                continue
            query, params = self.query(filters, k)
            params.update(
                lexeme_params(lexemes), repository=repository, branch=branch, k=k, k1=K1, b=B
            )
            out.append(Statement(query, params, self.prepare, self.around))
        return out

    # statements run around a search's queries, in their round trip and transaction
    # (settings local to it: see store.pgsearch)
    around: tuple[str, str] | None = None
    # psycopg prepares a statement run 5 times (None: its default); True: at once (its
    # plan cached for the connection: store.pgsearch)
    prepare: bool | None = None

    def search(
        self,
        conn: psycopg.Connection,
        query: str,
        *,
        repository: str,
        branch: str = DEFAULT_BRANCH,
        filters: Filters | None = None,
        k: int = 10,
    ) -> Hits:
        return self.search_many(conn, [(query, repository, branch)], filters=filters, k=k)[0]

    def search_many(
        self,
        conn: psycopg.Connection,
        requests: Sequence[tuple[str, str, str]],
        *,
        filters: Filters | None = None,
        k: int = 10,
    ) -> list[Hits]:
        """The rankings of several (text, repository, branch): their lexemes in one
        round trip, the rankings in another (a search has the lexemes from its catalogue
        statement and sends `statements` with its other queries: search.retrieval)."""
        if k < 1:
            raise ValueError("k must be at least 1")
        terms = lexemes_of(conn, requests)
        stmts = self.statements(
            [(t, r, b) for t, (_, r, b) in zip(terms, requests, strict=True)], filters=filters, k=k
        )
        return [hits(rows) for rows in run(conn, stmts)]

    async def asearch(
        self,
        conn: psycopg.AsyncConnection,
        query: str,
        *,
        repository: str,
        branch: str = DEFAULT_BRANCH,
        filters: Filters | None = None,
        k: int = 10,
    ) -> Hits:
        if not query.strip():
            return []
        cur = await conn.execute(
            _LEXEMES, {"text": query, "repository": repository, "branch": branch}
        )
        row = await cur.fetchone()
        stmt = self.statements(
            [(list(row[0]) if row else [], repository, branch)], filters=filters, k=k
        )[0]
        if stmt is None:
            return []
        cur = await conn.execute(stmt.query, stmt.params)
        return hits(await cur.fetchall())


def hits(rows: Sequence[tuple[Any, Any]]) -> Hits:
    return [(int(i), float(s)) for i, s in rows]


# The query's lexemes, given (`lexeme_params`): the CTE `q` of store.fts's BM25 queries
# and store.chapters'. pg_search's take them as one text (%(terms)s).
QUERY_LEXEMES = """
q AS (SELECT unnest(%(lexemes)s::text[]) AS lexeme)"""


def lexemes_sql(text: str, repository: str, branch: str) -> str:
    """A text's distinct lexemes through each text search configuration of a
    (repository, branch)'s rows, as a jsonb array (`text`, `repository`, `branch`: SQL
    expressions): glossator_tsvector, the function the rows' trigger uses (stop words,
    unaccent, stemmer). In the order PostgreSQL's DISTINCT gives them (its hash), as
    each BM25 statement's own CTE did when it computed them: pg_search sums a
    document's term scores in the query's order, in float4, and the sorted order moved
    scores by their last bit (up to 1.7e-7 of a score on bench/queries.jsonl, no
    ranking's order)."""
    return (
        "(SELECT coalesce(jsonb_agg(q.lexeme), '[]') FROM (SELECT DISTINCT l.lexeme"
        " FROM branch_languages c,"
        f" unnest(tsvector_to_array(glossator_tsvector(c.ts_config, {text}))) AS l(lexeme)"
        f" WHERE c.repository = {repository} AND c.branch = {branch}) AS q)"
    )


# The lexemes of %(text)s in each repository of the catalogue's rows `where` keeps, as
# jsonb {repository: [lexeme, …]} (NULL: none). A search asks it in its catalogue
# statement (store.catalogue): once for both its BM25 statements, the rows' and the
# chapters'.
LEXEMES_BY_REPOSITORY = (
    "(SELECT jsonb_object_agg(p.repository, "
    + lexemes_sql("%(text)s::text", "p.repository", "p.branch")
    + ") FROM (SELECT DISTINCT repository, branch FROM branch_languages WHERE {where}) AS p)"
)
_LEXEMES = "SELECT " + lexemes_sql("%(text)s::text", "%(repository)s", "%(branch)s")


def lexeme_params(lexemes: Sequence[str]) -> dict[str, Any]:
    """The parameters of a BM25 statement for these lexemes: store.fts's and
    store.chapters' `QUERY_LEXEMES` (an array), pg_search's (one text, split on spaces)."""
    return {"lexemes": list(lexemes), "terms": " ".join(lexemes)}


def lexemes_of(
    conn: psycopg.Connection, requests: Sequence[tuple[str, str, str]]
) -> list[list[str]]:
    """The lexemes of each (text, repository, branch), one round trip (none for blanks)."""
    stmts = [
        Statement(_LEXEMES, {"text": t, "repository": r, "branch": b}) if t.strip() else None
        for t, r, b in requests
    ]
    return [list(rows[0][0]) if rows else [] for rows in run(conn, stmts)]


def query_lexemes(
    conn: psycopg.Connection, text: str, *, repository: str, branch: str = "main"
) -> list[str]:
    """The terms a query is searched for on the branch (`lexemes_sql`: through
    each configuration the branch's rows use), sorted: explanations, tests, and
    bench/load.py's `bm25s` comparison over the same tokens."""
    return sorted(lexemes_of(conn, [(text, repository, branch)])[0])


# N and avgdl of the (repository, branch), over every configuration it uses: the CTE
# `stats` of store.fts's BM25 query.
CORPUS_STATS = """
stats AS (
    SELECT sum(n_docs)::float8 AS n, sum(total_len)::float8 / nullif(sum(n_docs), 0) AS avgdl
      FROM branch_languages WHERE repository = %(repository)s AND branch = %(branch)s
)"""

# pg_search's bm25 indexes (store.pgsearch, migration 034): the rows' and the chapters'.
# Named here, where both engines and the choice between them (store.keyword) read them.
ROWS_BM25_INDEX = "hcn_bm25"
CHAPTER_BM25_INDEX = "chapter_documents_bm25"
# the GIN index on the rows' tsvectors that PostgreSQL's own text search uses (store.fts)
TSV_INDEX = "hcn_tsv"


def bm25_index_sql(name: str) -> str:
    """A boolean SQL expression: `name` is a bm25 index (pg_search's access method, so
    the extension is there too). A catalogue lookup, as a column of any SELECT."""
    if not name.replace("_", "").isalnum():  # the index names above, never a user's text
        raise ValueError(f"not an index name: {name!r}")
    return (
        "EXISTS (SELECT 1 FROM pg_class c JOIN pg_am a ON a.oid = c.relam"
        f" WHERE c.oid = to_regclass('{name}') AND a.amname = 'bm25')"
    )


def bm25_index_exists(conn: psycopg.Connection, name: str = ROWS_BM25_INDEX) -> bool:
    """This bm25 index exists (the rows' by default): store.pgsearch, store.segments."""
    row = conn.execute(f"SELECT {bm25_index_sql(name)}").fetchone()
    return bool(row and row[0])
