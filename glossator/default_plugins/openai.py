"""OpenAI's API and the servers that speak it (TEI, vLLM, Ollama…).

    embedder   openai:<model>                  OPENAI_API_KEY, GLOSSATOR_EMBEDDER_DIMENSIONS
    embedder   openai-compatible:<base-url>    GLOSSATOR_EMBEDDER_MODEL
    summarizer openai-compatible:<base-url>    GLOSSATOR_SUMMARIZER_MODEL

GLOSSATOR_EMBEDDER_RECIPE says how texts reach either embedder's model;
GLOSSATOR_EMBEDDER_TIMEOUT how long one of its requests may take,
GLOSSATOR_EMBEDDER_RETRIES how many times the SDK asks again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import SettingsError
from glossator.settings_types import reveal

if TYPE_CHECKING:
    from glossator.providers import Providers
    from glossator.settings import Settings
    from indexer.providers.embedders.openai_api import OpenAIEmbedder
    from indexer.providers.summarizers.openai_compatible import OpenAICompatibleSummarizer


def register(providers: Providers) -> None:
    providers.embedders["openai"] = _openai
    providers.embedders["openai-compatible"] = _compatible_embedder
    providers.summarizers["openai-compatible"] = _compatible_summarizer


def _openai(settings: Settings, argument: str) -> OpenAIEmbedder:
    from indexer.providers.embedders.openai_api import OpenAIEmbedder

    return OpenAIEmbedder(
        argument,
        api_key=reveal(settings.openai_api_key) or None,
        dimensions=settings.embedder_dimensions,
        recipe=settings.embedder_recipe,
        timeout=settings.embedder_timeout,
        sdk_retries=settings.embedder_retries,
    )


def _compatible_embedder(settings: Settings, argument: str) -> OpenAIEmbedder:
    from indexer.providers.embedders.openai_api import OpenAIEmbedder

    if not argument.startswith(("http://", "https://")):
        from indexer.providers.embedders import EmbedderError

        raise EmbedderError(
            f"GLOSSATOR_EMBEDDER=openai-compatible:{argument}: openai-compatible takes the "
            "server's base URL, e.g. openai-compatible:http://127.0.0.1:8000/v1"
        )
    return OpenAIEmbedder(
        settings.embedder_model or "",
        api_key=reveal(settings.openai_api_key) or None,
        base_url=argument,
        dimensions=settings.embedder_dimensions,
        recipe=settings.embedder_recipe,
        timeout=settings.embedder_timeout,
        sdk_retries=settings.embedder_retries,
    )


def _compatible_summarizer(settings: Settings, argument: str) -> OpenAICompatibleSummarizer:
    from indexer.providers.summarizers.openai_compatible import OpenAICompatibleSummarizer

    if not argument.startswith(("http://", "https://")):
        raise SettingsError(
            "GLOSSATOR_SUMMARIZER=openai-compatible needs the server's base URL: "
            "export GLOSSATOR_SUMMARIZER=openai-compatible:http://127.0.0.1:8000/v1"
        )
    model = settings.require("summarizer_model", "the openai-compatible summarizer needs it")
    return OpenAICompatibleSummarizer(argument, model)
