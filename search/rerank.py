"""Rerankers: one abstract method, `_score`, behind a base class that keeps the time budget.

    reranker = VoyageReranker("rerank-2.5", api_key=key)   # the composition root builds it
    outcome = reranker.rerank(query, documents)
    outcome.status                           # "applied" | "timeout" | "failed"
    outcome.scores                           # one per document when applied, else None

A reranker is an optional refinement: search must answer even when it is slow
or down. So `rerank` never raises for a provider problem: it runs `_score` on a
worker thread, waits at most `timeout` seconds, and reports `timeout` or
`failed` (with a one-line reason, never the documents) so the caller keeps the
fused order and says why. A late answer is discarded, not waited for.

Provider: `voyage:<model>` (Voyage AI's rerank API, e.g. `rerank-2.5`), chosen by
GLOSSATOR_RERANKER and built by its plugin's factory (glossator/default_plugins/voyage.py,
registered in glossator.providers). The tests' recording `FakeReranker` lives in
tests/fakes.py.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from search.results import RerankStatus

log = logging.getLogger(__name__)

# A timed-out call keeps its thread until the provider gives up, so each reranker's
# pool is small and bounded rather than a thread per query.
POOL_THREADS = 4


@dataclass
class RerankOutcome:
    status: RerankStatus
    scores: list[float] | None
    seconds: float
    detail: str | None = None


class Reranker(ABC):
    """Scores documents against a query; the base class enforces the time budget."""

    model: str = "unknown"

    def __init__(self, timeout: float = 3.0) -> None:
        if timeout <= 0:
            raise ValueError("the rerank timeout must be positive")
        self.timeout = timeout
        # the reranker's own, made with it (never at import): its threads start on first use
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=POOL_THREADS, thread_name_prefix="rerank"
        )

    @abstractmethod
    def _score(self, query: str, documents: list[str]) -> list[float]:
        """Relevance of each document to the query, in the documents' order."""

    def rerank(
        self, query: str, documents: Sequence[str], *, timeout: float | None = None
    ) -> RerankOutcome:
        budget = self.timeout if timeout is None else timeout
        started = time.perf_counter()
        if not documents:
            return RerankOutcome("applied", [], 0.0)
        future = self._pool.submit(self._score, query, list(documents))
        try:
            scores = future.result(timeout=budget)
        except concurrent.futures.TimeoutError:
            future.cancel()
            seconds = time.perf_counter() - started
            log.warning("reranker %s took over %.1f s; fused order kept", self.model, budget)
            return RerankOutcome("timeout", None, seconds, f"no answer within {budget:g} s")
        except Exception as e:  # any provider failure: the fused order stands
            seconds = time.perf_counter() - started
            reason = f"{type(e).__name__}: {_one_line(e)}"
            log.warning("reranker %s failed (%s); fused order kept", self.model, reason)
            return RerankOutcome("failed", None, seconds, reason)
        seconds = time.perf_counter() - started
        if len(scores) != len(documents):
            reason = f"returned {len(scores)} scores for {len(documents)} documents"
            log.warning("reranker %s %s; fused order kept", self.model, reason)
            return RerankOutcome("failed", None, seconds, reason)
        return RerankOutcome("applied", [float(s) for s in scores], seconds)


def _one_line(e: BaseException, limit: int = 200) -> str:
    text = " ".join(str(e).split())
    return text[:limit] + ("…" if len(text) > limit else "")


class VoyageReranker(Reranker):
    """Voyage AI's rerank endpoint (`rerank-2.5`, `rerank-2.5-lite`, …) through the voyageai SDK."""

    def __init__(
        self,
        model: str = "rerank-2.5",
        *,
        api_key: str,
        timeout: float = 3.0,
        base_url: str | None = None,
    ) -> None:
        super().__init__(timeout)
        import voyageai  # imported here: only a configured reranker pays for it

        self.model = model
        # the SDK's own timeout stops the HTTP call a little after our budget, so
        # an abandoned call does not hold a worker thread for long
        self._client = voyageai.Client(
            api_key=api_key, max_retries=0, timeout=timeout + 1.0, base_url=base_url
        )

    def _score(self, query: str, documents: list[str]) -> list[float]:
        result = self._client.rerank(query, documents, model=self.model, truncation=True)
        scores = [0.0] * len(documents)
        for r in result.results:
            scores[r.index] = float(r.relevance_score)
        return scores
