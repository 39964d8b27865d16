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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from store import keyword as store_keyword
from store import vectors as store_vectors


@dataclass(frozen=True)
class Filters:
    repository: str | None = None
    branch: str = "main"
    work: str | None = None
    levels: tuple[int, ...] | None = None
    node_types: tuple[str, ...] | None = None

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
        parts: list[sql.Composable] = [sql.SQL("branch = %(branch)s")]
        params: dict[str, Any] = {"branch": self.branch}
        if self.repository is not None:
            parts.append(sql.SQL("repository = %(repository)s"))
            params["repository"] = self.repository
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
    """BM25 ranking from the store's keyword backend (pg_search when set up, else SQL BM25).

    BM25's statistics are per repository and branch, so without a repository
    filter each repository of the branch is ranked apart and the lists are
    merged by score: scores are comparable enough across corpora of one
    language, and a single repository (the usual case) is exact.
    """
    backend = store_keyword.choose_backend(conn)
    if filters.repository is not None:
        repositories = [filters.repository]
    else:
        repositories = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT repository FROM bm25_corpus WHERE branch = %s ORDER BY 1",
                (filters.branch,),
            ).fetchall()
        ]
    found: list[tuple[int, float]] = []
    for repository in repositories:
        found.extend(
            backend.search(
                conn,
                query,
                repository=repository,
                branch=filters.branch,
                filters=filters.as_store_filters(),
                k=depth,
            )
        )
    found.sort(key=lambda x: (-x[1], x[0]))
    return found[:depth]


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
    if len(query_vector) != dimension:
        raise ValueError(f"the query vector has {len(query_vector)} dimensions, not {dimension}")
    where, params = filters.where()
    q: Any = np.asarray(query_vector, dtype=np.float32)
    if dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
        q = HalfVector(q)  # the index casts to halfvec(N) above 2,000 dimensions
    params.update(q=q, k=depth)
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search(depth)),))
        found = conn.execute(
            store_vectors.nearest_sql(model, dimension, where=where), params
        ).fetchall()
    found.sort(key=lambda r: r[1])
    return [(int(i), 1.0 - float(d)) for i, d in found]
