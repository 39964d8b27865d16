"""Bulk loads (store.loader, migration 013) against incremental ones: the same entries in
every derived table, the same BM25 scores, exactly, on the example corpus."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from indexer.source import MemorySource
from store.chapters import chapter_evidence
from store.db import configure_connection
from store.keyword import SqlBm25
from store.loader import sync_files
from store.tree import sync_tree
from tests.store_sidecars import EXAMPLE_DIR, PETITION, example, example_source, sidecar_for

pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

REPO = "bastiat"
QUERIES = (
    "chandelles soleil lumière",
    "balance du commerce exportations importations",
    "la main droite et la main gauche",
    "protection douanière du travail national",
    "Angleterre concurrence étrangère",
)


@contextmanager
def fresh(pg_server: Any) -> Iterator[psycopg.Connection]:
    name = pg_server.create_database()
    conn = psycopg.connect(pg_server.url(name))
    configure_connection(conn)
    try:
        yield conn
    finally:
        conn.close()
        pg_server.drop_database(name)


def state(conn: psycopg.Connection) -> dict[str, Any]:
    """Every derived table, by (file, chunk) rather than row id, and the scores."""
    row_terms = conn.execute(
        "SELECT t.lexeme, t.repository, t.branch, h.source_file, h.chunk_index, t.tf, t.doc_len"
        " FROM bm25_row_terms t JOIN hierarchical_content_nodes h ON h.id = t.row_id"
        " ORDER BY 1, 2, 3, 4, 5"
    ).fetchall()
    orphans = conn.execute(
        "SELECT count(*) FROM bm25_row_terms t"
        " WHERE NOT EXISTS (SELECT 1 FROM hierarchical_content_nodes h WHERE h.id = t.row_id)"
    ).fetchone()
    chapters = conn.execute(
        "SELECT repository, branch, source_file, work, doc_len, n_rows FROM bm25_chapters"
        " ORDER BY 1, 2, 3"
    ).fetchall()
    chapter_terms = conn.execute(
        "SELECT c.repository, c.branch, c.source_file, t.lexeme, t.tf FROM bm25_chapter_terms t"
        " JOIN bm25_chapters c ON c.id = t.chapter_id ORDER BY 1, 2, 3, 4"
    ).fetchall()
    corpus = conn.execute("SELECT * FROM bm25_corpus ORDER BY 1, 2, 3").fetchall()
    where = {
        i: (f, c)
        for i, f, c in conn.execute(
            "SELECT id, source_file, chunk_index FROM hierarchical_content_nodes"
        ).fetchall()
    }
    scores = {
        q: [(where[i], s) for i, s in SqlBm25().search(conn, q, repository=REPO, k=20)]
        for q in QUERIES
    }
    evidence = {
        q: chapter_evidence(conn, q, None, model=None, dimension=None, repository=REPO).keyword
        for q in QUERIES
    }
    conn.rollback()
    return {
        "row_terms": row_terms,
        "orphans": orphans,
        "chapters": chapters,
        "chapter_terms": chapter_terms,
        "corpus": corpus,
        "scores": scores,
        "evidence": evidence,
    }


def load(
    conn: psycopg.Connection, source: MemorySource, bulk: bool | None, repository: str = REPO
) -> bool:
    return load_result(conn, source, bulk, repository).bulk


def load_result(
    conn: psycopg.Connection, source: MemorySource, bulk: bool | None, repository: str = REPO
) -> Any:
    result = sync_tree(conn, repository=repository, source=source, bulk=bulk)
    assert result.ok, result.problems
    conn.commit()
    return result


def test_a_bulk_first_load_equals_an_incremental_one(pg_server) -> None:
    with fresh(pg_server) as a, fresh(pg_server) as b:
        assert load(a, example(), None)  # a first load is a bulk load by itself
        assert not load(b, example(), False)
        bulk, incremental = state(a), state(b)
    assert bulk["row_terms"] and bulk["chapter_terms"] and bulk["orphans"] == (0,)
    assert bulk["scores"][QUERIES[0]] and bulk["evidence"][QUERIES[0]]
    assert bulk == incremental  # every entry, every score, exactly


def test_a_model_change_reloads_in_bulk_then_a_push_stays_incremental(pg_server) -> None:
    other_model = example_source(EXAMPLE_DIR, model="fake/hash-16", dimension=16)
    with fresh(pg_server) as a, fresh(pg_server) as b:
        load(a, example(), None)
        assert load(a, other_model, None)  # every sidecar changed: bulk
        load(b, other_model, False)
        assert state(a) == state(b)
        # one chapter edited: a push of one file, incremental, same result as a bulk load
        files = dict(other_model.files)
        text = files[PETITION].decode() + "\nLes chandelles de cire et le soleil d'été.\n"
        files[PETITION] = text.encode()
        files[PETITION + ".jsonl"] = sidecar_for(
            PETITION,
            text,
            heading_path="Sophismes économiques > Pétition",
            parent=None,
            level=0,
            node_type="source",
            model="fake/hash-16",
            dimension=16,
        )
        edited = MemorySource(files)
        result = sync_files(
            a, repository=REPO, branch="main", source=edited, changed=[PETITION], deleted=[]
        )
        assert result.loaded == [PETITION] and not result.bulk
        a.commit()
    with fresh(pg_server) as c, fresh(pg_server) as d:
        load(c, edited, True)
        load(d, edited, False)
        assert state(c) == state(d)


def test_a_refused_file_in_a_bulk_load_leaves_no_entry(pg_server) -> None:
    files = dict(example().files)
    files[PETITION + ".jsonl"] = b'{"not": "a manifest"}\n'
    with fresh(pg_server) as a, fresh(pg_server) as b:
        result = sync_tree(a, repository=REPO, source=MemorySource(files), bulk=True)
        assert result.bulk and not result.ok and PETITION not in result.loaded
        a.commit()
        result = sync_tree(b, repository=REPO, source=MemorySource(files), bulk=False)
        b.commit()
        got = state(a)
        assert got == state(b) and got["orphans"] == (0,)
        assert all(f != PETITION for _, _, f, *_ in got["chapters"])
        # the setting never outlives the load
        assert a.execute("SELECT glossator_bulk_loading()").fetchone() == (False,)


def two_files(source: MemorySource) -> MemorySource:
    """A small book: the example's petition and the summaries above it (its parents)."""
    keep: set[str] = set()
    path: str | None = PETITION
    while path:
        keep |= {path, path + ".jsonl"}
        manifest = json.loads(source.files[path + ".jsonl"].splitlines()[0])
        path = manifest.get("parent_source_file")
    return MemorySource({k: v for k, v in source.files.items() if k in keep})


