"""Anthropic: the `anthropic:<model>` summarizer, on ANTHROPIC_API_KEY (Message Batches
above GLOSSATOR_BATCH_THRESHOLD summaries)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import SettingsError

if TYPE_CHECKING:
    from glossator.providers import Providers
    from glossator.settings import Settings
    from indexer.providers.summarizers.claude import AnthropicSummarizer


def register(providers: Providers) -> None:
    providers.summarizers["anthropic"] = _summarizer


def _summarizer(settings: Settings, argument: str) -> AnthropicSummarizer:
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
