"""Voyage AI: the `voyage:<model>` embedder and the `voyage:<model>` reranker, both on
VOYAGE_API_KEY."""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossator.settings_types import reveal

if TYPE_CHECKING:
    from glossator.providers import Providers
    from glossator.settings import Settings
    from indexer.providers.embedders.voyage import VoyageEmbedder
    from search.rerank import VoyageReranker


def register(providers: Providers) -> None:
    providers.embedders["voyage"] = _embedder
    providers.rerankers["voyage"] = _reranker


def _embedder(settings: Settings, argument: str) -> VoyageEmbedder:
    from indexer.providers.embedders.voyage import DEFAULT_MODEL, VoyageEmbedder

    # no key: the embedder's own error says which variable to set
    return VoyageEmbedder(
        argument or DEFAULT_MODEL, api_key=reveal(settings.voyage_api_key) or None
    )


def _reranker(settings: Settings, argument: str) -> VoyageReranker:
    from search.rerank import VoyageReranker

    key = settings.require("voyage_api_key", "GLOSSATOR_RERANKER uses Voyage AI")
    timeout = float(settings.rerank_timeout)
    return VoyageReranker(argument or "rerank-2.5", api_key=key, timeout=timeout)
