"""Chapter evidence in hybrid fusion: the book's structure as three more rankings.

Row fusion (`search.fusion.rrf`) ranks paragraphs and summaries one by one. A
question that restates a chapter's argument in other words often matches no
single paragraph well, while the chapter as a whole matches it clearly. So
hybrid search ranks chapters three ways and lets every row of a chapter
(its paragraphs and its summary, levels 0-1) inherit its chapter's places:

- `chapter_keyword`: BM25 with the whole chapter as the document
  (`store.chapters`);
- `chapter_vector`: the mean cosine of the chapter's three paragraphs nearest
  the question, read off the vector ranking already fetched (a chapter with
  fewer than three there is padded with that ranking's last cosine);
- `chapter_summary`: the cosine of the chapter's summary, for every summary.

A row's fused score becomes Σ w / (k + rank) over the row rankings (BM25 and
vector) plus the same over the chapter rankings, at its chapter's rank in each
(the top `chapter_depth` chapters of each ranking count). Part and work summaries
inherit nothing. The depth and weights are `search.tuning.Fusion`'s (with where they
come from), each weight times `SearchOptions.chapter_weight` (0 turns the evidence off).

On a page of chapters (one row each), the rows below the first `tail_from`
also count a fourth ranking, the chapter summaries' order in the row keyword
ranking (`tail`; docs/search.md, "The page's tail").
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence

import psycopg

from search.rows import Row
from search.tuning import Fusion
from store.chapters import ChapterEvidence, ChapterScope, chapter_evidence

Chapter = tuple[str, str]  # (repository, chapter folder)


def evidence(
    conn: psycopg.Connection,
    query: str,
    query_vector: Sequence[float] | None,
    *,
    model: str | None,
    dimension: int | None,
    branches: Mapping[str, str],
    work: str | None,
    depth: int,
    texts: Mapping[str, str] | None = None,
    engine: str | None = None,
) -> dict[str, ChapterEvidence]:
    """The store's chapter evidence for each repository searched, on its branch
    (`branches`: repository → branch; one round trip each: a search has them with its
    rankings, search.stages.retrieve, and asks here only for a repository it has not);
    `texts` gives a repository
    another text for its BM25 than `query` (the content words of a question in another
    language: search.language). `engine`: the chapters' engine as the keyword retrieval
    read it with the catalogue ("pg_search" or "postgres-fts"; None: the store asks,
    one statement more)."""
    texts = texts or {}
    return {
        repository: chapter_evidence(
            conn,
            texts.get(repository, query),
            ChapterScope(repository, branch, work, depth),
            query_vector,
            model=model,
            dimension=dimension,
            engine=engine,
        )
        for repository, branch in sorted(branches.items())
    }


def rankings(
    found: Mapping[str, ChapterEvidence],
    vector_ranking: Sequence[tuple[int, float]],
    rows: Mapping[int, Row],
    keyword_ranking: Sequence[tuple[int, float]],
    fusion: Fusion,
    foreign: Collection[str] = (),
    foreign_keyword_ranking: Sequence[tuple[int, float]] = (),
) -> dict[str, list[Chapter]]:
    """The chapter rankings, best first, at most `fusion.chapter_depth` chapters each:
    the three of `fusion.chapter_weights`, and `summary_keyword` (the chapter summaries in the order the row
    keyword ranking already fetched gives them) for the tail (`tail`).

    Several repositories' lists are merged by score (one language: BM25 scores
    and cosines are comparable enough; one repository, the usual case, is exact).
    The keyword evidence of the `foreign` repositories (not in the query's language,
    search.language) makes `chapter_keyword_foreign` and `summary_keyword_foreign`,
    weighed down by the caller.
    """
    keyword = [
        ((repo, ch), s) for repo, ev in found.items() if repo not in foreign for ch, s in ev.keyword
    ]
    away = [
        ((repo, ch), s) for repo, ev in found.items() if repo in foreign for ch, s in ev.keyword
    ]
    summary = [((repo, ch), s) for repo, ev in found.items() for ch, s in ev.summary]
    depth, top = fusion.chapter_depth, fusion.chapter_top_paragraphs
    out = {
        "chapter_keyword": _best(keyword, depth),
        "chapter_summary": _best(summary, depth),
        "chapter_vector": [],
        "summary_keyword": _best(_summaries(keyword_ranking, rows), depth),
    }
    if away:
        out["chapter_keyword_foreign"] = _best(away, depth)
    if foreign_keyword_ranking:
        out["summary_keyword_foreign"] = _best(_summaries(foreign_keyword_ranking, rows), depth)
    if vector_ranking:
        floor = vector_ranking[-1][1]
        cosines: dict[Chapter, list[float]] = {}
        for i, cosine in vector_ranking:  # nearest first
            row = rows.get(i)
            if row is not None and row.level == 0:
                cosines.setdefault(row.chapter, []).append(cosine)
        scored = [(ch, statistics.fmean((c + [floor] * top)[:top])) for ch, c in cosines.items()]
        out["chapter_vector"] = _best(scored, depth)
    return out


def _summaries(
    keyword_ranking: Sequence[tuple[int, float]], rows: Mapping[int, Row]
) -> list[tuple[Chapter, float]]:
    """The chapter summaries of a row keyword ranking, as (chapter, score)."""
    return [
        (row.chapter, s)
        for i, s in keyword_ranking
        if (row := rows.get(i)) is not None and row.level == 1
    ]


def foreign_weights(weights: Mapping[str, float], factor: float) -> dict[str, float]:
    """`weights` and, for each keyword ranking in it, its `_foreign` twin at `factor` times
    its weight (the evidence of repositories not in the query's language)."""
    out = dict(weights)
    for name, w in weights.items():
        if "keyword" in name:
            out[f"{name}_foreign"] = w * factor
    return out


def inherit(
    fused: Sequence[tuple[int, float]],
    rows: Mapping[int, Row],
    chapter_rankings: Mapping[str, Sequence[Chapter]],
    *,
    k: int,
    weight: float,
    weights: Mapping[str, float],
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Add each row's chapter contributions to its fused score; re-sorted, best first.

    Returns the new (id, score) list and each row's chapter contribution. Rows
    not in `rows` keep their score; the sort is stable, so ties keep fused order.
    """
    places = {
        name: {ch: rank for rank, ch in enumerate(ranking, start=1)}
        for name, ranking in chapter_rankings.items()
        if name in weights
    }
    bonus: dict[int, float] = {}
    for i, _ in fused:
        row = rows.get(i)
        if row is None or row.level > 1:
            continue
        ch = row.chapter
        b = sum(
            weight * weights[name] / (k + place[ch])
            for name, place in places.items()
            if ch in place
        )
        if b:
            bonus[i] = b
    rescored = [(i, s + bonus.get(i, 0.0)) for i, s in fused]
    rescored.sort(key=lambda x: -x[1])
    return rescored, bonus


def _best(scored: list[tuple[Chapter, float]], depth: int) -> list[Chapter]:
    scored.sort(key=lambda x: (-x[1], x[0]))
    return [ch for ch, _ in scored[:depth]]


def tail(
    order: Sequence[int],
    fused: Mapping[int, float],
    rows: Mapping[int, Row],
    chapter_rankings: Mapping[str, Sequence[Chapter]],
    *,
    k: int,
    weight: float,
    fusion: Fusion,
    first: Collection[int] = (),
    tail_weights: Mapping[str, float] | None = None,
) -> tuple[list[int], dict[int, float]]:
    """Re-rank the rows after the first `fusion.tail_from` with the `fusion.tail_weights`
    rankings.

    The head of a page is won by rows that match the question, each on its own.
    A chapter whose summary holds the question's words (a summary restates
    the chapter's argument, and the keyword ranking already fetched ranks it
    among the rows) may still fall below the page when none of its paragraphs
    does. Below the head, each row of levels 0-1 adds `weight` ×
    tail_weights[name] / (k + its chapter's rank in that ranking), so the head,
    and top-1, never move. Rows in `first` (those holding a quotation) stay
    ahead of the others. Returns the new order and each row's extra score.
    """
    head, rest = list(order[: fusion.tail_from]), list(order[fusion.tail_from :])
    if not rest or weight <= 0:
        return head + rest, {}
    weights = fusion.tail_weights if tail_weights is None else tail_weights
    places = {
        name: {ch: rank for rank, ch in enumerate(chapter_rankings.get(name, ()), start=1)}
        for name in weights
    }
    extra: dict[int, float] = {}
    for i in rest:
        row = rows.get(i)
        if row is None or row.level > 1:
            continue
        ch = row.chapter
        e = sum(
            weight * w / (k + places[name][ch]) for name, w in weights.items() if ch in places[name]
        )
        if e:
            extra[i] = e
    # stable: equal scores keep their order
    rest.sort(key=lambda i: (i not in first, -(fused.get(i, 0.0) + extra.get(i, 0.0))))
    return head + rest, extra
