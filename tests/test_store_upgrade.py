"""Migration 034 on a database with data in it: the term tables retired, search unchanged.

A database is migrated to version 33 (the SQL BM25's term tables, their triggers),
the example's real sidecars loaded into it (the rows COPYed and recorded as the
loader of that schema did; the triggers of 002/011/012 filled the term tables),
then migrated to 34. Its catalogue and chapter documents must be what the loader
writes on a database made at 34 from the same sidecars, nothing of the old engine
may remain, and searching both gives the same hits, on both backends.
"""

from __future__ import annotations

import psycopg
import pytest

from indexer.corpus.sidecar_format import loads
from search import SearchOptions, search
from search.options import QueryVector
from store import catalogue, fts, migrations
from store.chapters import ChapterScope, chapter_evidence
from store.db import configure_connection
from store.keyword import choose_backend
from store.loader import _copy_rows, sidecar_digest, sidecar_path
from store.pgsearch import enable_if_available
from store.tree import sync_tree
from tests.fakes import hashed_vector
from tests.store_sidecars import DIM, MODEL, example
from tests.test_store_chapters import QUERIES  # the chapter tests' questions

pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

REPO = "bastiat"
OLD_TABLES = ("bm25_corpus", "bm25_row_terms", "bm25_chapters", "bm25_chapter_terms")


def _load_at_033(conn: psycopg.Connection) -> int:
    """The example's sidecars into a version-33 schema: each file's rows COPYed and its
    loaded_files record, in one transaction (the term tables follow by their triggers)."""
    source = example()
    rows = 0
    with conn.transaction():
        for path in sorted(p for p in source.paths() if p.endswith(".md")):
            data = source.read(sidecar_path(path))
            sidecar = loads(sidecar_path(path), data)
            n = _copy_rows(conn, REPO, "main", path, sidecar)
            m = sidecar.manifest
            conn.execute(
                "INSERT INTO loaded_files (repository, branch, source_file, source_file_hash,"
                " sidecar_hash, embedding_model, chunk_count) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    REPO,
                    "main",
                    path,
                    m.source_file_hash,
                    sidecar_digest(data),
                    m.embedding_model,
                    n,
                ),
            )
            rows += n
    return rows


def _setup_backend(conn: psycopg.Connection, backend: str) -> None:
    if backend == "pg_search":
        assert enable_if_available(conn)
    else:
        fts.enable(conn)


def _hits(conn: psycopg.Connection) -> dict[str, list]:
    """Each query's keyword hits (file, chunk, score), chapter ranking, and search's
    answers in bm25 and hybrid mode (the sidecars' fake vectors: the same for the query)."""
    conn.autocommit = False
    backend = choose_backend(conn)
    out: dict[str, list] = {}
    for q in QUERIES:
        hits = backend.search(conn, q, repository=REPO, k=20)
        where = dict(
            (i, (f, c))
            for i, f, c in conn.execute(
                "SELECT id, source_file, chunk_index FROM hierarchical_content_nodes"
                " WHERE id = ANY(%s)",
                ([i for i, _ in hits],),
            )
        )
        out[q] = [(*where[i], round(s, 4)) for i, s in hits]
        chapters = chapter_evidence(conn, q, ChapterScope(REPO, depth=10)).keyword
        out["chapters " + q] = [(c, round(s, 4)) for c, s in chapters]
        for mode in ("bm25", "hybrid"):
            answer = search(
                conn,
                q,
                SearchOptions(mode=mode, repository=REPO),
                query_vector=QueryVector(MODEL, DIM, hashed_vector(q, DIM)),
            )
            out[f"{mode} {q}"] = [
                (h.citation.source_file, h.citation.chunk_index) for h in answer.hits
            ]
    conn.rollback()
    conn.autocommit = True
    return out


