"""Hierarchical summaries (DESIGN §4): providers, prompts, the incremental plan.

    get_summarizer(settings)   the provider named by GLOSSATOR_SUMMARIZER
    generate(corpus, source, summarizer, *, dry_run=False, progress=None) -> SummaryResult

Providers register a factory under their name in `PROVIDERS`; the built-in ones
load the same way a third one would, and tests register recording fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from indexer.summaries.base import (
    RefusalError,
    RetryableError,
    Summarizer,
    SummarizerError,
    SummaryInput,
    SummaryRequest,
    SummaryResponse,
    Usage,
)
from indexer.summaries.generate import SummaryResult, generate
from indexer.summaries.plan import PlanItem

__all__ = [
    "PROVIDERS",
    "PlanItem",
    "RefusalError",
    "RetryableError",
    "Summarizer",
    "SummarizerError",
    "SummaryInput",
    "SummaryRequest",
    "SummaryResponse",
    "SummaryResult",
    "Usage",
    "generate",
    "get_summarizer",
]


def _extractive(settings: Any, argument: str) -> Summarizer:
    from indexer.summaries.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _anthropic(settings: Any, argument: str) -> Summarizer:
    from indexer.summaries.claude import AnthropicSummarizer

    return AnthropicSummarizer.from_settings(settings, argument)


def _openai(settings: Any, argument: str) -> Summarizer:
    from indexer.summaries.openai_compatible import OpenAICompatibleSummarizer

    return OpenAICompatibleSummarizer.from_settings(settings, argument)


def _fake(settings: Any, argument: str) -> Summarizer:
    from indexer.summaries.fake import FakeSummarizer

    return FakeSummarizer()


# name → factory(settings, argument after "name:")
PROVIDERS: dict[str, Callable[[Any, str], Summarizer]] = {
    "extractive": _extractive,
    "anthropic": _anthropic,
    "openai-compatible": _openai,
    "fake": _fake,
}


def get_summarizer(settings: Any) -> Summarizer:
    """The summarizer `settings.summarizer` names (`name` or `name:argument`)."""
    spec: str = settings.summarizer
    name, _, argument = spec.partition(":")
    try:
        factory = PROVIDERS[name]
    except KeyError:
        from core.errors import SettingsError

        raise SettingsError(
            f"GLOSSATOR_SUMMARIZER={spec!r}: unknown provider {name!r}; "
            f"expected one of {', '.join(PROVIDERS)}"
        ) from None
    return factory(settings, argument)
