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
(the top `DEPTH` chapters of each ranking count). Part and work summaries
inherit nothing. Tuned on the tuning half of bench/queries.jsonl with the chapter
cap on (bench/RESULTS.md, issue 7): chapter BM25 weighs 1.5, the two vector
rankings 1, each times `Settings.chapter_weight` (0 turns the evidence off).

On a page of chapters (one row each), the rows below the first `TAIL_FROM`
also count a fourth ranking, the chapter summaries' order in the row keyword
ranking (`tail`; docs/search.md, "The page's tail").
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from store.chapters import ChapterEvidence, chapter_evidence

DEPTH = 20
TOP_PARAGRAPHS = 3
WEIGHTS = {"chapter_keyword": 1.5, "chapter_vector": 1.0, "chapter_summary": 1.0}
# The page's tail: after the first TAIL_FROM rows, the chapter rankings named here
# count too (weight × TAIL_WEIGHTS[name] / (k + rank)). See `tail`.
TAIL_FROM = 5
TAIL_WEIGHTS = {"summary_keyword": 1.5}

Chapter = tuple[str, str]  # (repository, chapter folder)


def evidence(
    conn: Any,
    query: str,
    query_vector: Sequence[float] | None,
    *,
    model: str | None,
    dimension: int | None,
    repositories: Sequence[str],
    branch: str,
    work: str | None,
) -> dict[str, ChapterEvidence]:
    """The store's chapter evidence for each repository searched (one statement each)."""
    return {
        repository: chapter_evidence(
            conn,
            query,
            query_vector,
            model=model,
            dimension=dimension,
            repository=repository,
            branch=branch,
            work=work,
            depth=DEPTH,
        )
        for repository in repositories
    }


def rankings(
    found: Mapping[str, ChapterEvidence],
    vector_ranking: Sequence[tuple[int, float]],
    rows: Mapping[int, Mapping[str, Any]],
    keyword_ranking: Sequence[tuple[int, float]] = (),
) -> dict[str, list[Chapter]]:
    """The chapter rankings, best first, at most `DEPTH` chapters each: the three of
    `WEIGHTS`, and `summary_keyword` (the chapter summaries in the order the row
    keyword ranking already fetched gives them) for the tail (`tail`).

    Several repositories' lists are merged by score (one language: BM25 scores
    and cosines are comparable enough; one repository, the usual case, is exact).
    """
    keyword = [((repo, ch), s) for repo, ev in found.items() for ch, s in ev.keyword]
    summary = [((repo, ch), s) for repo, ev in found.items() for ch, s in ev.summary]
    summary_keyword = [
        (chapter_of(row), s)
        for i, s in keyword_ranking
        if (row := rows.get(i)) is not None and row["level"] == 1
    ]
    out = {
        "chapter_keyword": _best(keyword),
        "chapter_summary": _best(summary),
        "chapter_vector": [],
        "summary_keyword": _best(summary_keyword),
    }
    if vector_ranking:
        floor = vector_ranking[-1][1]
        cosines: dict[Chapter, list[float]] = {}
        for i, cosine in vector_ranking:  # nearest first
            row = rows.get(i)
            if row is not None and row["level"] == 0:
                cosines.setdefault(chapter_of(row), []).append(cosine)
        scored = [
            (ch, statistics.fmean((c + [floor] * TOP_PARAGRAPHS)[:TOP_PARAGRAPHS]))
            for ch, c in cosines.items()
        ]
        out["chapter_vector"] = _best(scored)
    return out


def inherit(
    fused: Sequence[tuple[int, float]],
    rows: Mapping[int, Mapping[str, Any]],
    chapter_rankings: Mapping[str, Sequence[Chapter]],
    *,
    k: int,
    weight: float,
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Add each row's chapter contributions to its fused score; re-sorted, best first.

    Returns the new (id, score) list and each row's chapter contribution. Rows
    not in `rows` keep their score; the sort is stable, so ties keep fused order.
    """
    places = {
        name: {ch: rank for rank, ch in enumerate(ranking, start=1)}
        for name, ranking in chapter_rankings.items()
        if name in WEIGHTS
    }
    bonus: dict[int, float] = {}
    for i, _ in fused:
        row = rows.get(i)
        if row is None or row["level"] > 1:
            continue
        ch = chapter_of(row)
        b = sum(
            weight * WEIGHTS[name] / (k + place[ch])
            for name, place in places.items()
            if ch in place
        )
        if b:
            bonus[i] = b
    rescored = [(i, s + bonus.get(i, 0.0)) for i, s in fused]
    rescored.sort(key=lambda x: -x[1])
    return rescored, bonus


def chapter_of(row: Mapping[str, Any]) -> Chapter:
    """The chapter a row belongs to: its folder, shared by a chapter's source.md and
    summary.md (a part's or the work's summary is the only row of its folder)."""
    return row["repository"], row["source_file"].rsplit("/", 1)[0]


def _best(scored: list[tuple[Chapter, float]]) -> list[Chapter]:
    scored.sort(key=lambda x: (-x[1], x[0]))
    return [ch for ch, _ in scored[:DEPTH]]


def tail(
    order: Sequence[int],
    fused: Mapping[int, float],
    rows: Mapping[int, Mapping[str, Any]],
    chapter_rankings: Mapping[str, Sequence[Chapter]],
    *,
    k: int,
    weight: float,
    first: Collection[int] = (),
) -> tuple[list[int], dict[int, float]]:
    """Re-rank the rows after the first `TAIL_FROM` with the `TAIL_WEIGHTS` rankings.

    The head of a page is won by rows that match the question, each on its own.
    A chapter whose summary holds the question's words (a summary restates
    the chapter's argument, and the keyword ranking already fetched ranks it
    among the rows) may still fall below the page when none of its paragraphs
    does. Below the head, each row of levels 0-1 adds `weight` ×
    TAIL_WEIGHTS[name] / (k + its chapter's rank in that ranking), so the head,
    and top-1, never move. Rows in `first` (those holding a quotation) stay
    ahead of the others. Returns the new order and each row's extra score.
    """
    head, rest = list(order[:TAIL_FROM]), list(order[TAIL_FROM:])
    if not rest or weight <= 0:
        return head + rest, {}
    places = {
        name: {ch: rank for rank, ch in enumerate(chapter_rankings.get(name, ()), start=1)}
        for name in TAIL_WEIGHTS
    }
    extra: dict[int, float] = {}
    for i in rest:
        row = rows.get(i)
        if row is None or row["level"] > 1:
            continue
        ch = chapter_of(row)
        e = sum(
            weight * w / (k + places[name][ch])
            for name, w in TAIL_WEIGHTS.items()
            if ch in places[name]
        )
        if e:
            extra[i] = e
    # stable: equal scores keep their order
    rest.sort(key=lambda i: (i not in first, -(fused.get(i, 0.0) + extra.get(i, 0.0))))
    return head + rest, extra
