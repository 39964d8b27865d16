"""Climbing down from a chapter summary to the chapter's best paragraphs.

A question that restates a chapter's argument often matches the chapter's
summary better than any one paragraph (the summary gathers the argument; each
paragraph holds a piece of it). The summary then stands for its chapter, but an
agent quotes the author's words, not the digest: these are the paragraphs of
that chapter nearest the question, by cosine with the query vector.

Distances are computed for the chapter's rows only (the `hcn_parent` index
finds them; a chapter has tens of paragraphs), not through the HNSW index: an
exact ranking of a few rows is cheaper than an approximate scan filtered to them.
A search sends that statement with its rows by id (`statement`), for every summary
among its candidates: it needs only their ids and the query vector, and a round trip
after the hits are known would cost more than the few chapters' rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from search import rows as search_rows
from search.results import Chunk
from store import roundtrip
from store import vectors as store_vectors

# (repository, summary file) → its chapter's best paragraphs: (chunk, cosine similarity)
Climbed = dict[tuple[str, str], list[tuple[Chunk, float]]]


def best_paragraphs(
    conn: psycopg.Connection,
    summaries: Sequence[tuple[str, str]],
    query_vector: Sequence[float],
    model: str,
    dimension: int,
    branch: search_rows.Branches,
    per_chapter: int = 2,
) -> Climbed:
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
    return passages_of(found)


def statement(
    ids: Sequence[int], query_vector: Sequence[float], model: str, dimension: int, per_chapter: int
) -> roundtrip.Statement | None:
    """`best_paragraphs` of the chapters whose summaries are among the rows `ids`, as one
    statement a search sends with its rows by id, before it knows which rows are
    summaries (store.vectors.summaries_paragraphs_statement); its rows go to
    `passages_of`. None when there is nothing to climb down to."""
    if not ids or per_chapter <= 0:
        return None
    return store_vectors.summaries_paragraphs_statement(
        model, dimension, query_vector, ids, per_chapter
    )


def passages_of(found: Iterable[Sequence[Any]]) -> Climbed:
    """Paragraph rows (store.nodes.COLUMNS, then the cosine distance) by (repository,
    summary file), as (chunk, cosine similarity), nearest first, ties by row id."""
    best: Climbed = {}
    for *columns, distance in sorted(found, key=lambda r: (float(r[-1]), r[0])):
        row = search_rows.Row(*columns)
        best.setdefault((row.repository, row.parent_source_file or ""), []).append(
            (search_rows.chunk(row), round(1.0 - float(distance), 6))
        )
    return best
