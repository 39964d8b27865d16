"""`search()`: keyword and vector rankings, fused, optionally reranked, with context.

    options = SearchOptions(k=5)
    response = search(db.pool, "pétition des fabricants de chandelles", options,
                      query_vector=vector, reranker=None)
    for hit in response.hits:
        print(hit.citation, hit.scores.fused)

Modes: `bm25` (the store's keyword backend), `vector` (the query embedded as a
query, nearest rows by cosine through the per-model HNSW index), `hybrid`
(both, fused by weighted reciprocal rank fusion, plus the chapter rankings that
every row of a chapter inherits: `search.chapters`). What takes part in vector
search is what the corpus policy vectorized: with the economical policy only
summaries carry vectors, so a question matched by meaning lands on a chapter
summary, which `with_children` opens onto the chapter's text.

The query's vector is given, not computed here: `search.service.SearchService`
embeds it (and caches it) for the tools and the CLI. The stages are
`search.stages`; they are timed (`response.timings_ms`) so the CLI, the benchmark
and `glossator eval` can show where the time goes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import psycopg

from core.vocabulary import DEFAULT_BRANCH
from indexer.corpus.words import stop_words
from search import rows as search_rows
from search import stages as search_stages
from search.freshness import freshness, freshness_of
from search.fusion import TRUST_ROWS, content_words, holds_enough, keyword_trust, trusted
from search.options import (
    AGENT_MAX_PER_CHAPTER,
    MAX_K,
    MAX_QUERY_CHARS,
    NODE_TYPES,
    QueryVector,
    SearchOptions,
    check_query,
)
from search.rerank import Reranker
from search.results import Freshness, SearchResponse
from search.rows import Row
from search.scope import Scope, check_names, scope_of
from search.tuning import TUNING, Fusion, Tuning
from store import catalogue as store_catalogue
from store import commits as store_commits
from store import roundtrip
from store import tips as store_tips
from store.catalogue import CorpusLanguages
from store.commits import IndexedOn

__all__ = [
    "AGENT_MAX_PER_CHAPTER",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "NODE_TYPES",
    "index_freshness",
    "search",
]

log = logging.getLogger(__name__)

DEFAULT_OPTIONS = SearchOptions()


def search(
    conn_or_pool: search_rows.ConnOrPool,
    query: str,
    options: SearchOptions = DEFAULT_OPTIONS,
    *,
    query_vector: QueryVector | None = None,
    reranker: Reranker | None = None,
    tuning: Tuning = TUNING,
) -> SearchResponse:
    """Search the indexed corpus; see the module docstring and `SearchOptions`.

    Vector and hybrid modes need `query_vector` (the query embedded as a query);
    `reranker` reranks when given and `options.rerank` is true; `tuning` holds the
    fusion constants (`options.rrf_k` None: the tuning's)."""
    started = time.perf_counter()
    query = check_query(query)
    options = options.checked()
    if options.mode != "bm25" and query_vector is None:
        raise ValueError(f"{options.mode} search needs the query's vector (query_vector)")
    fusion = tuning.fusion
    rrf_k = fusion.rrf_k if options.rrf_k is None else options.rrf_k
    vector = query_vector if options.mode != "bm25" else None
    depth = fusion.chapter_depth  # chapter evidence's, fetched with the rankings
    timings: dict[str, float] = {}
    with search_rows.connection(conn_or_pool) as conn, roundtrip.batches(conn):
        first = opening(conn, query, options)
        scope = first.scope
        options, rankings = retrieve(conn, query, vector, options, first, timings, depth)
        t = time.perf_counter()
        fused = search_stages.fuse(rankings, options, rrf_k, fusion.foreign_keyword_weight)
        rows, climbed, quoted = search_stages.rows_and_passages(
            conn, fused.ids, vector, options, search_stages.phrases(query, options)
        )
        if options.mode == "hybrid" and fusion.keyword_trust_power > 0:
            options, fusion = keyword_trusted(query, rankings.keyword, rows, options, fusion)
            fused = search_stages.fuse(rankings, options, rrf_k, fusion.foreign_keyword_weight)
        if options.mode == "hybrid" and fusion.keyword_row_min_words > 0 and rankings.keyword:
            rankings.lists["keyword"] = keyword_floor(
                query, rankings.keyword, rows, options, fusion
            )
            fused = search_stages.fuse(rankings, options, rrf_k, fusion.foreign_keyword_weight)
        fused.quoted = quoted
        fused = search_stages.chapter_evidence(
            conn, query, vector, rows, rankings, fused, options, fusion, rrf_k, timings
        )
        order = search_stages.caps(fused, rows, options)
        order, fused_scores = search_stages.page_tail(order, rows, fused, options, fusion, rrf_k)
        scores = search_stages.scores(rankings, fused, fused_scores)
        timings["fuse"] = search_stages.ms(t)
        order, report = search_stages.rerank(reranker, query, order, rows, scores, options)
        if report.status != "disabled":
            timings["rerank"] = report.seconds * 1000 if report.seconds else 0.0
        t = time.perf_counter()
        hits = search_stages.hits(order[: options.k], rows, scores)
        search_stages.attach_context(conn, hits, options, climbed)
        timings["context"] = search_stages.ms(t)
        index = index_freshness(
            conn, scope, options.repository, [h.citation.repository for h in hits], first.read
        )
    timings["total"] = search_stages.ms(started)
    log.debug(
        "search mode=%s k=%d hits=%d in %.1f ms",
        options.mode,
        options.k,
        len(hits),
        timings["total"],
    )
    return SearchResponse(
        query=query,
        mode=options.mode,
        k=options.k,
        branch=scope.label,
        filters=_filters(options),
        hits=hits,
        rerank=report,
        embedding_model=vector.model if vector is not None else None,
        timings_ms=timings,
        index=index,
        notes=scope.notes(bool(hits)),
    )


def retrieve(
    conn: psycopg.Connection,
    query: str,
    vector: QueryVector | None,
    options: SearchOptions,
    first: Opening,
    timings: dict[str, float],
    depth: int,
) -> tuple[SearchOptions, search_stages.Rankings]:
    """The rankings (search.stages.retrieve), and when a work filter found nothing, again
    with the work as stored if it is stored in the other Unicode normalization (the
    options returned name it)."""
    scope, catalogue = first.scope, first.catalogue
    rankings = search_stages.retrieve(
        conn, query, vector, options, scope, timings, depth, catalogue
    )
    if options.work is not None and rankings.empty():  # nothing found: is it a typo?
        stored = search_rows.resolve_work(conn, options.work, scope.pairs, scope.described)
        if stored != options.work:  # the work's folder in the other Unicode normalization
            options = replace(options, work=stored)
            rankings = search_stages.retrieve(
                conn, query, vector, options, scope, timings, depth, catalogue
            )
    return options, rankings


def _filters(options: SearchOptions) -> dict[str, Any]:
    levels, types = options.levels, options.node_types
    shown = {
        "repository": options.repository,
        "work": options.work,
        "level": list(levels) if levels else None,
        "node_type": list(types) if types else None,
    }
    return {key: value for key, value in shown.items() if value is not None}


@dataclass(frozen=True)
class Opening:
    """What a search reads before its rankings, in its first round trip (`opening`)."""

    scope: Scope
    catalogue: CorpusLanguages | None  # the scope's (keyword modes); None: vector mode
    # what freshness reads, for every repository the search may draw on: each branch's
    # indexed commits (store.commits.indexed_by_branch) and the recorded tips
    read: tuple[dict[str, list[IndexedOn]], dict[str, dict[str, str]]]


def opening(conn: psycopg.Connection, query: str, options: SearchOptions) -> Opening:
    """The scope (search.scope), the catalogue of the repositories it reads
    (store.catalogue: the keyword engines, the languages, the query's lexemes) and what
    the answer's freshness needs, in one round trip: none of them waits for another's
    answer. The catalogue and the freshness are read for every (repository, branch) the
    request may read (the repository and branch asked, within `readable`), then kept to
    the scope's pairs here: a few rows per repository."""
    check_names(options.repository, options.branch)  # before any query
    readable = options.readable
    named = [options.repository] if options.repository is not None else None
    repositories = named if named is not None or readable is None else sorted(readable)
    keyword = options.mode in ("hybrid", "bm25")
    candidates = store_catalogue.candidates_statement(
        query, branch=options.branch, repository=options.repository, readable=readable
    )
    known, catalogue_rows, indexed, tips = roundtrip.run(
        conn,
        [
            store_tips.default_branches_statement(),
            candidates if keyword else None,
            store_commits.indexed_statement(repositories),
            store_tips.tips_statement(repositories),
        ],
    )
    scope = scope_of(
        store_tips.default_branches_of(known, DEFAULT_BRANCH),
        options.repository,
        options.branch,
        readable,
    )
    catalogue = (
        store_catalogue.Candidates.of(catalogue_rows).within(scope.branches) if keyword else None
    )
    read = (store_commits.indexed_by_branch(indexed), store_tips.tips_of(tips))
    return Opening(scope, catalogue, read)


def index_freshness(
    conn: psycopg.Connection,
    scope: Scope,
    repository: str | None,
    hit_repositories: list[str],
    read: tuple[dict[str, list[IndexedOn]], dict[str, dict[str, str]]] | None = None,
) -> list[Freshness]:
    """Freshness of the repositories an answer draws on, each on the branch it read: the
    one asked for, else those of the hits, else (no hit) every repository read. `read`:
    what the search's first round trip read for them (`Opening.read`; None: read here)."""
    names = [repository] if repository is not None else list(dict.fromkeys(hit_repositories))
    if not names:
        names = sorted(scope.branches)
    by_branch: dict[str, list[str]] = {}
    for name in names:
        by_branch.setdefault(scope.branch_of(name), []).append(name)
    found = {
        f.repository: f
        for branch, group in by_branch.items()
        for f in (
            freshness(conn, group, branch)
            if read is None
            else freshness_of(group, branch, read[0].get(branch, []), read[1])
        )
    }
    return [found[n] for n in names if n in found]


def keyword_floor(
    query: str,
    keyword: Sequence[tuple[int, float]],
    rows: Mapping[int, Row],
    options: SearchOptions,
    fusion: Fusion,
) -> list[tuple[int, float]]:
    """The row keyword ranking less the rows that hold too few of the question's content
    words (search.fusion.holds_enough; Fusion.keyword_row_min_words)."""
    words = content_words(query, stop_words(options.query_lang or ""))
    least = fusion.keyword_row_min_words
    return [(i, s) for i, s in keyword if i in rows and holds_enough(words, rows[i].content, least)]


def keyword_trusted(
    query: str,
    keyword: Sequence[tuple[int, float]],
    rows: Mapping[int, Row],
    options: SearchOptions,
    fusion: Fusion,
) -> tuple[SearchOptions, Fusion]:
    """The options and fusion with every keyword ranking weighed by the trust its top
    rows earn (search.fusion.keyword_trust)."""
    by_chapter: dict[tuple[str, str], list[str]] = {}
    for i, _ in keyword[:TRUST_ROWS]:
        if i in rows:
            by_chapter.setdefault(rows[i].chapter, []).append(rows[i].content)
    if not by_chapter:  # no keyword row in the question's language: nothing to weigh
        return options, fusion
    texts = ["\n".join(t) for t in by_chapter.values()]  # a chapter's rows together
    words = content_words(query, stop_words(options.query_lang or ""))
    trust = min(1.0, keyword_trust(words, texts) / fusion.keyword_trust_full)
    factor = trust**fusion.keyword_trust_power
    if factor == 1.0:
        return options, fusion
    return replace(options, bm25_weight=options.bm25_weight * factor), trusted(fusion, factor)