def test_term_tables_rebuilt_beside_another_repository_equal_incremental_ones(pg_server) -> None:
    """A bulk load of a branch holding at least half the rows builds new term tables
    (migration 024): the other repository's entries are kept exactly, this one's are
    those an incremental load writes."""
    with fresh(pg_server) as a, fresh(pg_server) as b:
        assert not load_result(a, example(), False, "autre").rebuilt
        first = load_result(a, example(), None)  # as many rows as "autre": rebuilt
        assert first.bulk and first.rebuilt
        load(b, example(), False, "autre")
        load(b, example(), False)
        assert state(a) == state(b)
        # a model change of the same branch: rebuilt again, the same as loading it afresh
        other_model = example_source(EXAMPLE_DIR, model="fake/hash-16", dimension=16)
        assert load_result(a, other_model, None).rebuilt
    with fresh(pg_server) as c:
        load(c, example(), False, "autre")
        load(c, other_model, False)
        with fresh(pg_server) as a2:
            load(a2, example(), False, "autre")
            load(a2, example(), None)
            load(a2, other_model, None)
            assert state(a2) == state(c)


def test_a_small_book_beside_a_library_is_bulk_without_a_rebuild(pg_server) -> None:
    small = two_files(example())
    with fresh(pg_server) as a, fresh(pg_server) as b:
        load(a, example(), None, "bibliotheque")
        result = load_result(a, small, None)  # a first load: bulk, but the others weigh more
        assert result.bulk and not result.rebuilt and len(result.loaded) >= 2
        load(b, example(), False, "bibliotheque")
        load(b, small, False)
        assert state(a) == state(b)


def test_a_writer_waits_for_a_rebuild_and_loses_nothing(pg_server) -> None:
    """Another branch's load during a rebuild waits for its commit (the SHARE lock),
    then writes into the new tables: none of its entries is lost with the old ones."""
    small = two_files(example())
    with fresh(pg_server) as a:
        name = a.info.dbname
        a.execute("SELECT 1")  # a transaction open: the load's is a savepoint in it
        result = sync_tree(a, repository=REPO, source=example(), bulk=None)
        assert result.rebuilt  # not committed yet: the tables are locked
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                with psycopg.connect(pg_server.url(name)) as w:
                    configure_connection(w)
                    load(w, small, False, "autre")
            except BaseException as e:  # reported by the assertion below
                errors.append(e)

        thread = threading.Thread(target=writer)
        thread.start()
        wait_until_blocked(a, name, thread, errors)
        a.commit()
        thread.join(120)
        assert not thread.is_alive() and not errors, errors
        got = state(a)
    with fresh(pg_server) as b:
        load(b, example(), False)
        load(b, small, False, "autre")
        assert got == state(b)


