"""store.chapters: chapter-level BM25 and summary cosines, against references in Python."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from store import catalogue
from store.chapters import ChapterScope, chapter_evidence
from store.tree import sync_tree
from tests.store_sidecars import (
    DIM,
    MODEL,
    PETITION,
    clone,
    example,
    load_template,
    okapi_bm25,
)
from tests.test_store_bm25 import lexemes

REPO = "bastiat"
QUERIES = (
    "chandelles soleil lumière",
    "la balance du commerce",
    "travail national protection douane",
    "pourquoi la disette n'enrichit pas un pays",
)

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")
CHAPTER = PETITION.rsplit("/", 1)[0]


@pytest.fixture(scope="module")
def template(pg_server) -> Iterator[str]:
    name = load_template(pg_server, REPO)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def db(pg_server, template: str) -> Iterator[psycopg.Connection]:
    with clone(pg_server, template) as c:
        yield c


def reference(
    conn: psycopg.Connection, query: str, branch: str = "main"
) -> list[tuple[str, float]]:
    """Okapi BM25 with each source file's paragraphs (level 0) as one document, computed
    in Python from the rows' own tsvectors: independent of chapter_documents."""
    terms = set(lexemes(conn, query))
    docs: dict[str, Counter[str]] = {}
    for file, lexeme, tf in conn.execute(
        "SELECT h.source_file, u.lexeme, cardinality(u.positions) FROM hierarchical_content_nodes h,"
        " unnest(h.tsv) u WHERE h.repository = %s AND h.branch = %s AND h.level = 0",
        (REPO, branch),
    ):
        docs.setdefault(file, Counter())[lexeme] += tf
    for (file,) in conn.execute(
        "SELECT DISTINCT source_file FROM hierarchical_content_nodes"
        " WHERE repository = %s AND branch = %s AND level = 0",
        (REPO, branch),
    ):
        docs.setdefault(file, Counter())
    scores = {f.rsplit("/", 1)[0]: v for f, v in okapi_bm25(docs, terms).items()}
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


def evidence(conn: psycopg.Connection, query: str, **kw) -> list[tuple[str, float]]:
    engine = kw.pop("engine", None)
    return chapter_evidence(conn, query, ChapterScope(REPO, depth=20, **kw), engine=engine).keyword


def close_to(got: list[tuple[str, float]], want: list[tuple[str, float]], exact: bool) -> None:
    """Exact for PostgreSQL's text search (store.fts). For pg_search the same chapter
    first and mostly the same top 10, not the scores: Tantivy keeps a document's length
    in one byte, and its scores add those of the repository and branch clauses (one
    constant a query: ParadeDB's design, the rows' index has it too)."""
    if exact:
        want = want[:20]  # evidence() asks for 20
        assert got and [c for c, _ in got] == [c for c, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)
        return
    assert got and got[0][0] == want[0][0]
    assert len({c for c, _ in got[:10]} & {c for c, _ in want[:10]}) >= 8


@pytest.mark.parametrize("query", QUERIES)
def test_chapter_scores_are_okapi_bm25_over_whole_chapters(
    db: psycopg.Connection, query: str, pg_server
) -> None:
    got = evidence(db, query)
    want = reference(db, query)
    close_to(got, want, exact=pg_server.backend != "pg_search")
    # the fallback's query works on any server with the schema, pg_search's too: exact
    close_to(evidence(db, query, engine="postgres-fts"), want, exact=True)


def test_the_petition_is_the_candle_chapter(db: psycopg.Connection, pg_server) -> None:
    assert evidence(db, "chandelles soleil lumière")[0][0] == CHAPTER
    # the work filter narrows the chapters, never the statistics
    assert evidence(db, "chandelles soleil", work="no-such-work") == []
    narrowed = evidence(db, "chandelles soleil", work="sophismes-economiques")
    if pg_server.backend == "pg_search":  # the work clause adds its score (close_to)
        assert [c for c, _ in narrowed] == [c for c, _ in evidence(db, "chandelles soleil")]
    else:
        assert narrowed == evidence(db, "chandelles soleil")
    # words the corpus lacks, stop words only, punctuation: no chapter, no error
    assert evidence(db, "kubernetes") == evidence(db, "le la les") == evidence(db, "«»?!") == []


