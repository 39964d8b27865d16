"""A deterministic embedder for tests that records every call (llm's mock model habit).

Vectors are feature-hashed bags of words, unit length: the same text always
gives the same vector, texts sharing words are close, and a query made of a
paragraph's words finds that paragraph, which is enough for search tests to
assert rankings without a model.
"""

from __future__ import annotations

import hashlib
import math
import re

from indexer.providers.embedders.base import Answer, BaseEmbedder, InputType

_WORD = re.compile(r"\w+")


def hashed_vector(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    words = _WORD.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        for k in range(2):  # two slots per word: fewer collisions in small dimensions
            slot = int.from_bytes(digest[4 * k : 4 * k + 4], "big") % dimension
            vector[slot] += 1.0 if digest[8 + k] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:  # every word cancelled out: fall back to the whole text's hash
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        vector[int.from_bytes(digest[:4], "big") % dimension] = 1.0
        return vector
    return [x / norm for x in vector]


class FakeEmbedder(BaseEmbedder):
    """Records `history` of (texts, input_type); `fail_next()` queues errors to raise."""

    max_retries = 3
    backoff_initial = 0.0
    recipe = "fake"

    def __init__(self, dimension: int = 384, max_batch_size: int = 64) -> None:
        super().__init__(f"fake/hash-{dimension}", dimension)
        self.max_batch_size = max_batch_size
        self.history: list[tuple[list[str], InputType]] = []
        self.failures: list[Exception] = []
        self._answered: list[str] = []

    def fail_next(self, *errors: Exception) -> None:
        """The next calls raise these errors, one per call, in order."""
        self.failures.extend(errors)

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        self.history.append((list(texts), input_type))
        if self.failures:
            raise self.failures.pop(0)
        if input_type == "document":
            self._answered.extend(texts)
        return Answer([hashed_vector(t, self.dimension) for t in texts])

    @property
    def embedded_texts(self) -> list[str]:
        """Every document text embedded so far, in order (queries and failed calls left out)."""
        return list(self._answered)
