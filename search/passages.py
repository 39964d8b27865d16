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
    found = store_vectors.nearest_paragraphs(
        conn,
        model,
        dimension,
        query_vector,
        [(p[0], search_rows.branch_for(branch, p[0]), p[1]) for p in pairs],
        per_chapter,
    )
    # the rows and their distances in one statement; nearest first, ties by row id
    best: dict[tuple[str, str], list[tuple[Chunk, float]]] = {}
    for *columns, distance in sorted(found, key=lambda r: (float(r[-1]), r[0])):
        row = search_rows.Row(*columns)
        best.setdefault((row.repository, row.parent_source_file or ""), []).append(
            (search_rows.chunk(row), round(1.0 - float(distance), 6))
        )
    return best
