"""Summaries by Claude through the anthropic SDK (`GLOSSATOR_SUMMARIZER=anthropic:<model>`).

- The prompt goes in `system` with `cache_control: ephemeral`: the same level's
  prompt is reused by every chapter, so after the first call it is read from the
  cache (note the API caches only prompts over its minimum length, ~1,024 tokens
  for Sonnet and Opus; below that the mark is harmless and simply unused).
- More than `batch_threshold` requests at one level go through the Message
  Batches API (half price), polled with backoff for at most `batch_max_wait`
  seconds; otherwise one Messages call each.
- Retries are the SDK's own (`max_retries` = `max_attempts` - 1; anthropic 2.10
  `_base_client.py`): 408, 409, 429, 5xx, 529 overloaded, timeouts and lost
  connections, honouring `retry-after-ms` / `retry-after`, else a 0.5 s jittered
  backoff doubling up to 8 s. The base class does not retry on top (we raise no
  `RetryableError`), so a failing API costs `max_attempts` requests, not their
  square; the last failure says it gave up. Polling a batch waits with `sleep`.
- A refusal (`stop_reason: refusal`), an empty answer or an answer cut at
  `max_tokens` is an error, never a summary.
- Usage includes cache writes and reads; the cost comes from `pricing.PRICES`.

anthropic 2.x runs on `httpx2`: a custom `http_client` must be an `httpx2.Client`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anthropic
import httpx2

from indexer.providers.summarizers.base import (
    RefusalError,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)
from indexer.providers.summarizers.pricing import Price, price_of

log = logging.getLogger(__name__)

T = TypeVar("T")

CONTEXT_TOKENS = 180_000  # of Claude's 200k window, leaving room for the answer and our
# token counts (cl100k) being an estimate of Claude's own
_RETRY_STATUS = {408, 409, 429}
_RETRY_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


class AnthropicSummarizer(Summarizer):
    provider = "anthropic"
    context_tokens = CONTEXT_TOKENS

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        batch_threshold: int = 20,
        http_client: httpx2.Client | None = None,
        base_url: str | None = None,
        timeout: float = 300.0,
        batch_poll_seconds: float = 10.0,
        batch_max_wait: float = 6 * 3600.0,
        **retry: Any,
    ) -> None:
        super().__init__(**retry)
        self.model = model
        self.batch_threshold = batch_threshold
        self.batch_poll_seconds = batch_poll_seconds
        self.batch_max_wait = batch_max_wait
        self.client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max(0, self.max_attempts - 1),
            timeout=timeout,
            http_client=http_client,
        )
        self._price: Price | None = price_of(model)
        if self._price is None:
            log.warning("anthropic: no price known for model %s; its cost is not recorded", model)

    # -- cost -------------------------------------------------------------------------

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        return None if self._price is None else self._price.cost(input_tokens, output_tokens)

    # -- one request ------------------------------------------------------------------

    def params(self, request: SummaryRequest) -> dict[str, Any]:
        """The Messages API parameters for `request` (the same in a batch)."""
        return {
            "model": self.model,
            "max_tokens": request.budget_tokens * 2 + 256,
            "system": [
                {"type": "text", "text": request.prompt, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [{"role": "user", "content": request.user_message()}],
        }

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        try:
            message = self.client.messages.create(**self.params(request))
        except anthropic.APIError as e:
            raise _error(request.path, e, self.max_attempts) from None
        return self._response(request.path, message, batch=False)

    def _response(self, path: str, message: Any, *, batch: bool) -> SummaryResponse:
        if message.stop_reason == "refusal":
            raise RefusalError(
                path, "Claude declined to summarise this text (stop_reason: refusal)"
            )
        text = "".join(b.text for b in message.content if b.type == "text").strip()
        if not text:
            raise RefusalError(
                path, f"Claude returned no text (stop_reason: {message.stop_reason})"
            )
        if message.stop_reason == "max_tokens":
            raise SummarizerError(
                path, "Claude's answer was cut at max_tokens; lower the prompt's demands"
            )
        usage = message.usage
        fresh = usage.input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        read = usage.cache_read_input_tokens or 0
        cost = 0.0
        if self._price is not None:
            cost = self._price.cost(fresh, usage.output_tokens, written, read, batch=batch)
        return SummaryResponse(text, fresh + written + read, usage.output_tokens, cost)

    # -- many requests: Message Batches -----------------------------------------------

    def run_many(
        self,
        requests: Sequence[SummaryRequest],
        progress: Callable[[SummaryRequest], None] | None = None,
    ) -> dict[str, SummaryResponse | SummarizerError]:
        if len(requests) <= self.batch_threshold:
            return super().run_many(requests, progress)
        # a request over the context window is map-reduced synchronously
        large = [r for r in requests if not self.fits(r)]
        out = super().run_many(large, progress) if large else {}
        batched = [r for r in requests if self.fits(r)]
        out.update(self._run_batch(batched, progress))
        return out

    def _run_batch(
        self,
        requests: Sequence[SummaryRequest],
        progress: Callable[[SummaryRequest], None] | None,
    ) -> dict[str, SummaryResponse | SummarizerError]:
        by_id = {f"summary-{i:05d}": r for i, r in enumerate(requests)}
        label = f"message batch of {len(requests)} summaries"
        entries: list[Any] = [{"custom_id": k, "params": self.params(r)} for k, r in by_id.items()]
        try:
            batch = self._api(label, lambda: self.client.messages.batches.create(requests=entries))
            log.info("anthropic: %s created (%s)", label, batch.id)
            self._wait(batch.id, label)
            rows = self._api(label, lambda: list(self.client.messages.batches.results(batch.id)))
        except SummarizerError as e:
            return {r.path: SummarizerError(r.path, e.message) for r in requests}
        out: dict[str, SummaryResponse | SummarizerError] = {}
        for row in rows:
            request = by_id.get(row.custom_id)
            if request is None:
                continue
            out[request.path] = self._batch_result(request, row.result)
            if progress:
                progress(request)
        for request in requests:
            if request.path not in out:
                out[request.path] = SummarizerError(request.path, "no result in the message batch")
                if progress:
                    progress(request)
        return out

    def _batch_result(
        self, request: SummaryRequest, result: Any
    ) -> SummaryResponse | SummarizerError:
        try:
            if result.type == "succeeded":
                return self._response(request.path, result.message, batch=True)
            if result.type == "errored":
                error = result.error.error
                kind = getattr(error, "type", "error")
                if kind in _RETRY_ERROR_TYPES:
                    log.warning("%s: %s in the batch; retrying it on its own", request.path, kind)
                    return self.run(request)
                return SummarizerError(
                    request.path, f"Anthropic {kind}: {getattr(error, 'message', '')}"
                )
            return SummarizerError(request.path, f"batch request {result.type}; run again")
        except SummarizerError as e:
            return e

    def _api(self, label: str, call: Callable[[], T]) -> T:
        """One batch API call (retried by the SDK like a message), its error as ours."""
        try:
            return call()
        except anthropic.APIError as e:
            raise _error(label, e, self.max_attempts) from None

    def _wait(self, batch_id: str, label: str) -> None:
        """Poll until the batch has ended, waiting longer each time; bounded by batch_max_wait."""
        deadline = time.monotonic() + self.batch_max_wait
        delay = self.batch_poll_seconds
        while True:
            batch = self._api(label, lambda: self.client.messages.batches.retrieve(batch_id))
            if batch.processing_status == "ended":
                return
            if time.monotonic() + delay > deadline:
                try:
                    self.client.messages.batches.cancel(batch_id)
                except anthropic.APIError as e:
                    log.warning("anthropic: could not cancel batch %s: %s", batch_id, e)
                raise SummarizerError(
                    label,
                    f"batch {batch_id} still {batch.processing_status} after "
                    f"{self.batch_max_wait:.0f} s; cancelled, run again",
                )
            counts = batch.request_counts
            log.info(
                "anthropic: batch %s %s (%d processing, %d succeeded); next check in %.0f s",
                batch_id,
                batch.processing_status,
                counts.processing,
                counts.succeeded,
                delay,
            )
            self.sleep(delay)
            delay = min(delay * 1.5, 300.0)


def _error(path: str, e: anthropic.APIError, attempts: int) -> SummarizerError:
    """The SDK's exception, after its retries, as ours: what the API said and how to fix it."""
    gave_up = f" (gave up after {attempts} attempts)"
    if isinstance(e, anthropic.APITimeoutError):
        return SummarizerError(path, "Anthropic API timed out" + gave_up)
    if isinstance(e, anthropic.APIConnectionError):
        return SummarizerError(path, "could not reach the Anthropic API" + gave_up)
    if isinstance(e, anthropic.APIStatusError):
        status = e.status_code
        body = e.body if isinstance(e.body, dict) else {}
        detail = body.get("error", {}) if isinstance(body.get("error"), dict) else {}
        kind = detail.get("type", "error")
        message = f"Anthropic API {status} {kind}: {detail.get('message', '')}".rstrip(": ")
        if status in _RETRY_STATUS or status >= 500:  # the statuses the SDK retries
            return SummarizerError(path, message + gave_up)
        if status == 401:
            message += "; check ANTHROPIC_API_KEY"
        return SummarizerError(path, message)
    return SummarizerError(path, f"Anthropic API error: {e}")
