"""The stages of a search, each a function of what the previous ones produced.

    rankings = retrieve(conn, query, vector, options, scope)   # keyword and vector lists
    fused = fuse(rankings, options, fusion)                      # weighted RRF
    rows, climbed, fused.quoted = rows_and_passages(      # and who holds a phrase
        conn, fused.ids, vector, options, phrases(query, options))   # quoted, or the question
    fused = chapter_evidence(conn, query, vector, rows, rankings, fused, options, fusion)
    order = caps(fused, rows, options)                           # per file, per chapter
    order = page_tail(order, rows, fused, options, fusion)       # one-per-chapter pages
    order, report = rerank(reranker, query, order, rows, fused, options)
    hits = hits(order[:k], rows, scores)
    attach_context(conn, hits, options, climbed)                 # parents, children…

`search.engine.search` runs them in this order; each can be called (and is tested)
alone. `Fused` carries the fused scores and what each stage added to them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from search import chapters, nodes, passages, retrieval
from search import rows as search_rows
from search.fusion import cap_per_group, rrf
from search.options import QueryVector, SearchOptions
from search.passages import Climbed
from search.rerank import Reranker
from search.results import Hit, RerankReport, Scores
from search.rows import Row
from search.scope import Scope
from search.tuning import Fusion
from store import roundtrip
from store.catalogue import CorpusLanguages
from store.phrases import phrase_ids, phrase_statement, question_segments

Ranking = list[tuple[int, float]]  # (row id, score), best first


@dataclass
class Rankings:
    """The row rankings fusion combines, by name ("keyword", "vector")."""

    lists: dict[str, Ranking] = field(default_factory=dict)
    # repositories not in the query's language, and the query's content words their
    # keyword evidence is searched for (search.language)
    foreign: set[str] = field(default_factory=set)
    foreign_query: str = ""
    # the engine that ranks chapters, as the keyword retrieval read it with the catalogue
    # (store.catalogue); None when no keyword ranking was made (chapter evidence asks)
    chapter_engine: str | None = None
    # chapter evidence fetched with the rankings (`retrieve`'s chapter_depth): each
    # repository's, and the branch it was read on; chapter evidence asks for the others
    chapters: dict[str, chapters.ChapterEvidence] = field(default_factory=dict)
    chapter_branches: dict[str, str] = field(default_factory=dict)

    @property
    def keyword(self) -> Ranking:
        return self.lists.get("keyword", [])

    @property
    def keyword_foreign(self) -> Ranking:
        """Keyword hits of repositories not in the query's language (search.language)."""
        return self.lists.get("keyword_foreign", [])

    @property
    def vector(self) -> Ranking:
        return self.lists.get("vector", [])

    def empty(self) -> bool:
        return not any(self.lists.values())


@dataclass
class Fused:
    """Fused scores, best first, and the parts later stages add."""

    ranked: list[tuple[int, float]]
    chapter: dict[int, float] = field(default_factory=dict)  # inherited from the chapter
    quoted: set[int] = field(default_factory=set)  # rows holding a phrase asked for
    chapter_rankings: dict[str, list[chapters.Chapter]] = field(default_factory=dict)

    @property
    def ids(self) -> list[int]:
        return [i for i, _ in self.ranked]

    def scores(self) -> dict[int, float]:
        return dict(self.ranked)


def filters(options: SearchOptions, scope: Scope) -> retrieval.Filters:
    return retrieval.Filters(
        repository=options.repository,
        work=options.work,
        levels=options.levels,
        node_types=options.node_types,
        scope=scope.pairs,
    )


