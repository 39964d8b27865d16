"""Okapi BM25 as both keyword engines rank with it, and the interface they implement.

    class PgSearchBackend(KeywordBackend): ...     # store.pgsearch
    class FtsBackend(KeywordBackend): ...          # store.fts
    hits = backend.search(conn, "chandelles soleil lumière", repository="bastiat",
                          branch="main", filters={"level": 0}, k=10)   # [(row id, score), …]

Both rank with Okapi BM25,

    score(D, Q) = Σ_{t ∈ Q} idf(t) · tf(t, D) · (k1 + 1) / (tf(t, D) + k1 · (1 − b + b · |D| / avgdl))
    idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))        (Lucene's, never negative)

with k1 = 1.2, b = 0.75. A document is one row; its terms are the lexemes of
its `tsv` (its work's text search configuration: the language's stop
words, unaccent, then its stemmer) and |D| its lexeme count (`doc_len`).
pg_search (store.pgsearch) indexes those lexemes in its bm25 index; without it
store.fts computes the formula over the rows its GIN index matches, with N and
avgdl of the (repository, branch) from the catalogue (`branch_languages`,
written by the loader: store.catalogue). Filters (work, level, node_type…)
narrow the results, never the statistics, so a score does not depend on the
filters asked for. (The SQL BM25 over term tables kept by triggers, the default
until migration 034, is retired: issue 24.)

Query parsing: the text goes through `glossator_tsvector` (the function the
rows' trigger uses: stop words, unaccent, stemmer) with each configuration the
branch uses, and the distinct lexemes are ORed (BM25 ranks documents with any
of the terms; `websearch_to_tsquery` would AND them). Quotes, operators and
punctuation in the user's text are plain text here: only lexemes are looked up.

What the engines share lives here, below them; which engine a database gets is
store.keyword's choice, above them (it imports both: no module imports back up).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import psycopg
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH

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
        """The SQL returning (id, score) best first, the `k` best, with %(text)s,
        %(repository)s, %(branch)s and %(k)s placeholders (a backend may write `k` into
        the text instead: store.pgsearch), and the filter parameters."""

    def _params(
        self, text: str, repository: str, branch: str, filters: Filters | None, k: int
    ) -> tuple[sql.Composed, dict[str, Any]]:
        if k < 1:
            raise ValueError("k must be at least 1")
        query, params = self.query(filters, k)
        params.update(text=text, repository=repository, branch=branch, k=k, k1=K1, b=B)
        return query, params

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
        """The rankings of several (text, repository, branch), in one round trip."""
        stmts = [
            self._params(text, repository, branch, filters, k) if text.strip() else None
            for text, repository, branch in requests
        ]
        if not any(stmts):
            return [[] for _ in requests]
        # settings local to the transaction: an autocommit connection needs one
        own = conn.transaction() if self.around and conn.autocommit else nullcontext()
        with conn.pipeline(), own:
            if self.around:
                conn.execute(self.around[0])
            cursors = [
                conn.execute(*stmt, prepare=self.prepare) if stmt else None for stmt in stmts
            ]
            if self.around:
                conn.execute(self.around[1])
        return [
            [(int(i), float(s)) for i, s in cur.fetchall()] if cur is not None else []
            for cur in cursors
        ]

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
        stmt, params = self._params(query, repository, branch, filters, k)
        cur = await conn.execute(stmt, params)
        return [(int(i), float(s)) for i, s in await cur.fetchall()]


# The query's distinct lexemes, through each text search configuration the
# (repository, branch) uses: the CTE `q` every BM25 query here starts with
# (store.chapters too).
QUERY_LEXEMES = """
q AS (
    SELECT DISTINCT l.lexeme
      FROM branch_languages c,
           unnest(tsvector_to_array(glossator_tsvector(c.ts_config, %(text)s::text))) AS l(lexeme)
     WHERE c.repository = %(repository)s AND c.branch = %(branch)s
)"""


def query_lexemes(
    conn: psycopg.Connection, text: str, *, repository: str, branch: str = "main"
) -> list[str]:
    """The terms a query is searched for on the branch by store.fts (`QUERY_LEXEMES`:
    through each configuration the branch's rows use), sorted: explanations, tests, and
    bench/load.py's `bm25s` comparison over the same tokens."""
    rows = conn.execute(
        "WITH" + QUERY_LEXEMES + " SELECT lexeme FROM q ORDER BY 1",
        {"text": text, "repository": repository, "branch": branch},
    ).fetchall()
    return [str(r[0]) for r in rows]


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
