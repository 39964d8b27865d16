"""Hierarchical summaries (DESIGN §4): providers, prompts, the incremental plan.

    generate(corpus, source, summarizer, *, dry_run=False, progress=None) -> SummaryResult

Providers are classes built from plain values (model, key, base URL…); which one
GLOSSATOR_SUMMARIZER names is the composition root's choice
(`glossator.providers.get_summarizer`, where a third provider registers too).
"""

from __future__ import annotations

from indexer.summaries.base import (
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
from indexer.summaries.generate import SummaryResult, generate
from indexer.summaries.plan import PlanItem

__all__ = [
    "PlanItem",
    "RefusalError",
    "RetryableError",
    "Summarizer",
    "SummarizerError",
    "SummaryInput",
    "SummaryRequest",
    "SummaryResponse",
    "SummaryResult",
    "UnsummarizableError",
    "Usage",
    "generate",
]