def retrieve(
    conn: psycopg.Connection,
    query: str,
    vector: QueryVector | None,
    options: SearchOptions,
    scope: Scope,
    timings: dict[str, float] | None = None,
    chapter_depth: int | None = None,
    catalogue: CorpusLanguages | None = None,
) -> Rankings:
    """The keyword ranking (hybrid, bm25) and the vector one (when a vector is given) of
    the rows `scope` reads, all in one round trip (its milliseconds: `timings`'
    "rankings"). In hybrid mode, with the query's language known (`options.query_lang`),
    the keyword hits of repositories in another language are a ranking of their own,
    "keyword_foreign" (search.language). With `chapter_depth` (hybrid, chapter evidence
    wanted: `wants_chapters`), each repository's chapter BM25 and its summaries' cosines
    with the vector query come in the same round trip (`Rankings.chapters`).
    `catalogue`: the scope's, as the search's first round trip read it (None: read here)."""
    where = filters(options, scope)
    out = Rankings()
    timings = {} if timings is None else timings
    if not wants_chapters(options):
        chapter_depth = None
    t = time.perf_counter()
    keyword, near = None, None
    if options.mode in ("hybrid", "bm25"):
        lang = options.query_lang if options.mode == "hybrid" else None
        keyword = retrieval.keyword_plan(
            conn, query, where, options.depth, lang, chapter_depth, catalogue
        )
    if vector is not None and options.mode != "bm25":
        # the summaries of the repositories whose chapter BM25 is sent (the catalogue's)
        branches = keyword.branches if keyword is not None and keyword.chapters else {}
        near = retrieval.vector_plan(
            vector.values,
            vector.model,
            vector.dimension,
            where,
            options.depth,
            branches,
            chapter_depth or 1,
        )
    sent = (keyword.statements if keyword else []) + (near.statements if near else [])
    found = roundtrip.run(conn, sent)
    if keyword is not None:
        got = keyword.rankings(found[: len(keyword.statements)])
        out.lists["keyword"] = got.native
        if got.away:
            out.lists["keyword_foreign"] = got.away
        out.foreign, out.foreign_query = got.foreign, got.content
        out.chapter_engine = got.chapter_engine
        if got.chapters is not None and vector is not None:
            out.chapter_branches = got.branches
            out.chapters = {r: chapters.ChapterEvidence(kw) for r, kw in got.chapters.items()}
    if near is not None:
        out.lists["vector"], summaries = near.rankings(found[len(found) - len(near.statements) :])
        for repository, found_summaries in summaries.items():
            out.chapters[repository].summary = found_summaries
    timings["rankings"] = ms(t)
    return out


def wants_chapters(options: SearchOptions) -> bool:
    """Chapter evidence can count: hybrid, its weight above 0, rows of levels 0-1 asked."""
    levels = options.levels
    return (
        options.mode == "hybrid"
        and options.chapter_weight > 0
        and (levels is None or any(level <= 1 for level in levels))
    )


def ms(since: float) -> float:
    """Milliseconds since `since` (time.perf_counter), as the responses show them."""
    return round((time.perf_counter() - since) * 1000, 3)


def fuse(
    rankings: Rankings, options: SearchOptions, rrf_k: int, foreign_keyword_weight: float = 1.0
) -> Fused:
    """Weighted reciprocal rank fusion of the row rankings; the keyword hits of another
    language's repositories weigh `foreign_keyword_weight` times the keyword weight."""
    weights = {
        "keyword": options.bm25_weight,
        "keyword_foreign": options.bm25_weight * foreign_keyword_weight,
        "vector": options.vector_weight,
    }
    lists = {name: [i for i, _ in ranking] for name, ranking in rankings.lists.items()}
    return Fused(rrf(lists, k=rrf_k, weights=weights))


def phrases(query: str, options: SearchOptions) -> list[str]:
    """Hybrid: the phrases whose rows go first, quoted or the whole long question
    (store.phrases.question_segments); none in the other modes."""
    return question_segments(query) if options.mode == "hybrid" else []


def rows_and_passages(
    conn: psycopg.Connection,
    ids: list[int],
    vector: QueryVector | None,
    options: SearchOptions,
    phrases: Sequence[str] = (),
) -> tuple[dict[int, Row], Climbed | None, set[int]]:
    """The rows of the fused candidates `ids`; with `climb_down` and a vector, the best
    paragraphs of the chapters whose summaries are among them (search.passages; None:
    not asked); and which of them hold one of `phrases` (store.phrases), in one round
    trip: the hits are some of these rows, known only later."""
    climbing = None
    if vector is not None and (options.levels is None or 1 in options.levels):
        climbing = passages.statement(
            ids, vector.values, vector.model, vector.dimension, options.climb_down
        )
    phrased = phrase_statement(phrases, ids)
    found, climbed, held = roundtrip.run(
        conn, [search_rows.by_ids_statement(ids), climbing, phrased]
    )
    return (
        search_rows.rows_of(found),
        passages.passages_of(climbed) if climbing is not None else None,
        phrase_ids(held),
    )


