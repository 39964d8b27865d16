"""store.fts: keyword search on PostgreSQL's own text search, for a server without pg_search.

Runs on the `postgres` test backend: the embedded PostgreSQL 18, which has no
pg_search at all (tests/plugins/db.py), as a managed service would not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from glossator.checks import run
from glossator.cli import main
from search.retrieval import Filters, keyword
from store import fts
from store.bm25 import query_lexemes
from store.db import Database, DatabaseConfig
from store.fts import FtsBackend
from store.keyword import choose_backend
from store.phrases import phrase_rows, quoted_segments
from store.tree import sync_tree
from tests.store_sidecars import PETITION, clone, load_template
from tests.test_store_bm25 import QUERIES, files_of, reference_bm25
from tests.test_store_languages import _repo

REPO = "bastiat"

# the fallback's own server, whatever the suite's default backend
pytestmark = pytest.mark.pg_backends("postgres")


@pytest.fixture(scope="module")
def template(pg_server) -> Iterator[str]:
    name = load_template(pg_server, REPO)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def db(pg_server, template: str) -> Iterator[psycopg.Connection]:
    with clone(pg_server, template) as c:
        fts.enable(c)
        c.commit()
        yield c


def test_the_server_has_no_pg_search(db: psycopg.Connection) -> None:
    # what this file is about: the fallback is measured where pg_search cannot be
    assert db.execute(
        "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_search'"
    ).fetchone() == (0,)


def test_chosen_where_its_index_is(db: psycopg.Connection, pg_server, template: str) -> None:
    assert type(choose_backend(db)) is FtsBackend
    assert choose_backend(db).name == "postgres-fts"
    assert fts.enable(db) is False  # already there
    with clone(pg_server, template) as plain:  # without the GIN index: still the fallback
        plain.execute(f"DROP INDEX {fts.INDEX_NAME}")
        chosen = choose_backend(plain)
        assert type(chosen) is FtsBackend and not chosen.indexed  # type: ignore[attr-defined]
        assert f"{fts.INDEX_NAME} is missing" in chosen.caveat
        # the same ranking, by a scan of the branch's rows
        query = "chandelles soleil"
        assert chosen.search(plain, query, repository=REPO, k=10) == FtsBackend().search(
            db, query, repository=REPO, k=10
        )


@pytest.mark.parametrize("query", QUERIES)
def test_scores_are_okapi_bm25(db: psycopg.Connection, query: str) -> None:
    got = FtsBackend().search(db, query, repository=REPO, k=10)
    want = reference_bm25(db, query, 10)
    assert got and [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_filters_narrow_results_not_statistics(db: psycopg.Connection) -> None:
    backend = FtsBackend()
    everything = dict(backend.search(db, "chandelles soleil lumière", repository=REPO, k=500))
    hits = backend.search(
        db, "chandelles soleil lumière", repository=REPO, filters={"level": 0}, k=5
    )
    assert PETITION in files_of(db, hits)[:2]  # as for pg_search (test_store_bm25)
    levels = db.execute(
        "SELECT DISTINCT level FROM hierarchical_content_nodes WHERE id = ANY(%s)",
        ([i for i, _ in hits],),
    ).fetchall()
    assert levels == [(0,)]
    assert all(everything[i] == pytest.approx(s, abs=1e-12) for i, s in hits)


def test_matches_through_the_gin_index(db: psycopg.Connection) -> None:
    lexemes = query_lexemes(db, "chandelles soleil", repository=REPO)
    found = FtsBackend().statements([(lexemes, REPO, "main")], k=10)[0]
    assert found is not None and isinstance(found.query, sql.Composed)
    stmt, params = found.query, found.params
    # the example is small (one branch: every row): a scan of the branch by its btree
    # wins there, so the btrees go for this transaction (rolled back below)
    db.execute("SET LOCAL enable_seqscan = off")
    db.execute("DROP INDEX hcn_filters, hcn_parent")
    db.execute("ALTER TABLE hierarchical_content_nodes DROP CONSTRAINT hcn_unique_chunk")
    plan = "\n".join(r[0] for r in db.execute(b"EXPLAIN " + stmt.as_bytes(db), params))
    assert f"Bitmap Index Scan on {fts.INDEX_NAME}" in plan
    db.rollback()


def test_query_text_is_never_syntax(db: psycopg.Connection) -> None:
    backend = FtsBackend()
    plain = backend.search(db, "chandelles soleil", repository=REPO, k=5)
    assert plain
    for noisy in ("« chandelles » & | ! (soleil) :* <-> 'chandelles'", 'chandelles\\ "soleil" --'):
        assert backend.search(db, noisy, repository=REPO, k=5) == plain, noisy
    assert backend.search(db, "le la les de du à été était a", repository=REPO) == []
    assert backend.search(db, "   ", repository=REPO) == []
    assert backend.search(db, "chandelles", repository="nobody") == []
    assert backend.search(db, "http://x.org/a'b\\c", repository=REPO) == []


def test_phrases_are_found_among_its_hits(db: psycopg.Connection) -> None:
    question = "« Ôte-toi de mon soleil »"
    segments = quoted_segments(question)
    hits = FtsBackend().search(db, question, repository=REPO, k=50)
    assert hits
    held = phrase_rows(db, segments, [i for i, _ in hits])
    assert held  # Diogène's words are in the example
    for (content,) in db.execute(
        "SELECT content FROM hierarchical_content_nodes WHERE id = ANY(%s)", (held,)
    ):
        assert "te-toi de mon soleil" in content.replace("’", "'").lower()
    # the words in another order are not the phrase
    assert phrase_rows(db, ["soleil mon de ôte-toi"], [i for i, _ in hits]) == []


@pytest.mark.parametrize(
    ("lang", "paragraphs", "query", "expected"),
    [
        ("en", ["The sailors were running to the harbours.", "A quiet field."], "harbour run", 0),
        ("de", ["Die Häuser der Städte.", "Ein stiller Wald."], "Haus Stadt", 0),
        ("es", ["Las canciones del mar.", "Un campo tranquilo."], "canción", 0),
        ("it", ["Le città della pianura.", "Un campo tranquillo."], "citta pianure", 0),
    ],
)
def test_each_language_stems_its_own_words(
    db: psycopg.Connection, lang: str, paragraphs: list[str], query: str, expected: int
) -> None:
    repo = f"book-{lang}"
    assert sync_tree(db, repository=repo, source=_repo("w", "W", lang, paragraphs)).ok
    db.commit()
    hits = FtsBackend().search(db, query, repository=repo, filters={"level": 0}, k=5)
    assert len(hits) == 1, (lang, hits)
    (content,) = db.execute(
        "SELECT content FROM hierarchical_content_nodes WHERE id = %s", (hits[0][0],)
    ).fetchone()
    assert content == paragraphs[expected]
    # search itself, through the catalogue of languages, ranks with this backend too
    found = keyword(db, query, Filters(repository=repo, branch="main"), 5)
    assert [i for i, _ in found][:1] == [hits[0][0]]


def test_database_start_makes_it_when_asked(pg_server, tmp_path: Path) -> None:
    name = pg_server.create_database()
    try:
        config = DatabaseConfig(tmp_path, pg_server.url(name), keyword_backend="fts")
        with Database(config) as database, database.connect() as conn:
            assert type(choose_backend(conn)) is FtsBackend
    finally:
        pg_server.drop_database(name)


def test_db_status_says_which_backend_and_what_it_costs(db_url: str, tmp_path: Path) -> None:
    env = {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_KEYWORD_BACKEND": "fts",
    }
    runner = CliRunner()
    text = runner.invoke(main, ["db", "status"], env=env)
    assert text.exit_code == 0, text.output + text.stderr
    line = next(x for x in text.output.splitlines() if x.startswith("keyword:"))
    assert "postgres-fts" in line and "no pg_search" in line and "slower" in line
    as_json = runner.invoke(main, ["db", "status", "--json"], env=env)
    data = json.loads(as_json.output)
    assert data["keyword_backend"] == "postgres-fts"
    assert data["keyword_caveat"] == fts.CAVEAT


def test_db_status_on_a_plain_postgresql_is_the_fallback(db_url: str, tmp_path: Path) -> None:
    # the default GLOSSATOR_KEYWORD_BACKEND (pg_search) on a server without it: the
    # fallback, its index made at start, said so, never a wrong engine
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {fts.INDEX_NAME}")
    env = {"GLOSSATOR_DATABASE_URL": db_url, "GLOSSATOR_DATA_DIR": str(tmp_path / "data")}
    data = json.loads(CliRunner().invoke(main, ["db", "status", "--json"], env=env).output)
    assert data["keyword_backend"] == "postgres-fts"
    assert data["keyword_caveat"] == fts.CAVEAT  # the index is there again
    with psycopg.connect(db_url) as conn:
        assert fts.index_exists(conn)


@pytest.mark.parametrize("value", ["sql", "postgres"])
def test_the_retired_sql_bm25_setting_is_a_notice(db_url: str, tmp_path: Path, value) -> None:
    env = {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_KEYWORD_BACKEND": value,
    }
    result = CliRunner().invoke(main, ["db", "status", "--json"], env=env)
    assert result.exit_code == 0, result.output + result.stderr
    assert "SQL BM25 was retired" in result.stderr and "postgres-fts" in result.stderr
    assert json.loads(result.stdout)["keyword_backend"] == "postgres-fts"


def test_doctor_says_the_fallback_and_its_cost(db_settings, db_url: str, tmp_path: Path) -> None:
    settings = db_settings.replace(repos_dir=tmp_path / "repos", embedder="fake")
    keyword_search = {f.check: f for f in run(settings)}["keyword search"]
    assert keyword_search.status == "warn"
    assert keyword_search.detail == f"postgres-fts: {fts.CAVEAT}"
    assert "pg_search" in keyword_search.fix