def wait_until_blocked(
    conn: psycopg.Connection, dbname: str, thread: threading.Thread, errors: list[BaseException]
) -> None:
    """Until a session of `dbname` waits for a lock (a condition, not a timer); fails at
    once if `thread`, the session expected to wait, ended instead."""
    deadline = time.monotonic() + 120
    while not waiting_for_a_lock(conn, dbname):
        assert thread.is_alive() and time.monotonic() < deadline, errors
        time.sleep(0.05)


def waiting_for_a_lock(conn: psycopg.Connection, dbname: str) -> bool:
    with psycopg.connect(conn.info.dsn, autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE NOT l.granted AND a.datname = %s",
            (dbname,),
        ).fetchone()
    return bool(row and row[0])


def test_two_rebuilds_at_once_one_gives_way(pg_server) -> None:
    """Two bulk loads that each hold half the rows, at once: each has written into the
    term tables, each wants them shared. PostgreSQL breaks the deadlock; the load it
    picks inserts its entries instead of rebuilding, and both end with every entry.
    Deterministic: the other session's deadlock_timeout is an hour, so this load's
    check is the one that finds the cycle."""
    other_model = example_source(EXAMPLE_DIR, model="fake/hash-16", dimension=16)
    small = two_files(example())  # the model y has: no model registered by both at once
    with fresh(pg_server) as a:
        name = a.info.dbname
        known_model(a, other_model)
        load(a, example(), False, "x")
        load(a, example(), False, "y")
        with psycopg.connect(pg_server.url(name)) as b:
            configure_connection(b)
            b.execute("SET deadlock_timeout = '1h'")
            # b loads a small book into z, writing into the term tables, and keeps its
            # transaction open
            sync_files(
                b, repository="z", branch="main", source=small, changed=sorted(small.paths()),
                deleted=[], bulk=True, rebuild=False,
            )  # fmt: skip
            errors: list[BaseException] = []

            def rebuild_y() -> None:
                try:
                    b.execute("SELECT glossator_bulk_rebuild('z', 'main')")
                except BaseException as e:  # reported by the assertion below
                    errors.append(e)

            thread = threading.Thread(target=rebuild_y)
            total = len([p for p in other_model.paths() if p.endswith(".md.jsonl")])
            done = 0

            def progress(path: str) -> None:
                # after x's last file: x holds the tables for writing; b starts its
                # rebuild and waits for x; x then asks for them shared: the cycle
                nonlocal done
                done += 1
                if done == total:
                    thread.start()
                    wait_until_blocked(a, name, thread, errors)

            result = sync_tree(
                a, repository="x", source=other_model, progress=progress, rebuild=True
            )
            assert result.ok and result.bulk and not result.rebuilt  # asked to rebuild: gave way
            a.commit()
            thread.join(120)
            assert not thread.is_alive() and not errors, errors
            b.commit()
        got = state(a)
    with fresh(pg_server) as c:
        known_model(c, other_model)
        load(c, other_model, False, "x")
        load(c, example(), False, "y")
        sync_files(
            c, repository="z", branch="main", source=small, changed=sorted(small.paths()),
            deleted=[], bulk=False,
        )  # fmt: skip
        c.commit()
        assert got == state(c)


def known_model(conn: psycopg.Connection, source: MemorySource) -> None:
    """The source's model registered with its vector index, and no row left: a later
    load of it builds no index (CREATE INDEX would wait for other writers too)."""
    load(conn, source, False, "w")
    conn.execute("DELETE FROM hierarchical_content_nodes WHERE repository = 'w'")
    conn.execute("DELETE FROM loaded_files WHERE repository = 'w'")
    conn.commit()


def test_bulk_statements_plan_without_nested_loops(pg_server) -> None:
    """A bulk load's rows are not in the statistics yet: planned as one row, the
    chapter terms' join was a nested loop over the branch's chapters per paragraph
    (hours at 10^6 rows, bench/load.py). Both ways of writing the entries forbid it."""
    with fresh(pg_server) as conn:
        config = dict(
            conn.execute(
                "SELECT proname, proconfig FROM pg_proc"
                " WHERE proname IN ('glossator_bulk_rebuild', 'glossator_bulk_index')"
            ).fetchall()
        )
    assert set(config) == {"glossator_bulk_rebuild", "glossator_bulk_index"}
    assert all("enable_nestloop=off" in (c or []) for c in config.values()), config
