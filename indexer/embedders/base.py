"""The embedder interface: providers implement `embed_batch`, the base does the rest.

    EmbedderError (GlossatorError)   the provider cannot embed; says how to fix it
     └── RetryableError               a provider's transient failure (rate limit,
                                      5xx, timeout): the base retries with backoff

A provider answers one request's worth of texts. The base class cuts the input
into requests within the provider's limits (texts per request and tokens per
request, counted in cl100k as an estimate), retries transient failures with
exponential backoff, checks that every answer has one vector per text of the
declared dimension, and keeps the accounts (`calls`, `texts_embedded`,
`tokens`, `retries`).
"""

from __future__ import annotations

import logging
import math
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from glossator.errors import GlossatorError
from indexer.tokens import count_tokens

log = logging.getLogger(__name__)

InputType = Literal["document", "query"]


class EmbedderError(GlossatorError):
    """Embedding failed in a way retrying will not fix; the message says what to do."""


class RetryableError(EmbedderError):
    """A transient provider failure; `retry_after` (seconds) when the provider said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Embedder(ABC):
    """Turns texts into vectors. Subclasses implement `embed_batch` only."""

    max_batch_size: int = 64  # texts per provider request
    max_batch_tokens: int | None = None  # cl100k tokens per request (None: no limit)
    max_retries: int = 5
    backoff_initial: float = 1.0  # seconds before the first retry, doubled each time
    backoff_max: float = 30.0
    recipe: str = "passage"  # how a document becomes the model's input; recorded in sidecars

    def __init__(self, model: str, dimension: int) -> None:
        self._model = model
        self._dimension = dimension
        self.calls = 0
        self.texts_embedded = 0
        self.tokens = 0
        self.retries = 0
        self.sleep: Callable[[float], None] = time.sleep  # tests make backoff instant

    @property
    def model(self) -> str:
        """The name stored as `embedding_model` (provider/model)."""
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    @abstractmethod
    def embed_batch(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        """Vectors for one request's worth of texts, in order."""

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        """Vectors for passages to be searched; `on_batch(n)` after each request."""
        out: list[list[float]] = []
        for batch in self.batches(texts):
            out.extend(self._call(batch, "document"))
            if on_batch is not None:
                on_batch(len(batch))
        return out

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query (e5 and Voyage embed queries differently)."""
        return self._call([text], "query")[0]

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

    def _call(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        attempt = 0
        while True:
            try:
                self.calls += 1
                vectors = self.embed_batch(texts, input_type)
                break
            except RetryableError as e:
                if attempt >= self.max_retries:
                    raise EmbedderError(
                        f"{self.model}: still failing after {attempt + 1} attempts: {e}"
                    ) from e
                delay = self._delay(attempt, e.retry_after)
                log.warning(
                    "embedding request failed (%s); retry %d/%d in %.1f s",
                    e,
                    attempt + 1,
                    self.max_retries,
                    delay,
                )
                self.retries += 1
                attempt += 1
                self.sleep(delay)
        self._check(texts, vectors)
        self.texts_embedded += len(texts)
        self.tokens += sum(count_tokens(t) for t in texts)
        return vectors

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.backoff_max, self.backoff_initial * 2**attempt)
        backoff *= 0.5 + random.random() / 2  # jitter: concurrent workers do not retry in step
        return max(backoff, min(retry_after or 0.0, 60.0))  # a provider's Retry-After, capped

    def _check(self, texts: list[str], vectors: list[list[float]]) -> None:
        if len(vectors) != len(texts):
            raise EmbedderError(
                f"{self.model} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        for i, v in enumerate(vectors):
            if len(v) != self.dimension:
                raise EmbedderError(
                    f"{self.model} returned a vector of {len(v)} dimensions, expected "
                    f"{self.dimension}; check the model name in GLOSSATOR_EMBEDDER"
                )
            if not all(math.isfinite(x) for x in v):
                raise EmbedderError(f"{self.model} returned a non-finite value in vector {i}")
