"""Retries of a provider's transient failures, where its SDK has none we can use: tenacity.

    Retrying(..., wait=RetryAfter(backoff, cap=…), sleep=injected)

`RetryAfter` waits at least what the failure's `retry_after` asks (a provider's
`Retry-After`, capped) and otherwise the backoff it wraps. The failures carry the
header's value themselves (`indexer.providers.embedders.RetryableError`,
`indexer.providers.summarizers.RetryableError`), so one wait serves both. Who uses what:

    OpenAI embeddings, Anthropic   the SDK's own retries (Retry-After honoured)
    Voyage, openai-compatible chat tenacity here (embedders/base.py, summarizers/base.py)
"""

from __future__ import annotations

from tenacity import RetryCallState
from tenacity.wait import wait_base


class RetryAfter(wait_base):
    """`backoff`, or the failure's `retry_after` (at most `cap` seconds) when it is longer."""

    def __init__(self, backoff: wait_base, cap: float) -> None:
        self.backoff = backoff
        self.cap = cap

    def __call__(self, retry_state: RetryCallState) -> float:
        wait = self.backoff(retry_state)
        failure = retry_state.outcome.exception() if retry_state.outcome is not None else None
        asked = getattr(failure, "retry_after", None)
        return wait if asked is None else max(wait, min(float(asked), self.cap))
