"""store.keyword: the keyword backend each server gets, on the example corpus.

pg_search where the server has it, else PostgreSQL's own text search (store.fts,
whose scores tests/test_store_fts.py also checks exactly against Okapi BM25 computed
in Python: `reference_bm25` here). The SQL BM25 over term tables that these tests
covered until migration 034 is retired (issue 24).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest

from store.bm25 import filter_sql, query_lexemes
from store.fts import FtsBackend
from store.keyword import choose_backend
from store.pgsearch import PgSearchBackend
from store.tree import sync_tree
from tests.store_sidecars import (
    PETITION,
    clone,
    example,
    load_template,
    okapi_bm25,
    sidecar_for,
)

REPO = "bastiat"
QUERIES = (
    "chandelles soleil lumière",
    "la balance du commerce",
    "travail national protection douane",
    "abondance disette",
    "le fer et la houille des mines",
)

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")


@pytest.fixture(scope="module")
def template(pg_server) -> Iterator[str]:
    name = load_template(pg_server, REPO)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def db(pg_server, template: str) -> Iterator[psycopg.Connection]:
    with clone(pg_server, template) as c:
        yield c


def files_of(conn: psycopg.Connection, hits: list[tuple[int, float]]) -> list[str]:
    rows = dict(
        conn.execute(
            "SELECT id, source_file FROM hierarchical_content_nodes WHERE id = ANY(%s)",
            ([i for i, _ in hits],),
        ).fetchall()
    )
    return [rows[i] for i, _ in hits]


def keyed(conn: psycopg.Connection, hits: list[tuple[int, float]]) -> list[tuple[str, int, float]]:
    rows = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT id, source_file, chunk_index FROM hierarchical_content_nodes WHERE id = ANY(%s)",
            ([i for i, _ in hits],),
        )
    }
    return [(*rows[i], round(s, 9)) for i, s in hits]


def lexemes(conn: psycopg.Connection, text: str, repository: str = REPO) -> list[str]:
    """The terms a query is searched for on the branch (store.keyword.query_lexemes)."""
    return query_lexemes(conn, text, repository=repository)


def test_finds_the_candle_makers_petition(db: psycopg.Connection, pg_server) -> None:
    bm25 = choose_backend(db)
    hits = bm25.search(db, "chandelles soleil lumière", repository=REPO, filters={"level": 0}, k=5)
    files = files_of(db, hits)
    # the petition holds most of the best paragraphs; a short line of « Le petit arsenal »
    # (« Le soleil donne sa chaleur et sa lumière… ») may come first, as BM25 wants
    assert PETITION in files[:2] and Counter(files).most_common(1)[0][0] == PETITION
    two = bm25.search(db, "chandelles soleil", repository=REPO, filters={"level": 0}, k=1)
    assert files_of(db, two) == [PETITION]
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    everything = bm25.search(db, "chandelles soleil lumière", repository=REPO, k=5)
    assert PETITION in files_of(db, everything)[:3]
    # unaccented and inflected forms find the same rows (unaccent + french stemmer)
    assert (
        bm25.search(db, "CHANDELLE Soleils lumiere", repository=REPO, filters={"level": 0}, k=5)
        == hits
    )
    # filters narrow the results, never the statistics: the same row keeps its score
    # (on pg_search a filter clause adds its own score, the same to every row it keeps)
    if pg_server.backend == "pg_search":
        return
    by_id = dict(everything)
    assert all(by_id[i] == pytest.approx(s, abs=1e-12) for i, s in hits if i in by_id)


def reference_bm25(conn: psycopg.Connection, query: str, k: int) -> list[tuple[int, float]]:
    """Okapi BM25 computed in Python from the rows' lexemes: an independent check."""
    terms = set(lexemes(conn, query))
    docs: dict[int, Counter[str]] = {}
    for id_, lexeme, tf in conn.execute(
        "SELECT h.id, u.lexeme, cardinality(u.positions) FROM hierarchical_content_nodes h,"
        " unnest(h.tsv) u WHERE h.repository = %s AND h.branch = 'main'",
        (REPO,),
    ):
        docs.setdefault(id_, Counter())[lexeme] = tf
    for id_ in (
        r[0]
        for r in conn.execute(
            "SELECT id FROM hierarchical_content_nodes WHERE repository = %s", (REPO,)
        )
    ):
        docs.setdefault(id_, Counter())
    scores = okapi_bm25(docs, terms)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]


