"""Settings → the embedder and the summarizer (the composition root's choice of providers).

    get_embedder(settings)     GLOSSATOR_EMBEDDER and its companions → an Embedder
    get_summarizer(settings)   GLOSSATOR_SUMMARIZER (`name` or `name:argument`) → a Summarizer

The providers in `indexer/` take plain values (a model, an API key as text, a base
URL, a thread count); only this module reads the settings for them and reveals
their secrets, at the moment it hands them on (docs/architecture.md, "Where
configuration enters").
"""

from __future__ import annotations

from collections.abc import Callable

from core.errors import SettingsError
from glossator.settings import Settings, reveal
from indexer.providers.embedders import BaseEmbedder, make_embedder
from indexer.providers.summarizers import Summarizer


def get_embedder(settings: Settings) -> BaseEmbedder:
    """The embedder GLOSSATOR_EMBEDDER names (the settings have validated the provider;
    `indexer.providers.embedders.make_embedder` checks the rest of the spec)."""
    return make_embedder(
        settings.embedder,
        threads=settings.embed_threads,
        voyage_api_key=reveal(settings.voyage_api_key) or None,
        openai_api_key=reveal(settings.openai_api_key) or None,
        model=settings.embedder_model,
        dimensions=settings.embedder_dimensions,
        recipe=settings.embedder_recipe,
    )


SummarizerFactory = Callable[[Settings, str], Summarizer]  # (settings, argument after "name:")


def _extractive(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _anthropic(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.claude import (
        AnthropicSummarizer,  # the SDK: only when chosen
    )

    if not argument:
        raise SettingsError(
            "GLOSSATOR_SUMMARIZER=anthropic needs a model: "
            "export GLOSSATOR_SUMMARIZER=anthropic:claude-sonnet-4-5 (for example)"
        )
    key = settings.require("anthropic_api_key", "the anthropic summarizer needs it")
    return AnthropicSummarizer(argument, api_key=key, batch_threshold=settings.batch_threshold)


def _openai_compatible(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.openai_compatible import OpenAICompatibleSummarizer

    if not argument.startswith(("http://", "https://")):
        raise SettingsError(
            "GLOSSATOR_SUMMARIZER=openai-compatible needs the server's base URL: "
            "export GLOSSATOR_SUMMARIZER=openai-compatible:http://127.0.0.1:8000/v1"
        )
    model = settings.require("summarizer_model", "the openai-compatible summarizer needs it")
    return OpenAICompatibleSummarizer(argument, model)


def _fake(settings: Settings, argument: str) -> Summarizer:
    from indexer.summaries.fake import FakeSummarizer

    return FakeSummarizer()


# The one registry of summarizer providers, by the name GLOSSATOR_SUMMARIZER gives.
# Process-wide on purpose: it is the extension point (a third provider registers its
# factory here and loads the way the built-in ones do; tests/plugins/summaries.py
# registers a recording fake for the duration of a test), not state a request changes.
SUMMARIZERS: dict[str, SummarizerFactory] = {
    "extractive": _extractive,
    "anthropic": _anthropic,
    "openai-compatible": _openai_compatible,
    "fake": _fake,
}


def get_summarizer(settings: Settings) -> Summarizer:
    """The summarizer `settings.summarizer` names (`name` or `name:argument`)."""
    spec = settings.summarizer
    name, _, argument = spec.partition(":")
    try:
        factory = SUMMARIZERS[name]
    except KeyError:
        raise SettingsError(
            f"GLOSSATOR_SUMMARIZER={spec!r}: unknown provider {name!r}; "
            f"expected one of {', '.join(SUMMARIZERS)}"
        ) from None
    return factory(settings, argument)