def chapter_evidence(
    conn: psycopg.Connection,
    query: str,
    vector: QueryVector | None,
    rows: dict[int, Row],
    rankings: Rankings,
    fused: Fused,
    options: SearchOptions,
    fusion: Fusion,
    rrf_k: int,
    timings: dict[str, float] | None = None,
) -> Fused:
    """Hybrid: every row of levels 0-1 inherits its chapter's places (search.chapters)."""
    wanted = options.mode == "hybrid" and options.chapter_weight > 0
    if not wanted or not any(r.level <= 1 for r in rows.values()):
        return fused
    t = time.perf_counter()
    branches = {r.repository: r.branch for r in rows.values()}
    found = {
        r: rankings.chapters[r]
        for r, b in branches.items()
        if r in rankings.chapters and rankings.chapter_branches.get(r) == b
    }
    missing = {r: b for r, b in branches.items() if r not in found}
    found |= chapters.evidence(
        conn,
        query,
        vector.values if vector is not None else None,
        model=vector.model if vector is not None else None,
        dimension=vector.dimension if vector is not None else None,
        branches=missing,
        work=options.work,
        depth=fusion.chapter_depth,
        texts={r: rankings.foreign_query for r in rankings.foreign},
        engine=rankings.chapter_engine,
    )
    fused.chapter_rankings = chapters.rankings(
        found,
        rankings.vector,
        rows,
        rankings.keyword,
        fusion,
        foreign=rankings.foreign,
        foreign_keyword_ranking=rankings.keyword_foreign,
    )
    fused.ranked, fused.chapter = chapters.inherit(
        fused.ranked,
        rows,
        fused.chapter_rankings,
        k=rrf_k,
        weight=options.chapter_weight,
        weights=chapters.foreign_weights(fusion.chapter_weights, fusion.foreign_keyword_weight),
    )
    if timings is not None:
        timings["chapters"] = ms(t)
    return fused


def caps(fused: Fused, rows: dict[int, Row], options: SearchOptions) -> list[int]:
    """The rows in fused order, quoted ones first, within the per-file and per-chapter caps."""
    ranked = [i for i in fused.ids if i in fused.quoted] + [
        i for i in fused.ids if i not in fused.quoted
    ]
    order = cap_per_group(
        [i for i in ranked if i in rows],
        {i: (r.repository, r.source_file) for i, r in rows.items()},
        options.max_per_file,
    )
    if options.max_per_chapter is not None:
        order = cap_per_group(
            order,
            {i: r.chapter for i, r in rows.items()},
            options.max_per_chapter,
            "max_per_chapter",
        )
        # part and work summaries answer no chapter-level question: one per page at most
        order = cap_per_group(
            order, {i: ("broad",) if r.level >= 2 else ("row", i) for i, r in rows.items()}, 1
        )
    return order


def page_tail(
    order: list[int],
    rows: dict[int, Row],
    fused: Fused,
    options: SearchOptions,
    fusion: Fusion,
    rrf_k: int,
) -> tuple[list[int], dict[int, float]]:
    """A page of chapters (one row each): below its head, the chapters whose summary
    matches weigh more (not for context packs, ≤ 3 rows per chapter: it lost packs on
    the tuning half). Returns the order and each row's fused score."""
    scores = fused.scores()
    if not fused.chapter_rankings or options.max_per_chapter != 1:
        return order, scores
    order, extra = chapters.tail(
        order,
        scores,
        rows,
        fused.chapter_rankings,
        k=rrf_k,
        weight=options.chapter_weight,
        fusion=fusion,
        first=fused.quoted,
        tail_weights=chapters.foreign_weights(fusion.tail_weights, fusion.foreign_keyword_weight),
    )
    for i, e in extra.items():
        scores[i] += e
        fused.chapter[i] = fused.chapter.get(i, 0.0) + e
    return order, scores


