"""One HNSW cosine index per embedding model, made when the model first appears.

The `embedding` column is an untyped `vector`, so rows of two models (say 384 and
1024 dimensions, while a corpus is re-embedded) live side by side; each model gets a
partial expression index on a typed cast (`halfvec` over 2,000 dimensions:
`cast_type`), recorded in `vector_indexes`. The loader registers a new model when its
first file loads and builds the index once that batch's rows are in, in the same
transaction. A query uses the index only in one form, which `nearest_sql` writes:
copy it. That form and why each part of it matters: docs/store.md, "One HNSW index
per embedding model".
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from typing import Any

import psycopg
from pgvector import HalfVector
from psycopg import sql

from indexer.corpus.errors import CorpusError
from store.nodes import COLUMNS
from store.roundtrip import Statement

log = logging.getLogger(__name__)

HNSW_VECTOR_MAX_DIMS = 2000  # pgvector: HNSW indexes vector up to 2,000 dims
HNSW_HALFVEC_MAX_DIMS = 4000  # and halfvec up to 4,000


def cast_type(dimension: int) -> str:
    """SQL type of the indexed cast for this dimension: vector(N) or halfvec(N)."""
    if dimension <= HNSW_VECTOR_MAX_DIMS:
        return f"vector({int(dimension)})"
    if dimension <= HNSW_HALFVEC_MAX_DIMS:
        return f"halfvec({int(dimension)})"
    raise ValueError(f"{dimension} dimensions: pgvector's HNSW indexes at most 4,000")


def opclass(dimension: int) -> str:
    return "vector_cosine_ops" if dimension <= HNSW_VECTOR_MAX_DIMS else "halfvec_cosine_ops"


def index_name(model: str, dimension: int) -> str:
    """A valid, stable identifier (< 63 bytes) for any model name."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:30]
    digest = hashlib.sha256(f"{model}\0{dimension}".encode()).hexdigest()[:8]
    return f"hcn_vec_{slug}_{dimension}_{digest}"


def registered(conn: psycopg.Connection) -> dict[str, tuple[int, str]]:
    """model -> (dimension, index name) of every model that has rows or had them."""
    rows = conn.execute(
        "SELECT embedding_model, dimension, index_name FROM vector_indexes"
    ).fetchall()
    return {m: (d, n) for m, d, n in rows}


def register(conn: psycopg.Connection, model: str, dimension: int, *, path: str = "") -> bool:
    """Record the model and its dimension; True when the model is new (its index is due).

    Runs in the caller's transaction. A model already stored with another
    dimension is refused (`CorpusError` naming `path`): one index per model and
    dimension, and search needs to know which cast to use for a model.
    """
    cur = conn.execute(
        "INSERT INTO vector_indexes (embedding_model, dimension, index_name) VALUES (%s, %s, %s)"
        " ON CONFLICT (embedding_model) DO NOTHING RETURNING index_name",
        (model, dimension, index_name(model, dimension)),
    )
    if cur.fetchone() is not None:
        return True
    row = conn.execute(
        "SELECT dimension FROM vector_indexes WHERE embedding_model = %s", (model,)
    ).fetchone()
    if row and row[0] != dimension:
        raise CorpusError(
            path,
            f"embedding model {model!r} is stored with {row[0]} dimensions but this "
            f"sidecar has {dimension}: regenerate it, or name the model differently "
            f"(e.g. '{model}@{dimension}') so both can coexist",
        )
    return False


def create_index(conn: psycopg.Connection, model: str, dimension: int) -> None:
    """Build the model's HNSW index over the rows already there (caller's transaction).

    The loader calls it after copying a batch's rows, not before: one build over
    all of a new model's rows is several times faster than as many inserts.
    """
    # the graph is built in memory when it fits; this lasts until the transaction ends
    conn.execute(
        "SELECT set_config('maintenance_work_mem', '256MB', true)"
        " WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('256MB')"
    )
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON hierarchical_content_nodes "
            "USING hnsw ((embedding::{cast}) {ops}) WHERE embedding_model = {model}"
        ).format(
            name=sql.Identifier(index_name(model, dimension)),
            cast=sql.SQL(cast_type(dimension)),
            ops=sql.SQL(opclass(dimension)),
            model=sql.Literal(model),
        )
    )
    log.info("created HNSW index for model %s (%d dimensions)", model, dimension)