def test_summary_cosines_are_exact_over_every_chapter_summary(db: psycopg.Connection) -> None:
    rows = db.execute(
        "SELECT source_file, embedding FROM hierarchical_content_nodes"
        " WHERE repository = %s AND level = 1 AND embedding_model = %s",
        (REPO, MODEL),
    ).fetchall()
    assert len(rows) > 20
    rows = [(f, np.asarray(v.to_numpy(), dtype=np.float32)) for f, v in rows]
    q = rows[3][1]  # a summary's own vector as the query
    found = chapter_evidence(
        db, "chandelles", ChapterScope(REPO, depth=5), q, model=MODEL, dimension=DIM
    )
    want = sorted(
        (
            (f.rsplit("/", 1)[0], float(np.dot(v, q) / np.linalg.norm(v) / np.linalg.norm(q)))
            for f, v in rows
        ),
        key=lambda x: (-x[1], x[0]),
    )[:5]
    assert [c for c, _ in found.summary] == [c for c, _ in want]
    assert found.summary[0] == (rows[3][0].rsplit("/", 1)[0], pytest.approx(1.0, abs=1e-5))
    assert [s for _, s in found.summary] == pytest.approx([s for _, s in want], abs=1e-5)
    with pytest.raises(ValueError, match="dimensions"):
        chapter_evidence(db, "x", ChapterScope(REPO), q[:10], model=MODEL, dimension=DIM)


def chapter_table(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[int, int, str]]:
    return {
        (b, f): (int(n), int(length), lex)
        for b, f, n, length, lex in conn.execute(
            "SELECT branch, source_file, n_rows, doc_len, lexemes FROM chapter_documents"
            " WHERE repository = %s",
            (REPO,),
        )
    }


def chapters_of_rows(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[int, int, str]]:
    """What chapter_documents should hold, from the rows (migration 033's lexemes)."""
    return {
        (b, f): (int(n), int(length), lex)
        for b, f, n, length, lex in conn.execute(
            "SELECT branch, source_file, count(*), sum(doc_len),"
            " string_agg(glossator_lexeme_text(tsv), ' ' ORDER BY chunk_index)"
            " FROM hierarchical_content_nodes WHERE repository = %s AND level = 0"
            " GROUP BY 1, 2",
            (REPO,),
        )
    }


def test_partial_reload_keeps_the_chapter_index_exact(db: psycopg.Connection, pg_server) -> None:
    source = example()
    # an edited chapter (candles everywhere), a deleted one
    text = source.files[PETITION].decode() + "\n\nChandelles, chandelles, chandelles.\n"
    source.files[PETITION] = text.encode()
    from tests.store_sidecars import sidecar_for

    source.files[PETITION + ".jsonl"] = sidecar_for(
        PETITION,
        text,
        heading_path="Pétition",
        parent="corpus/sophismes-economiques/serie-1-premiere-serie/summary.md",
        level=0,
        node_type="source",
    )
    gone = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-06-balance-du-commerce/source.md"
    del source.files[gone], source.files[gone + ".jsonl"]
    partial = sync_tree(db, repository=REPO, branch="main", source=source)
    assert partial.ok and partial.deleted == [gone] and PETITION in partial.loaded
    full = sync_tree(db, repository=REPO, branch="rebuild", source=source)
    assert full.ok
    db.commit()
    exact = pg_server.backend != "pg_search"
    for query in QUERIES:
        a = evidence(db, query)
        b = chapter_evidence(db, query, ChapterScope(REPO, branch="rebuild")).keyword
        want = reference(db, query)
        close_to(a, want, exact)
        if exact:  # pg_search's statistics are the index's: both branches in them
            close_to(b, want, exact)
        assert [c for c, _ in a] == [c for c, _ in b], query
    assert gone.rsplit("/", 1)[0] not in {c for c, _ in evidence(db, "balance commerce")}
    # the loader keeps chapter_documents equal to what the rows say, both branches
    tables = chapter_table(db)
    assert tables == chapters_of_rows(db) and len(tables) >= 80  # 40 a branch
    assert ("main", gone) not in tables and ("rebuild", gone) not in tables
    main = {f: v for (b, f), v in tables.items() if b == "main"}
    assert main == {f: v for (b, f), v in tables.items() if b == "rebuild"}


# -- quoted phrases (store.phrases) ---------------------------------------------------


