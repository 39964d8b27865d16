"""Climbing down from a chapter summary to the chapter's best paragraphs.

A question that restates a chapter's argument often matches the chapter's
summary better than any one paragraph (the summary gathers the argument; each
paragraph holds a piece of it). The summary then stands for its chapter, but an
agent quotes the author's words, not the digest: these are the paragraphs of
that chapter nearest the question, by cosine with the query vector.

Distances are computed for the chapter's rows only (the `hcn_parent` index
finds them; a chapter has tens of paragraphs), not through the HNSW index: an
exact ranking of a few rows is cheaper than an approximate scan filtered to them.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from search import rows as search_rows
from search.results import Chunk
from store import vectors as store_vectors


def best_paragraphs(
    conn: psycopg.Connection,
    summaries: Sequence[tuple[str, str]],
    query_vector: Sequence[float],
    model: str,
    dimension: int,
    branch: search_rows.Branches,
    per_chapter: int = 2,
) -> dict[tuple[str, str], list[tuple[Chunk, float]]]:
    """(repository, summary file) → its chapter's `per_chapter` best paragraphs, as
    (chunk, cosine similarity), most similar first."""
    pairs = list(dict.fromkeys(summaries))
    if not pairs or per_chapter <= 0:
        return {}
    found = store_vectors.chapter_distances(
        conn,
        model,
        dimension,
        query_vector,
        [(p[0], search_rows.branch_for(branch, p[0]), p[1]) for p in pairs],
    )
    best: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for i, repository, parent, distance in sorted(found, key=lambda r: (r[3], r[0])):
        kept = best.setdefault((repository, parent), [])
        if len(kept) < per_chapter:
            kept.append((i, 1.0 - distance))
    rows = search_rows.by_ids(conn, [i for kept in best.values() for i, _ in kept])
    return {
        key: [(search_rows.chunk(rows[i]), round(cos, 6)) for i, cos in kept if i in rows]
        for key, kept in best.items()
    }