def nearest_sql(model: str, dimension: int, *, where: sql.Composable | None = None) -> sql.Composed:
    """The k-nearest query that uses the model's index; parameters %(q)s and %(k)s.

    `where` adds conditions on the rows' columns, unqualified (e.g.
    `sql.SQL("repository = %(repository)s")`). Returns (id, distance) rows: the `k`
    nearest through the index, then the `k` nearest of the vectors landed beside their
    rows while a job embeds (store.landing; an exact scan of one job's vectors at most,
    none once every job is done), each part nearest first; the caller merges them.
    """
    cast = sql.SQL(cast_type(dimension))
    expr = sql.SQL("(embedding::{cast}) <=> %(q)s::{cast}").format(cast=cast)
    cond = sql.SQL("embedding_model = {}").format(sql.Literal(model))
    # landed_vectors has the row's columns a filter names (migration 060): the same
    # conditions, unqualified, apply to it
    side = sql.SQL("model = {}").format(sql.Literal(model))
    if where is not None:
        cond = sql.SQL("{} AND {}").format(cond, where)
        side = sql.SQL("{} AND {}").format(side, where)
    landed = sql.SQL("(vector::{cast}) <=> %(q)s::{cast}").format(cast=cast)
    return sql.SQL(
        "(SELECT id, {expr} AS distance FROM hierarchical_content_nodes WHERE {cond} "
        "ORDER BY {expr} LIMIT %(k)s) UNION ALL "
        "(SELECT node_id, {landed} FROM landed_vectors WHERE {side} "
        "ORDER BY {landed} LIMIT %(k)s)"
    ).format(expr=expr, cond=cond, landed=landed, side=side)


# Settings of the vector query (`nearest_statements`), local to it. Without filters narrower than the
# branch (the MCP tools' default, search.retrieval.index_always), the query is planned
# with sorts priced out, so the model's HNSW index (the one path that returns rows in
# distance order) is used at any size.
# PostgreSQL's estimate of the alternative, an exact scan, leaves out detoasting every
# row's vector (3 TOAST pages each): on the example's 1,985 rows it prices that scan
# below the index although it takes 6 ms against the index's ~2.4 ms (recall@10 0.99
# against the exact scan, bench/RESULTS.md "Latency"). With a repository, work, level
# or node type filter the planner keeps the choice: it knows how few rows the filter
# keeps, and for a small repository among large ones the exact scan through the filter
# index is the right plan. Parameters: ef_search, enable_sort ('off' or 'on').
VECTOR_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    " set_config('hnsw.ef_search', %s, true), set_config('enable_sort', %s, true)"
)
# enable_sort as it was, kept for the transaction's later statements
SAVE_ENABLE_SORT = (
    "SELECT set_config('glossator.enable_sort', current_setting('enable_sort'), true)"
)
RESTORE_ENABLE_SORT = (
    "SELECT set_config('enable_sort', current_setting('glossator.enable_sort'), true)"
)


def nearest_statements(
    model: str,
    dimension: int,
    query_vector: Any,
    *,
    where: sql.Composable,
    params: dict[str, Any],
    k: int,
    ef_search: int,
    sorts: bool,
) -> list[Statement]:
    """The statements of the `k` rows of `model` nearest `query_vector` among those
    `where` keeps (its named `params`), in their order, for `store.roundtrip.run` (a
    search sends them with its BM25 statements): the settings, the query, enable_sort
    given back. Their rows go to `nearest_of`: (id, cosine distance) as the index scan
    returns them, relaxed order (pgvector 0.8 `hnsw.iterative_scan`: it goes on until
    `k` rows pass the filters), so the caller sorts. `ef_search`: the HNSW candidate
    list; `sorts` False plans the query with sorts priced out (`VECTOR_SETTINGS`).

    Not a savepoint rolled back: psycopg forgets its prepared statements on any
    ROLLBACK, and every statement of every search would be planned again (+1-2 ms)."""
    q = _query_vector(query_vector, dimension)
    # settings local to the transaction (an autocommit connection's: the pipeline's,
    # store.roundtrip); no savepoint (SAVEPOINT and RELEASE were two statements and two
    # round trips more, each synced by psycopg's pipeline)
    return [
        Statement(SAVE_ENABLE_SORT),
        Statement(VECTOR_SETTINGS, (str(ef_search), "on" if sorts else "off")),
        Statement(nearest_sql(model, dimension, where=where), {**params, "q": q, "k": k}),
        Statement(RESTORE_ENABLE_SORT),
    ]


def nearest_of(rows: Sequence[list[Any]], k: int) -> list[tuple[int, float]]:
    """`nearest_statements`' rows (one list per statement): the `k` (id, cosine
    distance) nearest, nearest first (ties by id). The index's part comes in relaxed
    order and the landed vectors' part after it (`nearest_sql`): sorted here."""
    found = sorted(((int(i), float(d)) for i, d in rows[2]), key=lambda r: (r[1], r[0]))
    return found[:k]


def _query_vector(query_vector: Any, dimension: int) -> Any:
    """The query vector as the model's indexed cast takes it (halfvec above 2,000 dims)."""
    import numpy as np  # here: `glossator repo delete` imports this module, and needs none

    q: Any = np.asarray(query_vector, dtype=np.float32)
    return HalfVector(q) if dimension > HNSW_VECTOR_MAX_DIMS else q


