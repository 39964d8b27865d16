"""Summaries by a local LLM server speaking the OpenAI chat API (llama.cpp, vLLM, Ollama…).

`GLOSSATOR_SUMMARIZER=openai-compatible:http://127.0.0.1:8000/v1` and
`GLOSSATOR_SUMMARIZER_MODEL=<model name>`: one `POST {base}/chat/completions`
per summary, temperature 0. A local server costs nothing, so cost is 0. Its
context window is not discoverable in a standard way; inputs over
`context_tokens` (8k by default) are map-reduced by the base class.
"""

from __future__ import annotations

from typing import Any

import httpx

from indexer.providers.summarizers.base import (
    RefusalError,
    RetryableError,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)


class OpenAICompatibleSummarizer(Summarizer):
    provider = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        context_tokens: int = 8192,
        timeout: float = 300.0,
        transport: httpx.BaseTransport | None = None,
        api_key: str | None = None,
        **retry: Any,
    ) -> None:
        super().__init__(**retry)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.context_tokens = context_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, transport=transport, headers=headers)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        url = f"{self.base_url}/chat/completions"
        payload = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": request.budget_tokens * 2 + 256,
            "messages": [
                {"role": "system", "content": request.prompt},
                {"role": "user", "content": request.user_message()},
            ],
        }
        try:
            response = self.client.post(url, json=payload)
        except httpx.TimeoutException:
            raise RetryableError(request.path, f"{url} timed out") from None
        except httpx.TransportError as e:
            raise RetryableError(request.path, f"could not reach {url}: {e}") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise RetryableError(
                request.path,
                f"{url} answered {response.status_code}",
                _retry_after(response),
            )
        if response.status_code != 200:
            raise SummarizerError(
                request.path, f"{url} answered {response.status_code}{_error_message(response)}"
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            text = (choice["message"].get("content") or "").strip()
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise SummarizerError(
                request.path, f"{url} did not answer in the chat completions format"
            ) from None
        finish = choice.get("finish_reason")
        if finish == "content_filter" or not text:
            raise RefusalError(request.path, f"the model returned no summary ({finish})")
        if finish == "length":
            raise SummarizerError(request.path, "the model's answer was cut at max_tokens")
        usage = data.get("usage") or {}
        return SummaryResponse(
            text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), 0.0
        )


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _error_message(response: httpx.Response) -> str:
    """The server's own error message, when it gives one in JSON (never the raw body: it
    may echo the text sent)."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        return ""
    return f": {str(message)[:200]}" if message else ""