def scores(rankings: Rankings, fused: Fused, fused_scores: dict[int, float]) -> dict[int, Scores]:
    """Every score of every fused row, as the response shows them."""
    out = {i: Scores(fused=round(s, 6)) for i, s in fused_scores.items()}
    for name, ranking in rankings.lists.items():
        for rank, (i, score) in enumerate(ranking, start=1):
            if name in ("keyword", "keyword_foreign"):
                out[i].keyword, out[i].keyword_rank = round(score, 6), rank
            elif name == "vector":
                out[i].vector, out[i].vector_rank = round(score, 6), rank
    for i, b in fused.chapter.items():
        if i in out:
            out[i].chapter = round(b, 6)
    for i in fused.quoted & out.keys():
        out[i].phrase = True
    return out


def rerank_depth(k: int) -> int:
    """How many fused rows the reranker sees: enough to lift a row from below the page."""
    return min(max(2 * k, 20), 60)


def rerank(
    reranker: Reranker | None,
    query: str,
    order: list[int],
    rows: dict[int, Row],
    scores: dict[int, Scores],
    options: SearchOptions,
) -> tuple[list[int], RerankReport]:
    """The head of the page reranked when a reranker is given and asked for; the fused
    order stands when it times out or fails (the report says why)."""
    if not options.rerank or reranker is None or not order:
        return order, RerankReport("disabled")
    head = order[: rerank_depth(options.k)]
    outcome = reranker.rerank(query, [rows[i].content for i in head])
    report = RerankReport(outcome.status, reranker.model, round(outcome.seconds, 4), outcome.detail)
    if outcome.status != "applied" or outcome.scores is None:
        return order, report
    for i, s in zip(head, outcome.scores, strict=True):
        scores[i].rerank = round(s, 6)
    # stable: equal rerank scores keep the fused order
    reranked = sorted(head, key=lambda i: -(scores[i].rerank or 0.0))
    return reranked + order[len(head) :], report


def hits(order: list[int], rows: dict[int, Row], scores: dict[int, Scores]) -> list[Hit]:
    return [
        Hit(
            rank=n,
            citation=search_rows.citation(rows[i]),
            level=rows[i].level,
            node_type=rows[i].node_type,
            work=rows[i].work,
            text=rows[i].content,
            scores=scores[i],
            parent_source_file=rows[i].parent_source_file,
            token_count=rows[i].content_token_count,
        )
        for n, i in enumerate(order, start=1)
    ]


def attach_context(
    conn: psycopg.Connection,
    hits: list[Hit],
    options: SearchOptions,
    climbed: Climbed | None = None,
) -> None:
    """Parents, children and neighbours for all hits in three queries, not one per hit;
    and a chapter summary's best paragraphs (`climb_down`: `climbed`, read with the rows,
    `rows_and_passages`)."""
    if not hits:
        return
    # each hit's repository on the branch its rows come from (the scope's)
    branch = {h.citation.repository: h.citation.branch for h in hits}
    if options.with_parent:
        wanted = [
            (h.citation.repository, h.parent_source_file) for h in hits if h.parent_source_file
        ]
        parents = nodes.file_rows_many(conn, wanted, branch)
        for h in hits:
            if h.parent_source_file:
                h.parent = parents.get((h.citation.repository, h.parent_source_file))
    if options.with_children:
        pairs = [(h.citation.repository, h.citation.source_file) for h in hits if h.level > 0]
        kids = search_rows.group_files(nodes.children_rows(conn, pairs, branch))
        for h in hits:
            h.children = (
                [
                    c
                    for c in kids
                    if c.repository == h.citation.repository
                    and c.parent_source_file == h.citation.source_file
                ]
                if h.level > 0
                else []
            )
    if options.with_neighbours:
        keys = [
            (h.citation.repository, h.citation.source_file, h.citation.chunk_index) for h in hits
        ]
        near = nodes.neighbours(conn, keys, branch)
        for h in hits:
            r, f, i = h.citation.repository, h.citation.source_file, h.citation.chunk_index
            h.previous = near.get((r, f, i - 1))
            h.next = near.get((r, f, i + 1))
    if climbed is not None:
        # a chapter summary stands for its chapter: show the chapter's best paragraphs
        for h in hits:
            if h.level == 1:
                key = (h.citation.repository, h.citation.source_file)
                h.passages = [c for c, _ in climbed.get(key, [])]