@pytest.mark.parametrize("query", QUERIES[:3])
def test_scores_are_okapi_bm25(db: psycopg.Connection, query: str, pg_server) -> None:
    got = choose_backend(db).search(db, query, repository=REPO, k=10)
    want = reference_bm25(db, query, 10)
    if pg_server.backend == "pg_search":
        # Tantivy's BM25, one repository in the index: the same N, avgdl and terms, but
        # document lengths kept in one byte and the filter clauses' scores added (one
        # constant a query): mostly the same top 10
        assert len({i for i, _ in got} & {i for i, _ in want}) >= 8
        return
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_partial_reload_scores_equal_full_rebuild(db: psycopg.Connection, pg_server) -> None:
    source = example()
    # an edited chapter (more about candles), a deleted one, a new one
    chapter = PETITION.replace("chapitre-07", "chapitre-07").replace("source.md", "summary.md")
    text = "Les chandelles et le soleil : une concurrence déloyale de la lumière.\n\nFin.\n"
    source.files[chapter] = text.encode()
    source.files[chapter + ".jsonl"] = sidecar_for(
        chapter,
        text,
        heading_path="résumé",
        parent="corpus/sophismes-economiques/serie-1-premiere-serie/summary.md",
        level=1,
        node_type="section_summary",
    )
    gone = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-06-balance-du-commerce/source.md"
    del source.files[gone], source.files[gone + ".jsonl"]
    partial = sync_tree(db, repository=REPO, branch="main", source=source)
    assert partial.ok and partial.loaded == [chapter] and partial.deleted == [gone]
    full = sync_tree(db, repository=REPO, branch="rebuild", source=source)
    assert full.ok and len(full.loaded) == 84
    db.commit()
    bm25 = choose_backend(db)
    for query in QUERIES:
        a = keyed(db, bm25.search(db, query, repository=REPO, branch="main", k=20))
        b = keyed(db, bm25.search(db, query, repository=REPO, branch="rebuild", k=20))
        if pg_server.backend == "pg_search":
            # its statistics are the whole index's (both branches, the replaced rows until
            # a merge) and each branch's clause scores apart: the same rows, mostly
            assert len({r[:2] for r in a} & {r[:2] for r in b}) >= 16, query
            continue
        assert a == b and a, query
    stats = db.execute(
        "SELECT branch, n_docs, total_len FROM branch_languages WHERE repository = %s"
        " ORDER BY branch",
        (REPO,),
    ).fetchall()
    assert stats[0][1:] == stats[1][1:]


def test_query_text_is_never_syntax(db: psycopg.Connection) -> None:
    bm25 = choose_backend(db)
    plain = bm25.search(db, "chandelles soleil", repository=REPO, k=5)
    for noisy in (
        "« chandelles » & | ! (soleil) :* <-> 'chandelles'",
        'chandelles\\ "soleil" --',
    ):
        assert bm25.search(db, noisy, repository=REPO, k=5) == plain, noisy
    bm25.search(db, "chandelles'); DROP TABLE branch_languages; --", repository=REPO)
    assert db.execute("SELECT count(*) FROM branch_languages").fetchone()[0] == 1
    assert bm25.search(db, "le la les de du à été était a", repository=REPO) == []  # stop words
    assert lexemes(db, "À l’été, les Chandelles") == ["chandel"]
    assert bm25.search(db, "   ", repository=REPO) == []
    assert bm25.search(db, "chandelles", repository="nobody") == []
    # a lexeme holding quote and backslash characters survives tsquery quoting
    assert bm25.search(db, "http://x.org/a'b\\c", repository=REPO) == []
    with pytest.raises(ValueError, match="unknown filter"):
        filter_sql({"content": "x"})


async def test_async_search_matches_sync(db: psycopg.Connection, pg_server) -> None:
    url = db.info.dsn
    backend = choose_backend(db)
    want = backend.search(db, "chandelles soleil", repository=REPO, k=5)
    async with await psycopg.AsyncConnection.connect(url) as aconn:
        got = await backend.asearch(aconn, "chandelles soleil", repository=REPO, k=5)
    assert got == want


def test_choose_backend_is_pg_search_where_its_index_is(db: psycopg.Connection, pg_server) -> None:
    # a plain PostgreSQL is the fallback's, never anything else (tests/plugins/db.py)
    expected = PgSearchBackend if pg_server.backend == "pg_search" else FtsBackend
    assert type(choose_backend(db)) is expected
