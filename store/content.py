"""Figures and lists over the indexed rows (`hierarchical_content_nodes`, migration 001;
`loaded_files`, 002) for `glossator db status` and `doctor`.

    row_counts(conn)                      # rows per repository, branch, level, type, model
    vector_counts(conn)                   # vectors per repository, branch, model, dimension
    loaded_file_counts(conn)              # files loaded per repository and branch

    sample_paragraphs(conn, [("livre", "main")], 32, min_chars=80)   # the calibration's

Search reads rows through store.nodes, store.keyword, store.vectors and
store.chapters. Each function runs on the caller's connection; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def row_counts(conn: Any) -> list[tuple[str, str, int, str, str, int]]:
    """(repository, branch, level, node_type, model or '—', rows), in that order."""
    rows = conn.execute(
        "SELECT repository, branch, level, node_type, coalesce(embedding_model, '—'),"
        " count(*) FROM hierarchical_content_nodes GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
    ).fetchall()
    return [tuple(r) for r in rows]


def vector_counts(conn: Any) -> list[tuple[str, str, str, int, int]]:
    """(repository, branch, model, dimension, rows) of the rows that have a vector, on
    the row or beside it while a job embeds (store.landing)."""
    rows = conn.execute(
        "SELECT repository, branch, model, dims, sum(n)::bigint FROM ("
        " SELECT repository, branch, embedding_model AS model, vector_dims(embedding) AS dims,"
        " count(*) AS n FROM hierarchical_content_nodes WHERE embedding IS NOT NULL"
        " GROUP BY 1, 2, 3, 4 UNION ALL SELECT repository, branch, model, vector_dims(vector),"
        " count(*) FROM landed_vectors GROUP BY 1, 2, 3, 4) AS v"
        " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3"
    ).fetchall()
    return [tuple(r) for r in rows]


def loaded_file_counts(conn: Any) -> list[tuple[str, str, int]]:
    """(repository, branch, files loaded), in name order."""
    rows = conn.execute(
        "SELECT repository, branch, count(*) FROM loaded_files GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    return [tuple(r) for r in rows]


def sample_paragraphs(
    conn: Any, pairs: Sequence[tuple[str, str]], n: int, *, min_chars: int
) -> list[tuple[str, str, int, str]]:
    """Up to `n` paragraphs (repository, source_file, chunk_index, content) of the
    (repository, branch) `pairs`, at least `min_chars` long: one per file first, then a
    second…, each file's in a fixed hash order (the same rows give the same sample;
    search.calibration's corpus questions)."""
    rows = conn.execute(
        """SELECT repository, source_file, chunk_index, content
             FROM (SELECT h.repository, h.source_file, h.chunk_index, h.content,
                          row_number() OVER (PARTITION BY h.repository, h.source_file
                                             ORDER BY md5(h.source_file || ':' || h.chunk_index))
                            AS nth
                     FROM hierarchical_content_nodes h
                    WHERE (h.repository, h.branch) IN
                          (SELECT * FROM unnest(%(repositories)s::text[], %(branches)s::text[]))
                      AND h.level = 0
                      AND length(h.content) >= %(min_chars)s) AS p
            ORDER BY nth, md5(source_file || ':' || chunk_index)
            LIMIT %(n)s""",
        {
            "repositories": [r for r, _ in pairs],
            "branches": [b for _, b in pairs],
            "n": n,
            "min_chars": min_chars,
        },
    ).fetchall()
    return [tuple(r) for r in rows]
