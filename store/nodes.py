"""Reading the indexed rows by file, parent and chunk (`hierarchical_content_nodes`,
migration 001), for search.nodes (get_node, get_parent, get_children, outline).

    file_rows(conn, "livre", "main", "corpus/w/01/source.md", row)    # one file, in order
    children_rows(conn, [("livre", "main", "corpus/w/summary.md")], row)
    files_rows(conn, [("livre", "main", "corpus/w/01/source.md")], row)
    chunk_rows(conn, [("livre", "main", "corpus/w/01/source.md", 3)], row)
    outline_files(conn, [("livre", "main")], works=None)              # one dict per file

`row` is the caller's psycopg row factory over `COLUMNS` (search.rows.Row through
`class_row`): search owns its result types, store its statements. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import RowFactory, dict_row

T = TypeVar("T")

# the columns a row factory receives, in this order (search.rows.Row's fields)
COLUMNS = (
    "id, repository, branch, level, node_type, source_file, parent_source_file, chunk_index, "
    "heading_path, content, content_token_count, work, line_start, line_end, "
    "embedding_model IS NOT NULL AS vectorized"
)


def _select(
    conn: psycopg.Connection, row: RowFactory[T], where: str, params: Any, order: str = ""
) -> list[T]:
    query = f"SELECT {COLUMNS} FROM hierarchical_content_nodes WHERE {where}"
    if order:
        query += f" ORDER BY {order}"
    with conn.cursor(row_factory=row) as cur:
        return cur.execute(query.encode(), params).fetchall()


def file_rows(
    conn: psycopg.Connection, repository: str, branch: str, source_file: str, row: RowFactory[T]
) -> list[T]:
    """Every row of one file, in chunk order."""
    return _select(
        conn,
        row,
        "repository = %s AND branch = %s AND source_file = %s",
        (repository, branch, source_file),
        "chunk_index",
    )


def children_rows(
    conn: psycopg.Connection, parents: Sequence[tuple[str, str, str]], row: RowFactory[T]
) -> list[T]:
    """Rows of every file whose parent is one of (repository, branch, source_file), by
    repository, file and chunk."""
    return _select(
        conn,
        row,
        "(repository, branch, parent_source_file) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
        ([p[0] for p in parents], [p[1] for p in parents], [p[2] for p in parents]),
        "repository, source_file, chunk_index",
    )


def files_rows(
    conn: psycopg.Connection, files: Sequence[tuple[str, str, str]], row: RowFactory[T]
) -> list[T]:
    """Rows of each (repository, branch, source_file), by repository, file and chunk."""
    return _select(
        conn,
        row,
        "(repository, branch, source_file) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
        ([f[0] for f in files], [f[1] for f in files], [f[2] for f in files]),
        "repository, source_file, chunk_index",
    )


def chunk_rows(
    conn: psycopg.Connection, chunks: Sequence[tuple[str, str, str, int]], row: RowFactory[T]
) -> list[T]:
    """The row of each (repository, branch, source_file, chunk_index) that exists."""
    return _select(
        conn,
        row,
        "(repository, branch, source_file, chunk_index) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[]))",
        (
            [c[0] for c in chunks],
            [c[1] for c in chunks],
            [c[2] for c in chunks],
            [c[3] for c in chunks],
        ),
    )


def outline_files(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]], works: Sequence[str] | None
) -> list[dict[str, Any]]:
    """One dict per file of the (repository, branch) `pairs` (of those `works` when
    given): repository, source_file, parent_source_file, level, node_type, work,
    heading_path, chunks (its row count) and first_text (its first chunk's)."""
    params: dict[str, Any] = {
        "repositories": [r for r, _ in pairs],
        "branches": [b for _, b in pairs],
    }
    extra = ""
    if works is not None:
        extra = " AND work = ANY(%(work)s)"
        params["work"] = list(works)
    query = f"""
SELECT repository, source_file, parent_source_file, level, node_type, work, heading_path,
       count(*) AS chunks,
       min(content) FILTER (WHERE chunk_index = 0) AS first_text
FROM hierarchical_content_nodes
WHERE (repository, branch) IN (SELECT * FROM unnest(%(repositories)s::text[],
                                                    %(branches)s::text[])) {extra}
GROUP BY repository, source_file, parent_source_file, level, node_type, work, heading_path
"""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query.encode(), params).fetchall()
