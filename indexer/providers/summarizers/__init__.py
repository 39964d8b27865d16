"""Summarizers (DESIGN §4) behind one interface (`Summarizer.summarize`).

The indexing step that calls them, bottom-up and incrementally, is
`indexer.indexing.summaries.generate`. Providers are classes built from plain values (model, key, base URL…); which one
GLOSSATOR_SUMMARIZER names is the composition root's choice
(`glossator.providers.get_summarizer`), each built by its plugin's factory
(glossator/default_plugins/; a third party's plugin registers the same way).
"""

from __future__ import annotations

from indexer.providers.summarizers.base import (
    RefusalError,
    RetryableError,
    Summarizer,
    SummarizerError,
    SummaryInput,
    SummaryRequest,
    SummaryResponse,
    UnsummarizableError,
    Usage,
)

__all__ = [
    "RefusalError",
    "RetryableError",
    "Summarizer",
    "SummarizerError",
    "SummaryInput",
    "SummaryRequest",
    "SummaryResponse",
    "UnsummarizableError",
    "Usage",
]
