"""The loader sizes maintenance_work_mem to a new model's HNSW build (store.loader), for
its transaction only, raised and never lowered, at most HNSW_MEMORY_CAP."""

from __future__ import annotations

import psycopg

from store.loader import HNSW_ELEMENT_OVERHEAD, HNSW_MEMORY_CAP, _hnsw_memory


def _setting(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))").fetchone()
    assert row is not None
    return int(row[0])


def test_raised_for_the_transaction_to_the_graph_size(conn: psycopg.Connection) -> None:
    conn.rollback()
    conn.autocommit = True  # each `with conn.transaction()` below is a transaction of its own
    before = _setting(conn)
    with conn.transaction():
        _hnsw_memory(conn, 200_000, 384)
        wanted = 200_000 * (4 * 384 + HNSW_ELEMENT_OVERHEAD)
        assert _setting(conn) == max(before, wanted // 1024 * 1024)
        _hnsw_memory(conn, 10, 384)  # a smaller batch later never lowers it
        assert _setting(conn) == max(before, wanted // 1024 * 1024)
    assert _setting(conn) == before
    with conn.transaction():
        _hnsw_memory(conn, 10_000_000, 1024)
        assert _setting(conn) == max(before, HNSW_MEMORY_CAP)
    with conn.transaction():
        _hnsw_memory(conn, 3, 384)  # a few rows: the server's own setting is enough
        assert _setting(conn) == before