def _paragraphs_sql(dimension: int, chapters: sql.Composable) -> sql.Composed:
    """The `%(per)s` paragraphs of `%(model)s` nearest `%(q)s` in each chapter `chapters`
    names (rows of (repository, branch, parent summary file)), ties by id: each one's
    COLUMNS, then its cosine distance (a vector on its row, or beside it while a job
    embeds: store.landing). Exact distances over the chapters' rows (the
    `hcn_parent` index finds them; a chapter has tens of paragraphs), ranked in SQL."""
    cast = sql.SQL(cast_type(dimension))
    return sql.SQL(
        "SELECT {columns}, distance FROM (SELECT h.*, d.distance, row_number() OVER"
        " (PARTITION BY h.repository, h.branch, h.parent_source_file"
        "  ORDER BY d.distance, h.id) AS nearest"
        " FROM hierarchical_content_nodes h"
        " LEFT JOIN landed_vectors l ON l.node_id = h.id AND l.model = %(model)s,"
        " LATERAL (SELECT (coalesce(h.embedding, l.vector)::{cast}) <=> %(q)s::{cast}"
        "  AS distance) AS d"
        " WHERE (h.embedding_model = %(model)s OR l.node_id IS NOT NULL) AND h.level = 0"
        " AND (h.repository, h.branch, h.parent_source_file) IN ({chapters})"
        ") AS ranked WHERE nearest <= %(per)s"
    ).format(columns=sql.SQL(COLUMNS), cast=cast, chapters=chapters)


def nearest_paragraphs(
    conn: psycopg.Connection,
    model: str,
    dimension: int,
    query_vector: Any,
    chapters: Sequence[tuple[str, str, str]],
    per_chapter: int,
) -> list[tuple[Any, ...]]:
    """The `per_chapter` paragraphs of `model` nearest `query_vector` in each (repository,
    branch, parent summary file) of `chapters` (ties by id): each one's
    store.nodes.COLUMNS, then its cosine distance. One statement: the distances and
    the rows they choose (`chapter_distances`' ranking, kept in SQL)."""
    query = _paragraphs_sql(
        dimension,
        sql.SQL("SELECT * FROM unnest(%(repos)s::text[], %(branches)s::text[], %(files)s::text[])"),
    )
    params = {
        "q": _query_vector(query_vector, dimension),
        "model": model,
        "repos": [c[0] for c in chapters],
        "branches": [c[1] for c in chapters],
        "files": [c[2] for c in chapters],
        "per": per_chapter,
    }
    return [tuple(r) for r in conn.execute(query, params).fetchall()]


def summaries_paragraphs_statement(
    model: str,
    dimension: int,
    query_vector: Any,
    ids: Sequence[int],
    per_chapter: int,
) -> Statement:
    """`nearest_paragraphs` for the chapters whose summaries (rows of level 1) are among
    `ids`, as one statement for `store.roundtrip.run`: a search sends it with its rows
    by id (`store.nodes.rows_by_id_statement`), before it knows which of them are
    summaries. Its rows: each paragraph's COLUMNS, then its cosine distance."""
    query = _paragraphs_sql(
        dimension,
        sql.SQL(
            "SELECT s.repository, s.branch, s.source_file FROM hierarchical_content_nodes s"
            " WHERE s.id = ANY(%(ids)s) AND s.level = 1"
        ),
    )
    params = {
        "q": _query_vector(query_vector, dimension),
        "model": model,
        "ids": list(ids),
        "per": per_chapter,
    }
    return Statement(query, params)


def chapter_distances(
    conn: psycopg.Connection,
    model: str,
    dimension: int,
    query_vector: Any,
    chapters: Sequence[tuple[str, str, str]],
) -> list[tuple[int, str, str, float]]:
    """(id, repository, parent_source_file, cosine distance to `query_vector`) of every
    paragraph of `model` in the (repository, branch, parent summary file) `chapters`.

    Exact distances over the chapters' rows (the `hcn_parent` index finds them), not
    through the HNSW index: a chapter has tens of paragraphs (search.passages)."""
    cast = sql.SQL(cast_type(dimension))
    query = sql.SQL(
        "SELECT h.id, h.repository, h.parent_source_file, "
        "(coalesce(h.embedding, l.vector)::{cast}) <=> %(q)s::{cast} AS distance "
        "FROM hierarchical_content_nodes h "
        "LEFT JOIN landed_vectors l ON l.node_id = h.id AND l.model = %(model)s "
        "WHERE (h.embedding_model = %(model)s OR l.node_id IS NOT NULL) AND h.level = 0 "
        "AND (h.repository, h.branch, h.parent_source_file) IN "
        "(SELECT * FROM unnest(%(repos)s::text[], %(branches)s::text[], %(files)s::text[]))"
    ).format(cast=cast)
    q = _query_vector(query_vector, dimension)
    rows = conn.execute(
        query,
        {
            "q": q,
            "model": model,
            "repos": [c[0] for c in chapters],
            "branches": [c[1] for c in chapters],
            "files": [c[2] for c in chapters],
        },
    ).fetchall()
    return [(int(r[0]), r[1], r[2], float(r[3])) for r in rows]
