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

import numpy as np
import psycopg
from psycopg import sql

from search import rows as R
from search.results import Chunk
from store import vectors as store_vectors


def best_paragraphs(
    conn: psycopg.Connection,
    summaries: Sequence[tuple[str, str]],
    query_vector: Sequence[float],
    model: str,
    dimension: int,
    branch: R.Branches,
    per_chapter: int = 2,
) -> dict[tuple[str, str], list[tuple[Chunk, float]]]:
    """(repository, summary file) → its chapter's `per_chapter` best paragraphs, as
    (chunk, cosine similarity), most similar first."""
    pairs = list(dict.fromkeys(summaries))
    if not pairs or per_chapter <= 0:
        return {}
    cast = sql.SQL(store_vectors.cast_type(dimension))
    q = np.asarray(query_vector, dtype=np.float32)
    query = sql.SQL(
        "SELECT id, repository, parent_source_file, "
        "(embedding::{cast}) <=> %(q)s::{cast} AS distance "
        "FROM hierarchical_content_nodes "
        "WHERE embedding_model = %(model)s AND level = 0 "
        "AND (repository, branch, parent_source_file) IN "
        "(SELECT * FROM unnest(%(repos)s::text[], %(branches)s::text[], %(files)s::text[]))"
    ).format(cast=cast)
    if dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
        from pgvector import HalfVector

        q = HalfVector(q)  # type: ignore[assignment]
    found = conn.execute(
        query,
        {
            "q": q,
            "model": model,
            "branches": [R.branch_for(branch, p[0]) for p in pairs],
            "repos": [p[0] for p in pairs],
            "files": [p[1] for p in pairs],
        },
    ).fetchall()
    best: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for i, repository, parent, distance in sorted(found, key=lambda r: (r[3], r[0])):
        kept = best.setdefault((repository, parent), [])
        if len(kept) < per_chapter:
            kept.append((int(i), 1.0 - float(distance)))
    rows = R.by_ids(conn, [i for kept in best.values() for i, _ in kept])
    return {
        key: [(R.chunk(rows[i]), round(cos, 6)) for i, cos in kept if i in rows]
        for key, kept in best.items()
    }
