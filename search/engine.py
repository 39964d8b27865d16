"""`search()`: keyword and vector rankings, fused, optionally reranked, with context.

    response = search(db.pool, "pétition des fabricants de chandelles", k=5,
                      embedder=embedder, reranker=None, settings=settings)
    for hit in response.hits:
        print(hit.citation, hit.scores.fused)

Modes: `bm25` (the store's keyword backend), `vector` (the query embedded as a
query, nearest rows by cosine through the per-model HNSW index), `hybrid`
(both, fused by weighted reciprocal rank fusion, plus the chapter rankings that
every row of a chapter inherits: `search.chapters`). What takes part in vector
search is what the corpus policy vectorized: with the economical policy only
summaries carry vectors, so a question matched by meaning lands on a chapter
summary, which `with_children` opens onto the chapter's text.

The stages are timed (`response.timings_ms`) so the CLI, the benchmark and
`glossator eval` can show where the time goes, the query embedding apart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from core.vocabulary import NODE_TYPES
from glossator.settings import Settings
from search import chapters, retrieval
from search import nodes as N
from search import rows as R
from search.errors import BadQuery
from search.freshness import freshness
from search.fusion import cap_per_group, rrf
from search.passages import best_paragraphs
from search.rerank import Reranker
from search.results import MODES, Freshness, Hit, RerankReport, Scores, SearchResponse
from store.phrases import phrase_rows, quoted_segments

log = logging.getLogger(__name__)

MAX_K = 100
# diversity on by default for agents (the MCP tools, the "agents" row of `glossator eval`):
# one row per chapter, so a page of 10 names 10 chapters; the best of 1, 2 and 3 on the
# tuning half (bench/RESULTS.md, issue 7). A chapter summary hit still brings its best
# paragraphs (climb_down), and `context` gives several passages of one chapter.
AGENT_MAX_PER_CHAPTER = 1
MAX_QUERY_CHARS = 2000
_embed_lock = threading.Lock()  # one query embedding at a time: the model is shared
# The last query vectors, by (model, query): an agent often repeats a query (a search,
# then a context pack on the same question), and embedding is most of a hybrid call's
# time on CPU. An extra only: the latency target is measured without it.
QUERY_CACHE_SIZE = 256
_query_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()


def _levels(level: int | Sequence[int] | None) -> tuple[int, ...] | None:
    if level is None:
        return None
    levels = (level,) if isinstance(level, int) else tuple(level)
    bad = [x for x in levels if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= 3]
    if bad or not levels:
        raise BadQuery(
            f"level must be 0 (paragraphs), 1 (chapter summaries), 2 (part summaries) "
            f"or 3 (work summaries), got {level!r}"
        )
    return levels


def _node_types(node_type: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if node_type is None:
        return None
    types = (node_type,) if isinstance(node_type, str) else tuple(node_type)
    bad = [t for t in types if t not in NODE_TYPES]
    if bad or not types:
        raise BadQuery(f"node_type must be one of {', '.join(NODE_TYPES)}, got {node_type!r}")
    return types


def check_query(query: str, k: int, mode: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise BadQuery("the query is empty: ask in words, e.g. « la pétition des chandelles »")
    R.check_text("query", query)
    if len(query) > MAX_QUERY_CHARS:
        raise BadQuery(f"the query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadQuery(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if mode not in MODES:
        raise BadQuery(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return query.strip()


def search(
    conn_or_pool: R.ConnOrPool,
    query: str,
    *,
    mode: str = "hybrid",
    k: int = 10,
    repository: str | None = None,
    branch: str = N.DEFAULT_BRANCH,
    work: str | None = None,
    level: int | Sequence[int] | None = None,
    node_type: str | Sequence[str] | None = None,
    rrf_k: int | None = None,
    bm25_weight: float | None = None,
    vector_weight: float | None = None,
    chapter_weight: float | None = None,
    rerank: bool = True,
    with_parent: bool = False,
    with_children: bool = False,
    with_neighbours: bool = False,
    max_per_file: int | None = None,
    max_per_chapter: int | None = None,
    climb_down: int = 0,
    candidates: int | None = None,
    embedder: Any = None,
    reranker: Reranker | None = None,
    settings: Settings | None = None,
) -> SearchResponse:
    """Search the indexed corpus; see the module docstring.

    `embedder` embeds the query in vector and hybrid modes (default: the one the
    settings name, `indexer.embedders.get_embedder`);
    `reranker` reranks when given and `rerank` is true; `settings` supplies the fusion
    defaults (rrf_k, bm25_weight, vector_weight, chapter_weight). `max_per_file` caps the hits per
    file, `max_per_chapter` per chapter (its source.md and summary.md together;
    and then one part or work summary per page at most: diversity); `climb_down` > 0 gives each chapter-summary hit its chapter's
    `climb_down` paragraphs nearest the query (`hit.passages`; not in bm25 mode);
    `candidates` is how deep each ranking goes before fusion.
    """
    started = time.perf_counter()
    query = check_query(query, k, mode)
    for name, value in (("repository", repository), ("branch", branch), ("work", work)):
        if isinstance(value, str):
            R.check_text(name, value)
    settings = settings or Settings.from_env()  # the environment, as the CLI reads it
    rrf_k = settings.rrf_k if rrf_k is None else rrf_k
    chapter_weight = settings.chapter_weight if chapter_weight is None else chapter_weight
    if chapter_weight < 0:
        raise BadQuery(f"chapter_weight must be 0 or more, got {chapter_weight}")
    weights = {
        "keyword": settings.bm25_weight if bm25_weight is None else bm25_weight,
        "vector": settings.vector_weight if vector_weight is None else vector_weight,
    }
    filters = retrieval.Filters(
        repository=repository,
        branch=branch,
        work=work,
        levels=_levels(level),
        node_types=_node_types(node_type),
    )
    depth = candidates or max(50, 3 * k)
    if not 1 <= depth <= 1000:
        raise BadQuery(f"candidates must be from 1 to 1000, got {depth}")
    if mode != "bm25" and embedder is None:
        from glossator.providers import get_embedder  # the model itself is cached per process

        embedder = get_embedder(settings)
    timings: dict[str, float] = {}

    query_vector = None
    if mode != "bm25":
        t = time.perf_counter()
        query_vector = embed_query(embedder, query)
        timings["embed"] = _ms(t)

    with R.connection(conn_or_pool) as conn:
        R.resolve_repository(conn, repository, branch)
        rankings: dict[str, list[tuple[int, float]]] = {}
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            rankings["keyword"] = retrieval.keyword(conn, query, filters, depth)
            timings["keyword"] = _ms(t)
        if query_vector is not None:
            t = time.perf_counter()
            rankings["vector"] = retrieval.vector(
                conn, query_vector, embedder.model, embedder.dimension, filters, depth
            )
            timings["vector"] = _ms(t)

        if work is not None and not any(rankings.values()):
            R.resolve_work(conn, work, repository, branch)  # nothing found: is it a typo?
        t = time.perf_counter()
        fused = rrf(
            {name: [i for i, _ in ranking] for name, ranking in rankings.items()},
            k=rrf_k,
            weights=weights,
        )
        rows = R.by_ids(conn, [i for i, _ in fused])
        quoted: set[int] = set()
        segments = quoted_segments(query) if mode == "hybrid" else []
        if segments:  # of the candidates, those that hold a quoted part of the question
            t_phrase = time.perf_counter()
            quoted = set(phrase_rows(conn, segments, list(rows)))
            timings["phrase"] = _ms(t_phrase)
        bonus: dict[int, float] = {}
        chapter_rankings: dict[str, list[chapters.Chapter]] = {}
        if mode == "hybrid" and chapter_weight > 0 and any(r["level"] <= 1 for r in rows.values()):
            t_chapters = time.perf_counter()
            found = chapters.evidence(
                conn,
                query,
                query_vector,
                model=embedder.model,
                dimension=embedder.dimension,
                repositories=sorted({r["repository"] for r in rows.values()}),
                branch=branch,
                work=work,
            )
            chapter_rankings = chapters.rankings(
                found, rankings.get("vector", []), rows, rankings.get("keyword", [])
            )
            fused, bonus = chapters.inherit(
                fused,
                rows,
                chapter_rankings,
                k=rrf_k,
                weight=chapter_weight,
            )
            timings["chapters"] = _ms(t_chapters)
        if quoted:  # the passages that say what the question quotes come first
            fused = [x for x in fused if x[0] in quoted] + [x for x in fused if x[0] not in quoted]
        order = cap_per_group(
            [i for i, _ in fused if i in rows],
            {i: (r["repository"], r["source_file"]) for i, r in rows.items()},
            max_per_file,
        )
        if max_per_chapter is not None:
            order = cap_per_group(
                order,
                {i: chapters.chapter_of(r) for i, r in rows.items()},
                max_per_chapter,
                "max_per_chapter",
            )
            # part and work summaries answer no chapter-level question: one per page at most
            order = cap_per_group(
                order,
                {i: ("broad",) if r["level"] >= 2 else ("row", i) for i, r in rows.items()},
                1,
            )
        fused_scores = dict(fused)
        if chapter_rankings and max_per_chapter == 1:
            # a page of chapters: below its head, the chapters whose summary matches weigh more
            # (not for context packs, ≤ 3 rows per chapter: it lost packs on the tuning half)
            order, extra = chapters.tail(
                order,
                fused_scores,
                rows,
                chapter_rankings,
                k=rrf_k,
                weight=chapter_weight,
                first=quoted,
            )
            for i, e in extra.items():
                fused_scores[i] += e
                bonus[i] = bonus.get(i, 0.0) + e
        scores = _scores(rankings, fused_scores)
        for i, b in bonus.items():
            if i in scores:
                scores[i].chapter = round(b, 6)
        for i in quoted & scores.keys():
            scores[i].phrase = True
        timings["fuse"] = _ms(t)

        report = RerankReport("disabled")
        if rerank and reranker is not None and order:
            order, report = _rerank(reranker, query, order, rows, scores, k)
            timings["rerank"] = report.seconds * 1000 if report.seconds else 0.0
        order = order[:k]

        t = time.perf_counter()
        hits = [
            Hit(
                rank=n,
                citation=R.citation(rows[i]),
                level=rows[i]["level"],
                node_type=rows[i]["node_type"],
                work=rows[i]["work"],
                text=rows[i]["content"],
                scores=scores[i],
                parent_source_file=rows[i]["parent_source_file"],
                token_count=rows[i]["content_token_count"],
            )
            for n, i in enumerate(order, start=1)
        ]
        _add_context(conn, hits, branch, with_parent, with_children, with_neighbours)
        if climb_down > 0 and query_vector is not None:
            _climb_down(conn, hits, query_vector, embedder, branch, climb_down)
        timings["context"] = _ms(t)
        index = index_freshness(
            conn, repository, branch, [h.citation.repository for h in hits], settings
        )

    timings["total"] = _ms(started)
    log.debug("search mode=%s k=%d hits=%d in %.1f ms", mode, k, len(hits), timings["total"])
    return SearchResponse(
        query=query,
        mode=mode,  # type: ignore[arg-type]
        k=k,
        branch=branch,
        filters={
            key: value
            for key, value in {
                "repository": repository,
                "work": work,
                "level": list(filters.levels) if filters.levels else None,
                "node_type": list(filters.node_types) if filters.node_types else None,
            }.items()
            if value is not None
        },
        hits=hits,
        rerank=report,
        embedding_model=embedder.model if mode != "bm25" else None,
        timings_ms=timings,
        index=index,
    )


def index_freshness(
    conn: Any, repository: str | None, branch: str, hit_repositories: list[str], settings: Settings
) -> list[Freshness]:
    """Freshness of the repositories an answer draws on: the one asked for, else those of
    the hits, else (no hit) every repository indexed on the branch."""
    names = [repository] if repository is not None else hit_repositories
    if not names:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT repository FROM indexed_commits WHERE branch = %s ORDER BY 1", (branch,)
            ).fetchall()
        ]
    return freshness(conn, names, branch, settings)


def embed_query(embedder: Any, query: str) -> Any:
    """The query's vector, from the small LRU cache when the same model saw it lately."""
    key = (str(getattr(embedder, "model", "")), query)
    with _embed_lock:
        if key in _query_cache:
            _query_cache.move_to_end(key)
            return _query_cache[key]
        vector = embedder.embed_query(query)
        _query_cache[key] = vector
        if len(_query_cache) > QUERY_CACHE_SIZE:
            _query_cache.popitem(last=False)
        return vector


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _scores(
    rankings: dict[str, list[tuple[int, float]]], fused: dict[int, float]
) -> dict[int, Scores]:
    out = {i: Scores(fused=round(s, 6)) for i, s in fused.items()}
    for name, ranking in rankings.items():
        for rank, (i, score) in enumerate(ranking, start=1):
            if name == "keyword":
                out[i].keyword, out[i].keyword_rank = round(score, 6), rank
            elif name == "vector":
                out[i].vector, out[i].vector_rank = round(score, 6), rank
    return out


