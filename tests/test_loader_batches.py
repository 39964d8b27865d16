"""A first load of many new files is copied in batches (store.loader: one COPY, one
savepoint and one INSERT of records for many files); the rows, records, catalogue and
chapter documents are those of a file-by-file load, and a batch that fails loads its
files one by one: the bad one refused with its reason, the others loaded."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from indexer.corpus.sidecar_format import dumps, loads
from store import loader
from store.loader import sync_files
from tests.store_sidecars import MODEL, example


def _state(conn: psycopg.Connection, repository: str) -> tuple[list[Any], ...]:
    """Everything a load writes for a repository, in a stable order."""
    queries = (
        "SELECT source_file, chunk_index, level, node_type, parent_source_file, heading_path,"
        " content, content_token_count, embedding_model, embedding::text, work, lang,"
        " line_start, line_end, ts_config::text, tsv::text, doc_len"
        " FROM hierarchical_content_nodes WHERE repository = %s ORDER BY 1, 2",
        "SELECT source_file, source_file_hash, sidecar_hash, embedding_model, chunk_count"
        " FROM loaded_files WHERE repository = %s ORDER BY 1",
        "SELECT ts_config::text, n_docs, total_len FROM branch_languages"
        " WHERE repository = %s ORDER BY 1",
        "SELECT source_file, work, lexemes, doc_len, n_rows FROM chapter_documents"
        " WHERE repository = %s ORDER BY 1",
    )
    return tuple(conn.execute(q, (repository,)).fetchall() for q in queries)


def _paths(source: Any) -> list[str]:
    return sorted(p for p in source.files if p.endswith(".md"))


def test_batches_write_what_file_by_file_writes(
    conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = example()
    paths = _paths(source)
    assert len(paths) >= loader.BATCH_MIN_FILES
    monkeypatch.setattr(loader, "BATCH_ROWS", 40)  # several batches over the example
    batched = sync_files(
        conn, repository="batched", branch="main", source=source, changed=paths, deleted=[]
    )
    conn.commit()
    assert batched.ok and sorted(batched.loaded) == paths and batched.rows > 200
    for path in paths:  # one file at a time: never batched
        one = sync_files(
            conn, repository="one-by-one", branch="main", source=source, changed=[path], deleted=[]
        )
        conn.commit()
        assert one.ok and one.loaded == [path]
    assert _state(conn, "batched") == _state(conn, "one-by-one")
    assert len(_state(conn, "batched")[0]) == batched.rows


def test_a_failed_batch_loads_its_files_one_by_one(conn: psycopg.Connection) -> None:
    source = example()
    paths = _paths(source)
    # the last file names the example's model with another dimension: the database side
    # (store.vectors.register) refuses it inside the batch
    bad = next(p for p in reversed(paths) if loads(p + ".jsonl", source.files[p + ".jsonl"]).chunks)
    sidecar = loads(bad + ".jsonl", source.files[bad + ".jsonl"])
    assert sidecar.manifest.embedding_model == MODEL
    sidecar.manifest.dimension = 8
    for c in sidecar.chunks:
        c.embedding = list(c.embedding or [])[:8]
    source.files[bad + ".jsonl"] = dumps(sidecar)
    result = sync_files(
        conn, repository="bastiat", branch="main", source=source, changed=paths, deleted=[]
    )
    conn.commit()
    assert [p.path for p in result.problems] == [bad + ".jsonl"]
    assert "dimensions" in result.problems[0].message
    assert sorted(result.loaded) == [p for p in paths if p != bad]
    stored = _state(conn, "bastiat")
    assert {r[0] for r in stored[0]} == {p for p in paths if p != bad} - {
        p for p in paths if not loads(p + ".jsonl", source.files[p + ".jsonl"]).chunks
    }
    assert [r[0] for r in stored[1]] == [p for p in paths if p != bad]
