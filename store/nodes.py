"""Reading the indexed rows by id, file, parent and chunk (`hierarchical_content_nodes`,
migration 001), for search.rows and search.nodes (get_node, get_parent, get_children,
outline).

    rows_by_id(conn, [17, 42], row)                                   # a ranking's rows
    rows_by_id_statement([17, 42])                     # the same, for store.roundtrip.run
    file_rows(conn, "livre", "main", "corpus/w/01/source.md", row)    # one file, in order
    children_rows(conn, [("livre", "main", "corpus/w/summary.md")], row)
    files_rows(conn, [("livre", "main", "corpus/w/01/source.md")], row)
    chunk_rows(conn, [("livre", "main", "corpus/w/01/source.md", 3)], row)
    outline_files(conn, [("livre", "main")], works=None)              # one dict per file

and, among the (repository, branch) `pairs` a request reads (search.scope):

    scoped_file_rows(conn, pairs, "corpus/w/01/source.md", row)  # by repository, chunk
    stored_path(conn, pairs, ["corpus/é/…", "corpus/é/…"])       # the spelling stored
    normalized_path(conn, pairs, "corpus/é/…")                   # the same, scanning (NFC)
    paths_ending(conn, pairs, ["/01/source.md"], limit=3)        # suffix matches
    stored_work(conn, pairs, ["Œuvre"]), works(conn, pairs)      # a work as stored, all

`row` is the caller's psycopg row factory over `COLUMNS` (search.rows.Row through
`class_row`): search owns its result types, store its statements. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import RowFactory, dict_row

from store.roundtrip import Statement

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


def rows_by_id(conn: psycopg.Connection, ids: Sequence[int], row: RowFactory[T]) -> list[T]:
    """The rows of `ids` that exist, in no order."""
    return _select(conn, row, "id = ANY(%s)", (list(ids),))


def rows_by_id_statement(ids: Sequence[int]) -> Statement:
    """`rows_by_id` as a statement for `store.roundtrip.run` (sent with others in one
    round trip); its rows are tuples of COLUMNS."""
    query = f"SELECT {COLUMNS} FROM hierarchical_content_nodes WHERE id = ANY(%s)"
    return Statement(query, (list(ids),))


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


# the (repository, branch) pairs a request reads (search.scope), as named parameters
_PAIRS = (
    "(repository, branch) IN (SELECT * FROM unnest(%(repositories)s::text[], %(branches)s::text[]))"
)


def _pairs(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {"repositories": [r for r, _ in pairs], "branches": [b for _, b in pairs]}


def scoped_file_rows(
    conn: psycopg.Connection,
    pairs: Sequence[tuple[str, str]],
    source_file: str,
    row: RowFactory[T],
) -> list[T]:
    """Every row of `source_file` in the (repository, branch) `pairs`, by repository and
    chunk (one path may be indexed in several repositories)."""
    return _select(
        conn,
        row,
        f"source_file = %(file)s AND {_PAIRS}",
        {**_pairs(pairs), "file": source_file},
        "repository, chunk_index",
    )


def _first(
    conn: psycopg.Connection,
    pairs: Sequence[tuple[str, str]],
    column: str,
    condition: str,
    params: dict[str, Any],
) -> str | None:
    """`column` of the first row of `pairs` meeting `condition`, else None."""
    found = conn.execute(
        f"SELECT {column} FROM hierarchical_content_nodes WHERE {_PAIRS} AND {condition} LIMIT 1",
        {**_pairs(pairs), **params},
    ).fetchone()
    return str(found[0]) if found else None


def stored_path(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]], spellings: Sequence[str]
) -> str | None:
    """The first of `spellings` (one path's Unicode normalizations) stored in `pairs`
    (the index on source_file answers), else None."""
    return _first(
        conn, pairs, "source_file", "source_file = ANY(%(others)s)", {"others": list(spellings)}
    )


def normalized_path(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]], nfc: str
) -> str | None:
    """A path stored in `pairs` whose NFC form is `nfc` (PostgreSQL's normalize(): a
    path mixing NFC and NFD folders), else None. A scan of the pairs' rows."""
    return _first(conn, pairs, "source_file", "normalize(source_file, NFC) = %(nfc)s", {"nfc": nfc})


def paths_ending(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]], tails: Sequence[str], limit: int
) -> list[str]:
    """Up to `limit` paths stored in `pairs` that end with one of `tails` (taken
    literally: LIKE's wildcards escaped), in order."""
    patterns = [
        "%" + t.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") for t in tails
    ]
    rows = conn.execute(
        "SELECT DISTINCT source_file FROM hierarchical_content_nodes"
        f" WHERE source_file LIKE ANY(%(patterns)s) AND {_PAIRS} ORDER BY 1 LIMIT %(limit)s",
        {**_pairs(pairs), "patterns": patterns, "limit": limit},
    ).fetchall()
    return [r[0] for r in rows]


def stored_work(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]], spellings: Sequence[str]
) -> str | None:
    """The first of `spellings` (one work's Unicode normalizations) that a row of `pairs`
    belongs to, else None."""
    return _first(conn, pairs, "work", "work = ANY(%(work)s)", {"work": list(spellings)})


def works(conn: psycopg.Connection, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The first 20 works (by name) that rows of `pairs` belong to (an error message's)."""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT work FROM hierarchical_content_nodes WHERE {_PAIRS}"
            " ORDER BY 1 LIMIT 20",
            _pairs(pairs),
        )
    ]
