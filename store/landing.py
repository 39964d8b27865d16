"""Vectors landing beside rows already loaded, and how much of a branch has them.

    start(conn, "livre", "main", missing=1800)          # after the job's rows: the coverage
    land(conn, "livre", "main", model, slots)           # a slice of vectors, its own transaction
    loaded_vectors(conn, "livre", "main", files, model) # a resumed job: what landed before
    clear(conn, "livre", "main")                        # the final load: rows = sidecars

A job loads a rebuilt file's rows before it embeds them (`store.loader.sync_files(…,
partial=True)`: their `loaded_files` record says so, and the final load, whose sidecar
differs, replaces the file's rows whole, vectors in). Each computed vector then lands in
`landed_vectors` (migration 060), keyed by the id of the row it belongs to, found by
(repository, branch, source_file, chunk_index) *and* the row's file hash and text, so a
vector never lands beside a row whose text changed since. The rows themselves are not
written again: an UPDATE of a row makes a new tuple that pg_search's BM25 index and the
HNSW index both index again, and a search over the branch slowed by half while a book
embedded (bench/RESULTS.md, "vectors beside the rows"). The vector stage of a search
reads the side table beside the model's HNSW index (store.vectors.nearest_sql).
`vector_coverage` (migration 041) counts the branch's rows still without their vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from indexer.corpus.sidecar_format import VectorSlot as Slot
from indexer.corpus.sidecar_format import round_vector

PARTIAL = "partial:"  # the loaded_files.sidecar_hash prefix of rows loaded before their vectors


def start(conn: Any, repository: str, branch: str, missing: int) -> None:
    """The branch's coverage once a job's rows are loaded: `missing` of its vectorized
    rows (loaded_files' counts) wait for their vector."""
    conn.execute(
        "INSERT INTO vector_coverage (repository, branch, total, missing, updated_at)"
        " SELECT %(r)s, %(b)s, coalesce(sum(chunk_count), 0), %(m)s, now() FROM loaded_files"
        " WHERE repository = %(r)s AND branch = %(b)s AND embedding_model IS NOT NULL"
        " ON CONFLICT (repository, branch) DO UPDATE SET total = EXCLUDED.total,"
        " missing = EXCLUDED.missing, updated_at = now()",
        {"r": repository, "b": branch, "m": missing},
    )


def land(
    conn: Any,
    repository: str,
    branch: str,
    model: str,
    slots: Sequence[tuple[Slot, Sequence[float]]],
) -> int:
    """Each vector beside its row, if that row still holds the slot's text and file hash
    and has no vector yet; the coverage counts them. The rows that took one."""
    import numpy as np  # here: `glossator repo delete` imports this module, and needs none

    landed = 0
    with conn.cursor() as cur:
        for slot, vector in slots:
            cur.execute(
                "INSERT INTO landed_vectors (node_id, repository, branch, work, level,"
                " node_type, model, vector) SELECT id, repository, branch, work, level,"
                " node_type, %s, %s FROM hierarchical_content_nodes"
                " WHERE repository = %s AND branch = %s AND source_file = %s"
                " AND chunk_index = %s AND source_file_hash = %s AND content = %s"
                " AND embedding IS NULL ON CONFLICT (node_id) DO NOTHING",
                (
                    model,
                    # as the sidecar will hold it: the final load writes the same bytes,
                    # and a vector taken back (`loaded_vectors`) is written with them too
                    # (its float4 is within 6e-8 of the 6-decimal value, which rounds
                    # back to it)
                    np.asarray(round_vector(vector), dtype=np.float32),
                    repository,
                    branch,
                    slot.source_file,
                    slot.chunk_index,
                    slot.source_file_hash,
                    slot.text,
                ),
            )
            landed += cur.rowcount
    if landed:
        conn.execute(
            "UPDATE vector_coverage SET missing = greatest(missing - %s, 0), updated_at = now()"
            " WHERE repository = %s AND branch = %s",
            (landed, repository, branch),
        )
    return landed


def loaded_vectors(
    conn: Any, repository: str, branch: str, files: Iterable[str], model: str
) -> list[tuple[str, int, str, str, list[float]]]:
    """The vectors that landed beside rows loaded before their vectors (a job killed or
    interrupted while it embedded), of `files`, by `model`: (source_file, level,
    heading_path, content, vector) each."""
    rows = conn.execute(
        "SELECT h.source_file, h.level, h.heading_path, h.content, l.vector::real[]"
        " FROM landed_vectors l JOIN hierarchical_content_nodes h ON h.id = l.node_id"
        " JOIN loaded_files f ON (f.repository, f.branch, f.source_file)"
        " = (h.repository, h.branch, h.source_file)"
        " WHERE h.repository = %s AND h.branch = %s AND h.source_file = ANY(%s)"
        " AND l.model = %s AND h.embedding IS NULL AND f.sidecar_hash LIKE %s",
        (repository, branch, list(files), model, PARTIAL + "%"),
    ).fetchall()
    # real[]: float4 values of the sidecar's rounded vector (`land`)
    return [(f, level, path, text, list(v)) for f, level, path, text, v in rows]


def clear(conn: Any, repository: str, branch: str) -> None:
    """Every vector in: the branch's rows equal its sidecars, vectors included (the final
    load, in its transaction), or the branch is gone."""
    conn.execute(
        "DELETE FROM vector_coverage WHERE repository = %s AND branch = %s", (repository, branch)
    )
    conn.execute(
        "DELETE FROM landed_vectors WHERE repository = %s AND branch = %s", (repository, branch)
    )
