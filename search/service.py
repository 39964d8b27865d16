"""The search service: what the faces (MCP, the web reader, the CLI) share.

    service = SearchService(pool, embedder=embedder, defaults=SearchOptions(rrf_k=…),
                            reranker=None, serialize_embedding=True)
    response = service.search("la pétition des chandelles", k=5)
    pack = service.context("pourquoi la disette n'enrichit pas", budget=1500)

The composition root (`glossator/`) builds one per process from the settings and
hands it to the faces, so they share its state, each part owned by what it serves:
the query vectors with their cache and the model's lock (search.query_vectors) and
each corpus's calibrated gate with its cache (search.gates).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from search import rows
from search.calibration import PROBES
from search.context import ContextPack, check_budget
from search.context import context as build_context
from search.engine import search as run_search
from search.gates import CorpusGates, GateRequest
from search.language import LanguageDetector
from search.options import (
    AGENT_MAX_PER_CHAPTER,
    QueryEmbedder,
    QueryVector,
    SearchOptions,
    check_query,
)
from search.query_vectors import QUERY_CACHE_SIZE, QueryVectors
from search.rerank import Reranker
from search.results import Mode, SearchResponse
from search.rows import ConnOrPool
from search.scope import resolve as resolve_scope
from search.stages import ms
from search.tuning import TUNING, Tuning

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
        foreground: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        """`embedder` may be a factory, called at the first vector or hybrid query (a
        bm25-only session never loads a model); None: bm25 only. `defaults` are every
        search's options before the caller's changes. `foreground()`: a context each
        search and context pack runs in (the server's: its indexing worker stopped
        meanwhile, glossator.supervision.search_first)."""
        self.conn_or_pool = conn_or_pool
        self.reranker = reranker
        self.defaults = defaults or SearchOptions()
        self.tuning = tuning
        self.vectors = QueryVectors(embedder, serialize=serialize_embedding, cache_size=cache_size)
        self.detector = detector or LanguageDetector()  # the query's language (search.language)
        self.gates = CorpusGates(self.vectors, self.detector, self.defaults, tuning)
        self.foreground = foreground or contextlib.nullcontext

    @property
    def embedder(self) -> QueryEmbedder:
        return self.vectors.embedder

    def embed(self, query: str) -> QueryVector:
        """The query's vector (search.query_vectors: cached per model and query)."""
        return self.vectors.of(query)

    def options(self, options: SearchOptions | None = None, **changes: object) -> SearchOptions:
        """`options` (default: the service's defaults) with `changes`."""
        base = self.defaults if options is None else options
        return base.replace(**changes) if changes else base

    def search(
        self, query: str, options: SearchOptions | None = None, **changes: object
    ) -> SearchResponse:
        """`search.engine.search` with the query embedded (vector and hybrid modes); the
        embedding's milliseconds are the response's `timings_ms["embed"]`."""
        with self.foreground():
            return self._search(query, options, **changes)

    def _search(
        self, query: str, options: SearchOptions | None = None, **changes: object
    ) -> SearchResponse:
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

    def agent_search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: Mode = "hybrid",
        level: int | None = None,
        work: str | None = None,
        repository: str | None = None,
        branch: str | None = None,
        max_per_chapter: int = AGENT_MAX_PER_CHAPTER,
        readable: frozenset[str] | None = None,
    ) -> SearchResponse:
        """The search an agent or a reader asks for: `search` over MCP, `GET /api/search`
        and the `/search` page call this, so they give the same hits for the same
        arguments: one row per chapter by default (AGENT_MAX_PER_CHAPTER), a chapter
        summary hit bringing its best paragraphs (the tuning's climb_down). `branch`
        None: each repository's default; `readable`: what the caller may read (None: all)."""
        options = self.options(
            mode=mode,
            k=k,
            repository=repository,
            work=work,
            level=level,
            max_per_chapter=max_per_chapter,
            climb_down=self.tuning.packing.climb_down,
            readable=readable,
        )
        if branch is not None:
            options = options.replace(branch=branch)
        return self.search(query, options)

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
        with self.foreground():
            return self._context(
                question, budget, repository, branch, work, min_relevance, None, readable
            )

    def warm(self, repository: str, branch: str, stop: Callable[[], bool] | None = None) -> None:
        """Measure and keep the gates a `context` pack on `repository`@`branch` would
        measure, so that no request pays them (search.warming): the repository's own, and
        when `branch` is its default branch, the unfiltered one (every repository). A
        pack for one everyday probe question makes each: the request's own path, so the
        scope and languages are the ones a request reads. `stop()` true: give up
        (search.calibration.Abandoned) between two of the calibration's searches."""
        question = PROBES["en"][0]
        self._context(question, MIN_WARM_BUDGET, repository, branch, None, None, stop)
        with rows.connection(self.conn_or_pool) as conn:
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
            corpus_gate=lambda conn, langs: self.gates.gate(
                conn, langs, GateRequest(repository, branch, work, readable), stop
            ),
        )
