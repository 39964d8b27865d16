"""What an attempt computed, kept for the next attempt and the next job of the process.

    indexer = ReusingIndexer(embedder, summarizer)   # hooks.job.Indexer
    indexer.index(GitTreeSource.at(repo, tip), progress=progress)

`ReusingIndexer` is the indexer as the job calls it: `indexer.indexing.run.index` with
the process's `IndexCaches` (parsed files, hashes, manifests by blob id: a job
re-reads only what changed) and the embedder and summarizer wrapped below.

A job that lost the commit-back race loads its own commit-back, but the pushed
tip that the next job indexes does not contain those sidecars and summaries: by
the sidecars alone, the next job would embed the same new paragraphs and ask the
LLM for the same summaries again (docs/push-pipeline.md, `reuse.py`).
These wrappers remember results by their exact input, so equal inputs
are computed once per process, whatever the order of jobs and races:

- `ReusingEmbedder`: document vectors by (model, dimension, embedding input).
  The input already carries the recipe and heading path (indexer.indexing.recipes).
- `ReusingSummarizer`: summaries by (provider, model, prompt, request). A reused
  summary costs nothing and counts no call.

Both are bounded LRU maps (indexer.corpus.cache.ContentCache) owned by the job's indexer
(`ReusingIndexer`, one per worker process), not module state. A failed call is not
remembered.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hooks.progress import JobProgress
from indexer.corpus.cache import ContentCache, IndexCaches
from indexer.corpus.source import FileSource
from indexer.providers.embedders.base import BaseEmbedder, Embedder, Embeddings, EmbeddingUsage
from indexer.providers.summarizers.base import (
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
    Usage,
)

if TYPE_CHECKING:  # the indexer is imported when a job runs, not with the server
    from indexer.indexing.run import IndexResult
    from indexer.indexing.sidecars import Landing, Progress

# ~3 KB per 384-dimension vector kept as doubles (exact: sidecars round them
# themselves): 20,000 are ~60 MB, about ten times the 2,016 new texts of a large push.
EMBEDDINGS_KEPT = 20_000
# Summaries are a few KB each; a 1,000-chapter book has ~1,050 of them.
SUMMARIES_KEPT = 5_000


def _key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class ReusingEmbedder:
    """`inner` with its document vectors remembered (an `Embedder`); the usage `embed`
    returns is only what `inner` really embedded: a remembered vector costs nothing."""

    def __init__(self, inner: Embedder, size: int = EMBEDDINGS_KEPT) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.recipe = inner.recipe
        self.provider = inner.provider
        self.unrecorded_engine = inner.unrecorded_engine
        self.reused = 0
        self._vectors: ContentCache[array[float]] = ContentCache(size)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    @property
    def passage_engine(self) -> str | None:
        return self.inner.passage_engine  # a remembered vector was inner's, this process

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        return self.embed(texts, on_batch).vectors

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> Embeddings:
        keys = [_key(self.model, str(self.dimension), t) for t in texts]
        found: dict[int, list[float]] = {}
        for i, key in enumerate(keys):
            vector = self._vectors.get(key)
            if vector is not None:
                found[i] = vector.tolist()
        missing = [i for i in range(len(texts)) if i not in found]
        self.reused += len(found)
        if found and on_batch is not None:
            on_batch(len(found))
        usage = EmbeddingUsage()
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing], on_batch)
            usage = fresh.usage
            for i, computed in zip(missing, fresh.vectors, strict=True):
                self._vectors.put(keys[i], array("d", computed))
                found[i] = computed
        return Embeddings([found[i] for i in range(len(texts))], usage)


class ReusingSummarizer(Summarizer):
    """`inner` with its summaries remembered by request."""

    def __init__(self, inner: Summarizer, size: int = SUMMARIES_KEPT) -> None:
        super().__init__(
            max_attempts=inner.max_attempts,
            backoff_seconds=inner.backoff_seconds,
            backoff_max=inner.backoff_max,
            sleep=inner.sleep,
        )
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.uses_prompt = inner.uses_prompt
        self.context_tokens = inner.context_tokens
        self.reused = 0
        self._texts: ContentCache[str] = ContentCache(size)

    def _request_key(self, r: SummaryRequest) -> str:
        prompt = r.prompt if self.uses_prompt else ""
        return _key(
            self.provider,
            self.model,
            prompt,
            r.user_message(),
            str(r.level),
            str(r.budget_tokens),
            r.path,
        )

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return self.inner.summarize(request)

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        return self.inner.price(input_tokens, output_tokens)

    def estimate(self, request: SummaryRequest) -> Usage:
        return self.inner.estimate(request)

    def run(self, request: SummaryRequest) -> SummaryResponse:
        key = self._request_key(request)
        text = self._texts.get(key)
        if text is not None:
            self.reused += 1
            return SummaryResponse(text, calls=0)
        response = self.inner.run(request)
        self._texts.put(key, response.text)
        return response

    def run_many(
        self,
        requests: Sequence[SummaryRequest],
        progress: Callable[[SummaryRequest], None] | None = None,
    ) -> dict[str, SummaryResponse | SummarizerError]:
        out: dict[str, SummaryResponse | SummarizerError] = {}
        missing: list[SummaryRequest] = []
        for request in requests:
            text = self._texts.get(self._request_key(request))
            if text is None:
                missing.append(request)
                continue
            self.reused += 1
            out[request.path] = SummaryResponse(text, calls=0)
            if progress:
                progress(request)
        if missing:
            fresh = self.inner.run_many(missing, progress=progress)  # keeps a bulk path
            by_path = {r.path: r for r in missing}
            for path, outcome in fresh.items():
                if isinstance(outcome, SummaryResponse):
                    self._texts.put(self._request_key(by_path[path]), outcome.text)
                out[path] = outcome
        return out


class IndexFn(Protocol):
    """`indexer.indexing.run.index`'s call, as the job makes it (tests wrap the real one)."""

    def __call__(
        self,
        source: FileSource,
        *,
        embedder: Embedder,
        summarizer: Summarizer,
        caches: IndexCaches,
        progress: Progress | None = ...,
        landing: Landing | None = ...,
    ) -> IndexResult: ...


def pipeline_index() -> IndexFn:
    """`indexer.indexing.run.index`, imported when a job runs, not with the server."""
    from indexer.indexing.run import index

    return index


class ReusingIndexer:
    """`index_fn` (`indexer.indexing.run.index` by default) with the process's caches, and
    `embedder` and `summarizer` remembering what they computed (hooks.job.Indexer)."""

    def __init__(
        self, embedder: Embedder, summarizer: Summarizer, index_fn: IndexFn | None = None
    ) -> None:
        # What one attempt computed serves the next attempts and jobs (above).
        self.embedder: Embedder = (
            ReusingEmbedder(embedder) if isinstance(embedder, BaseEmbedder) else embedder
        )
        self.summarizer = ReusingSummarizer(summarizer)
        self.index_fn = index_fn
        # parsed files, hashes, manifests by blob id: a job re-reads only what changed
        self.caches = IndexCaches()

    def index(
        self,
        source: FileSource,
        *,
        progress: JobProgress | None,
        landing: Landing | None = None,
    ) -> IndexResult:
        index = self.index_fn or pipeline_index()
        extra: dict[str, Any] = {}  # the indexer's own defaults otherwise
        if progress is not None:
            extra["progress"] = progress
        if landing is not None:  # rows before vectors (indexer.indexing.sidecars)
            extra["landing"] = landing
        return index(
            source,
            embedder=self.embedder,
            summarizer=self.summarizer,
            caches=self.caches,
            **extra,
        )