def rerank_depth(k: int) -> int:
    """How many fused rows the reranker sees: enough to lift a row from below the page."""
    return min(max(2 * k, 20), 60)


def _rerank(
    reranker: Reranker,
    query: str,
    order: list[int],
    rows: dict[int, dict],
    scores: dict[int, Scores],
    k: int,
) -> tuple[list[int], RerankReport]:
    head = order[: rerank_depth(k)]
    outcome = reranker.rerank(query, [rows[i]["content"] for i in head])
    report = RerankReport(outcome.status, reranker.model, round(outcome.seconds, 4), outcome.detail)
    if outcome.status != "applied" or outcome.scores is None:
        return order, report
    for i, s in zip(head, outcome.scores, strict=True):
        scores[i].rerank = round(s, 6)
    # stable: equal rerank scores keep the fused order
    reranked = sorted(head, key=lambda i: -(scores[i].rerank or 0.0))
    return reranked + order[len(head) :], report


def _climb_down(
    conn: Any, hits: list[Hit], query_vector: Any, embedder: Any, branch: str, n: int
) -> None:
    """A chapter summary stands for its chapter: show the chapter's best paragraphs."""
    summaries = [(h.citation.repository, h.citation.source_file) for h in hits if h.level == 1]
    best = best_paragraphs(
        conn, summaries, query_vector, embedder.model, embedder.dimension, branch, n
    )
    for h in hits:
        if h.level == 1:
            h.passages = [
                c for c, _ in best.get((h.citation.repository, h.citation.source_file), [])
            ]


def _add_context(
    conn: Any,
    hits: list[Hit],
    branch: str,
    with_parent: bool,
    with_children: bool,
    with_neighbours: bool,
) -> None:
    """Parents, children and neighbours for all hits in three queries, not one per hit."""
    if not hits:
        return
    if with_parent:
        wanted = [
            (h.citation.repository, h.parent_source_file) for h in hits if h.parent_source_file
        ]
        parents = N.file_rows_many(conn, wanted, branch)
        for h in hits:
            if h.parent_source_file:
                h.parent = parents.get((h.citation.repository, h.parent_source_file))
    if with_children:
        pairs = [(h.citation.repository, h.citation.source_file) for h in hits if h.level > 0]
        kids = R.group_files(N.children_rows(conn, pairs, branch))
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
    if with_neighbours:
        keys = [
            (h.citation.repository, h.citation.source_file, h.citation.chunk_index) for h in hits
        ]
        near = N.neighbours(conn, keys, branch)
        for h in hits:
            r, f, i = h.citation.repository, h.citation.source_file, h.citation.chunk_index
            h.previous = near.get((r, f, i - 1))
            h.next = near.get((r, f, i + 1))
