"""The two rankings that fusion combines: keyword (BM25) and vector (cosine, HNSW).

Each returns [(row id, score)], best first, at most `depth` rows, restricted by
the same `Filters`. Keyword ranking is the store's BM25 backend
(`store.keyword`, PostgreSQL text search scored as BM25, or pg_search). Vector
ranking uses the query form `store.vectors` documents, so the planner picks the
partial HNSW index of the embedder's model and dimension; rows of another
model, and rows without a vector (not vectorized by the corpus policy), simply
do not take part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH
from search import language as search_language
from store import catalogue as store_catalogue
from store import chapters as store_chapters
from store import keyword as store_keyword
from store import roundtrip
from store import vectors as store_vectors
from store.bm25 import hits
from store.roundtrip import Statement


@dataclass(frozen=True)
class Filters:
    """What a ranking reads. `scope`: the (repository, branch) pairs read (search.scope:
    each repository's default branch, or the one asked); None: every repository's
    `branch` (or the one `repository`)."""

    repository: str | None = None
    branch: str = DEFAULT_BRANCH
    work: str | None = None
    levels: tuple[int, ...] | None = None
    node_types: tuple[str, ...] | None = None
    scope: tuple[tuple[str, str], ...] | None = None

    def scope_where(self) -> tuple[sql.Composable, dict[str, Any]]:
        """The rows' repository and branch as a WHERE fragment: one `branch = … AND
        repository = ANY(…)` per branch of the scope (the planner's usual form)."""
        if self.scope is None:
            parts: list[sql.Composable] = [sql.SQL("branch = %(branch)s")]
            params: dict[str, Any] = {"branch": self.branch}
            if self.repository is not None:
                parts.append(sql.SQL("repository = %(repository)s"))
                params["repository"] = self.repository
            return sql.SQL(" AND ").join(parts), params
        by_branch: dict[str, list[str]] = {}
        for repository, branch in self.scope:
            by_branch.setdefault(branch, []).append(repository)
        if not by_branch:
            return sql.SQL("false"), {}
        alternatives, params = [], {}
        for n, (branch, repositories) in enumerate(sorted(by_branch.items())):
            alternatives.append(
                sql.SQL("(branch = {b} AND repository = ANY({r}::text[]))").format(
                    b=sql.Placeholder(f"scope_b{n}"), r=sql.Placeholder(f"scope_r{n}")
                )
            )
            params[f"scope_b{n}"], params[f"scope_r{n}"] = branch, repositories
        where = sql.SQL(" OR ").join(alternatives)
        return (sql.SQL("({})").format(where) if len(alternatives) > 1 else where), params

    def as_store_filters(self) -> dict[str, Any]:
        """The filters in the store's keyword backend's form (columns → allowed values)."""
        out: dict[str, Any] = {}
        if self.work is not None:
            out["work"] = self.work
        if self.levels is not None:
            out["level"] = list(self.levels)
        if self.node_types is not None:
            out["node_type"] = list(self.node_types)
        return out

    def where(self) -> tuple[sql.Composable, dict[str, Any]]:
        """A WHERE fragment (ANDed conditions) with named parameters, for `store.vectors`."""
        scope, params = self.scope_where()
        parts: list[sql.Composable] = [scope]
        if self.work is not None:
            parts.append(sql.SQL("work = %(work)s"))
            params["work"] = self.work
        if self.levels is not None:
            parts.append(sql.SQL("level = ANY(%(levels)s::smallint[])"))
            params["levels"] = list(self.levels)
        if self.node_types is not None:
            parts.append(sql.SQL("node_type = ANY(%(node_types)s::text[])"))
            params["node_types"] = list(self.node_types)
        return sql.SQL(" AND ").join(parts), params


def keyword(
    conn: psycopg.Connection, query: str, filters: Filters, depth: int
) -> list[tuple[int, float]]:
    """BM25 ranking of every repository searched (`keyword_split` with no language)."""
    return keyword_split(conn, query, filters, depth).native


@dataclass
class KeywordRankings:
    """`keyword_split`'s answer: the rows of repositories in the query's language and
    those of the others (`foreign`), searched for `content` (the query's content words);
    and the engine that ranks chapters (`chapter_engine`, store.chapters), read with the
    catalogue so that chapter evidence asks nothing more; the branch each repository was
    searched on (`branches`) and, when asked (`chapter_depth`), each one's chapter BM25
    (`chapters`: (chapter folder, score), best first), sent with the rows' BM25."""

    native: list[tuple[int, float]]
    away: list[tuple[int, float]]
    foreign: set[str]
    content: str
    chapter_engine: str | None = None
    branches: dict[str, str] = field(default_factory=dict)
    chapters: dict[str, list[tuple[str, float]]] | None = None


def keyword_split(
    conn: psycopg.Connection,
    query: str,
    filters: Filters,
    depth: int,
    query_lang: str | None = None,
    chapter_depth: int | None = None,
) -> KeywordRankings:
    """BM25 ranking from the store's keyword backend (pg_search when set up, else
    PostgreSQL's own text search, store.fts):
    (the rows of repositories in the query's language, those of the others).

    BM25's statistics are per repository and branch, so each repository of the
    branch is ranked apart. Repositories of one language (the same text search
    configurations) are merged by score: their scores are comparable enough. Across
    languages they are merged by rank: a raw BM25 score depends on the language's
    stemming, stop words and the corpus's statistics (French one-liners would outrank
    the English verse a query quotes), while the first hit of each is a first hit. A
    single repository (the usual case) is exact. The second list holds the rows of the
    repositories none of whose languages is `query_lang` (search.language.foreign;
    empty when the language is unknown), searched for the query's content words (its
    own language's stop words dropped, `store.keyword.content_words`) and ranked the
    same way: fusion weighs it down. With `chapter_depth`, each repository's chapter
    BM25 (store.chapters, `work` its one filter) comes in the same round trip.
    """
    plan = keyword_plan(conn, query, filters, depth, query_lang, chapter_depth)
    return plan.rankings(roundtrip.run(conn, plan.statements))


@dataclass
class KeywordPlan:
    """`keyword_split`'s statements (`statements`, for store.roundtrip.run, alone or with
    other statements of the same round trip) and what reads their rows (`rankings`)."""

    statements: list[Statement | None]
    languages: dict[str, tuple[str, ...]]
    away: set[str]
    content: str
    chapter_engine: str
    branches: dict[str, str]
    depth: int
    chapters: bool

    def rankings(self, found: Sequence[list[Any]]) -> KeywordRankings:
        """The rankings from the statements' rows (`found`, in the statements' order)."""
        n = len(self.languages)
        rankings = [hits(rows) for rows in found[:n]]
        native, foreign = _merge(self.languages, self.away, rankings, self.depth)
        out = KeywordRankings(
            native, foreign, self.away, self.content, self.chapter_engine, self.branches
        )
        if self.chapters:
            out.chapters = {
                r: store_chapters.evidence_of(rows, ()).keyword
                for r, rows in zip(self.languages, found[n : 2 * n], strict=True)
            }
        return out


def keyword_plan(
    conn: psycopg.Connection,
    query: str,
    filters: Filters,
    depth: int,
    query_lang: str | None = None,
    chapter_depth: int | None = None,
    catalogue: store_catalogue.CorpusLanguages | None = None,
) -> KeywordPlan:
    """`keyword_split`'s statements, not sent. `catalogue`: the backend, the repositories
    searched with their languages and the query's lexemes, as the search's first round
    trip read them (store.catalogue.candidates_statement); None: read here, one query."""
    scope = dict(filters.scope) if filters.scope is not None else None
    if catalogue is None:  # in a pipeline, so that the BEGIN of the transaction goes with it
        catalogue = store_catalogue.corpus_languages(
            conn, scope=scope, branch=filters.branch, repository=filters.repository, text=query
        )
    languages = catalogue.languages
    backend = store_keyword.backend_for(catalogue.pg_search, catalogue.text_search)
    away = search_language.foreign(
        query_lang,
        {r: [search_language.config_language(c) for c in cfgs] for r, cfgs in languages.items()},
    )
    branches = {
        r: scope.get(r, filters.branch) if scope is not None else filters.branch for r in languages
    }
    # a foreign repository is searched for the question's content words: the stop
    # words of the question's own language would be taken for words of the book's
    content: str = ""
    away_lexemes: dict[str, list[str]] = {}
    if away and query_lang:
        content, away_lexemes = store_keyword.content_lexemes(
            conn, query, query_lang, {r: branches[r] for r in sorted(away)}
        )
    terms = {
        r: away_lexemes.get(r, []) if r in away else catalogue.query_lexemes(r) for r in languages
    }
    # every repository's ranking (and chapters) in one round trip
    statements = backend.statements(
        [(terms[r], r, branches[r]) for r in languages],
        filters=filters.as_store_filters(),
        k=depth,
    )
    if chapter_depth is not None:
        statements += _chapter_statements(
            terms, branches, filters.work, chapter_depth, catalogue.chapter_engine
        )
    return KeywordPlan(
        list(statements),
        languages,
        away,
        content,
        catalogue.chapter_engine,
        branches,
        depth,
        chapter_depth is not None,
    )


def _chapter_statements(
    terms: dict[str, list[str]],
    branches: dict[str, str],
    work: str | None,
    depth: int,
    engine: str,
) -> list[Statement | None]:
    """Each repository's chapter BM25 (store.chapters), for its query's `terms`."""
    return [
        store_chapters.keyword_statement(
            terms[r], store_chapters.ChapterScope(r, branches[r], work, depth), engine
        )
        for r in branches
    ]


def _merge(
    languages: dict[str, tuple[str, ...]],
    away: set[str],
    rankings: list[list[tuple[int, float]]],
    depth: int,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Each repository's ranking merged: by score within a language, by rank across."""
    groups: dict[tuple[bool, tuple[str, ...]], list[tuple[int, float]]] = {}
    for (repository, language), found in zip(languages.items(), rankings, strict=True):
        groups.setdefault((repository in away, language), []).extend(found)
    out: tuple[list[tuple[int, float]], list[tuple[int, float]]] = ([], [])
    for side in (False, True):
        ranked: list[tuple[int, float, int]] = []  # (rank in its language, -score, row id)
        for (is_away, _), found in groups.items():
            if is_away != side:
                continue
            found.sort(key=lambda x: (-x[1], x[0]))
            ranked.extend((rank, -score, i) for rank, (i, score) in enumerate(found[:depth]))
        ranked.sort()
        out[int(side)].extend((i, -neg) for _, neg, i in ranked[:depth])
    return out


def index_always(filters: Filters) -> bool:
    """True when the vector query's scope is the whole branch: the HNSW index is the plan
    (the query is planned with sorts priced out: store.vectors.VECTOR_SETTINGS says why)."""
    return (
        filters.repository is None
        and filters.work is None
        and filters.levels is None
        and filters.node_types is None
    )


def ef_search(depth: int) -> int:
    """HNSW candidate list size for `depth` rows wanted.

    pgvector's default (40) found 51% of the exact top 10 at 200,000 corpus-like
    rows, 100 found 68%, 200 found 83%, 400 found 90% (bench/RESULTS.md); 4× the
    depth, at least 200, keeps a query under ~10 ms there.
    """
    return min(max(4 * depth, 200), 1000)


def vector(
    conn: psycopg.Connection,
    query_vector: Sequence[float],
    model: str,
    dimension: int,
    filters: Filters,
    depth: int,
) -> list[tuple[int, float]]:
    """Rows nearest the query vector by cosine, as (id, cosine similarity), nearest first.

    Filters are applied to the index's candidates, so the scan is iterative
    (pgvector 0.8 `relaxed_order`: it goes on until `depth` rows pass them) and
    the rows are sorted again here, since relaxed order may swap close ones.
    """
    plan = vector_plan(query_vector, model, dimension, filters, depth, {}, 1)
    return plan.rankings(roundtrip.run(conn, plan.statements))[0]


@dataclass
class VectorPlan:
    """The vector query's statements and each repository's chapter summaries', not sent
    (`statements`, for store.roundtrip.run), and what reads their rows (`rankings`)."""

    statements: list[Statement]
    repositories: list[str]
    depth: int  # the vector ranking's length at most

    def rankings(
        self, found: Sequence[list[Any]]
    ) -> tuple[list[tuple[int, float]], dict[str, list[tuple[str, float]]]]:
        """(the vector ranking, each repository's summaries) from the statements' rows."""
        n = len(self.statements) - len(self.repositories)
        # nearest first, ties by id (a work summary quoting a chapter's): the same ranks
        # every run
        nearest = store_vectors.nearest_of(found[:n], self.depth)
        summaries = {
            r: store_chapters.evidence_of((), rows).summary
            for r, rows in zip(self.repositories, found[n:], strict=True)
        }
        return [(i, 1.0 - d) for i, d in nearest], summaries


def vector_plan(
    query_vector: Sequence[float],
    model: str,
    dimension: int,
    filters: Filters,
    depth: int,
    branches: Mapping[str, str],
    chapter_depth: int,
) -> VectorPlan:
    """The vector query's statements (store.vectors.nearest_statements), then, in the
    same round trip, the cosines of the chapter summaries of each repository of
    `branches` (repository → branch; store.chapters: the `chapter_depth` nearest, `work`
    their one filter); not sent."""
    if len(query_vector) != dimension:
        raise ValueError(f"the query vector has {len(query_vector)} dimensions, not {dimension}")
    where, params = filters.where()
    repositories = sorted(branches)
    statements = store_vectors.nearest_statements(
        model,
        dimension,
        query_vector,
        where=where,
        params=params,
        k=depth,
        ef_search=ef_search(depth),
        sorts=not index_always(filters),
    )
    for r in repositories:
        statements.append(
            store_chapters.summaries_statement(
                query_vector,
                store_chapters.ChapterScope(r, branches[r], filters.work, chapter_depth),
                model=model,
                dimension=dimension,
            )
        )
    return VectorPlan(statements, repositories, depth)
