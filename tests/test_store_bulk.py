"""Bulk loads (store.loader, migration 013) against incremental ones: the same entries in
every derived table, the same BM25 scores, exactly, on the example corpus."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from indexer.source import MemorySource
from store.chapters import chapter_evidence
from store.db import configure_connection
from store.keyword import SqlBm25
from store.loader import sync_files, sync_tree
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
        "SELECT c.source_file, t.lexeme, t.tf FROM bm25_chapter_terms t"
        " JOIN bm25_chapters c ON c.id = t.chapter_id ORDER BY 1, 2"
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


def load(conn: psycopg.Connection, source: MemorySource, bulk: bool | None) -> bool:
    result = sync_tree(conn, repository=REPO, source=source, bulk=bulk)
    assert result.ok, result.problems
    conn.commit()
    return result.bulk


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