def test_migration_034_on_a_loaded_database_keeps_search_the_same(pg_server) -> None:
    names = [pg_server.create_database(template="template0") for _ in range(2)]
    try:
        with (
            psycopg.connect(pg_server.url(names[0]), autocommit=True) as old,
            psycopg.connect(pg_server.url(names[1]), autocommit=True) as new,
        ):
            # a database of the previous schema, loaded: the term tables hold the rows
            migrations.migrate(old, upto=33)
            configure_connection(old)  # pgvector's types, there once migration 001 ran
            if pg_server.backend == "pg_search":  # its index as version 33 made it
                old.execute("CREATE EXTENSION IF NOT EXISTS pg_search")
                old.execute(
                    "CREATE INDEX hcn_bm25 ON hierarchical_content_nodes USING bm25"
                    " (id, (glossator_lexeme_text(tsv)::pdb.whitespace('alias=lexemes')),"
                    " (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),"
                    " (node_type::pdb.literal), level)"
                    " WITH (key_field = 'id', mutable_segment_rows = 0)"
                )
            else:  # the fallback's, as Database.start() made it at 33 with =fts
                fts.enable(old)
            rows = _load_at_033(old)
            assert rows > 1900
            (n_docs, total) = old.execute(
                "SELECT n_docs, total_len FROM bm25_corpus WHERE repository = %s", (REPO,)
            ).fetchone()
            assert n_docs == rows
            assert old.execute("SELECT count(*) FROM bm25_row_terms").fetchone()[0] > 10_000
            # the upgrade
            assert migrations.migrate(old, upto=34) == ["034_retire_term_tables.sql"]
            chapter_index = old.execute(
                "SELECT to_regclass('chapter_documents_bm25') IS NOT NULL"
            ).fetchone()
            assert chapter_index == (pg_server.backend == "pg_search",)  # built by 034
            _setup_backend(old, pg_server.backend)
            assert choose_backend(old).name == (
                "pg_search" if pg_server.backend == "pg_search" else "postgres-fts"
            )
            # the old engine is gone: tables, triggers, functions, the bulk setting's
            for table in OLD_TABLES:
                assert old.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)
            triggers = [
                r[0]
                for r in old.execute(
                    "SELECT tgname FROM pg_trigger"
                    " WHERE tgrelid = 'hierarchical_content_nodes'::regclass AND NOT tgisinternal"
                )
            ]
            assert triggers == ["hcn_text_search"]
            assert not old.execute(
                "SELECT proname FROM pg_proc WHERE proname ~ '^(bm25_(corpus|chapters|row_terms)"
                "|glossator_bulk)'"
            ).fetchall()
            # the catalogue has bm25_corpus's figures
            assert catalogue.branch_languages(old) == [
                (REPO, "main", "glossator_fr", n_docs, total)
            ]

            # the same sidecars through today's loader, on a database made at 34
            migrations.migrate(new)
            configure_connection(new)
            _setup_backend(new, pg_server.backend)
            new.autocommit = False
            assert sync_tree(new, repository=REPO, source=example()).ok
            new.commit()
            new.autocommit = True

            assert catalogue.branch_languages(old) == catalogue.branch_languages(new)
            chapters = (
                "SELECT source_file, work, lexemes, doc_len, n_rows FROM chapter_documents"
                " ORDER BY source_file"
            )
            assert old.execute(chapters).fetchall() == new.execute(chapters).fetchall()
            assert len(old.execute(chapters).fetchall()) > 40
            # the later migrations, as the server applies them at start-up: search reads
            # their tables too (vector_coverage, 041)
            migrations.migrate(old)
            found = _hits(old)
            assert all(found[q] for q in QUERIES)
            assert found == _hits(new)
            # and the upgraded database keeps loading: a reload after the upgrade
            old.autocommit = False
            again = sync_tree(old, repository=REPO, source=example())
            old.commit()
            old.autocommit = True
            # the files loaded at 33 with the sidecars' digests are unchanged
            assert again.ok and again.loaded == [] and len(again.skipped) == 85
    finally:
        for name in names:
            pg_server.drop_database(name)