def test_quoted_segments_reads_french_and_english_quotes() -> None:
    from store.phrases import MAX_SEGMENTS, quoted_segments

    assert quoted_segments("qui a dit « Ôte-toi de mon soleil » ?") == ["Ôte-toi de mon soleil"]
    assert quoted_segments('« a » et “b c” puis „d e“ et "f g" et « a »') == [
        "a",
        "b c",
        "d e",
        "f g",
    ]
    assert quoted_segments("pas de guillemets, « un seul ouvrant") == []
    many = " ".join(f"« mot{i} autre{i} »" for i in range(10))
    assert len(quoted_segments(many)) == MAX_SEGMENTS


def test_a_long_unquoted_question_is_its_own_phrase() -> None:
    from store.phrases import MAX_SEGMENT_CHARS, MIN_UNQUOTED_WORDS, question_segments

    # Molière, II.4, asked as a reader remembers it: no quotation marks
    line = "nous avons changé tout cela, et nous faisons maintenant la médecine"
    assert question_segments(line) == [line]
    assert question_segments(f"  {line} ") == [line]
    # quoted parts win: only they are phrases, not the words around them
    assert question_segments(f"qui a dit « {line} » ?") == [line]
    # a quotation mark that opens nothing: no phrase at all, not the whole question
    assert question_segments(f"pas de guillemets, « {line}") == []
    # a short question is names and keywords: BM25's
    short = " ".join(["mot"] * (MIN_UNQUOTED_WORDS - 1))
    assert question_segments(short) == []
    assert question_segments(short + " encore") == [short + " encore"]
    assert len(question_segments("mot " * 500)[0]) == MAX_SEGMENT_CHARS


def test_phrase_rows_match_the_words_in_order(db: psycopg.Connection) -> None:
    from store.phrases import phrase_rows

    rows = dict(
        db.execute(
            "SELECT id, content FROM hierarchical_content_nodes WHERE repository = %s", (REPO,)
        ).fetchall()
    )
    ids = list(rows)
    # straight apostrophe in the question, typographic in the book
    found = phrase_rows(db, ["la disette prise pour l'abondance"], ids)
    assert found and all("disette prise pour l’abondance" in rows[i] for i in found)
    # the same words out of order are no phrase; one word is none either
    assert phrase_rows(db, ["l'abondance prise pour la disette"], ids) == []
    assert phrase_rows(db, ["disette"], ids) == []
    # only the rows asked about are read
    others = [i for i in ids if i not in found]
    assert phrase_rows(db, ["la disette prise pour l'abondance"], others) == []
    # quotes and tsquery syntax in the segment are plain text
    assert phrase_rows(db, ["l'a & | ! <-> ('x'"], ids) == []
    assert phrase_rows(db, [], ids) == phrase_rows(db, ["la disette"], []) == []


def test_catalogue_rebuild_after_writes_outside_the_loader(db: psycopg.Connection) -> None:
    # the loader is the one writer of the rows (store.catalogue); rows written another way
    # (an UPDATE, a row moving out of level 0, a chapter's paragraphs deleted) are
    # caught up by catalogue.rebuild, exactly
    db.execute(
        "UPDATE hierarchical_content_nodes SET content = content || ' Chandelles et soleil.'"
        " WHERE repository = %s AND level = 0 AND chunk_index %% 7 = 3",
        (REPO,),
    )
    db.execute(
        "UPDATE hierarchical_content_nodes SET level = 1 WHERE repository = %s AND level = 0"
        " AND source_file = %s AND chunk_index = 2",
        (REPO, PETITION),
    )
    gone = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-06-balance-du-commerce/source.md"
    db.execute(
        "DELETE FROM hierarchical_content_nodes WHERE repository = %s AND source_file = %s",
        (REPO, gone),
    )
    assert chapter_table(db) != chapters_of_rows(db)
    catalogue.rebuild(db)
    tables = chapter_table(db)
    assert tables == chapters_of_rows(db) and ("main", gone) not in tables
    for query in QUERIES:
        got, want = evidence(db, query, engine="postgres-fts"), reference(db, query)
        close_to(got, want, exact=True)
    figures = db.execute(
        "SELECT ts_config::text, count(*), sum(doc_len) FROM hierarchical_content_nodes"
        " WHERE repository = %s GROUP BY 1",
        (REPO,),
    ).fetchall()
    assert catalogue.branch_languages(db) == [
        (REPO, "main", c, n, length) for c, n, length in figures
    ]
