"""A recording summarizer for tests: deterministic text, a `history` of requests.

The text depends on the request's prompt, title and inputs, so a changed chapter changes
its summary and the change propagates upwards exactly as with a real model.
`fail_paths` makes the requests of those summary paths fail (an LLM error);
`refuse_paths` makes them a refusal.
"""

from __future__ import annotations

import hashlib

from indexer.providers.summarizers.base import (
    RefusalError,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)


class FakeSummarizer(Summarizer):
    provider = "fake"
    model = "fake-1"
    uses_prompt = True

    def __init__(
        self,
        *,
        fail_paths: set[str] | None = None,
        refuse_paths: set[str] | None = None,
        context_tokens: int | None = None,
        price_per_token: float = 0.0,
    ) -> None:
        super().__init__(backoff_seconds=0.0, sleep=lambda _s: None)
        self.history: list[SummaryRequest] = []
        self.fail_paths = set(fail_paths or ())
        self.refuse_paths = set(refuse_paths or ())
        self.context_tokens = context_tokens
        self.price_per_token = price_per_token

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        return (input_tokens + output_tokens) * self.price_per_token

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.history.append(request)
        if request.path in self.fail_paths:
            raise SummarizerError(request.path, "fake failure (told to fail for this path)")
        if request.path in self.refuse_paths:
            raise RefusalError(request.path, "the model refused to summarise (fake refusal)")
        digest = hashlib.sha256((request.prompt + request.user_message()).encode()).hexdigest()[:12]
        text = (
            f"Résumé de « {request.title} » (niveau {request.level}, "
            f"{len(request.inputs)} entrées, empreinte {digest})."
        )
        tokens_in = sum(len(i.text.split()) for i in request.inputs)
        tokens_out = len(text.split())
        return SummaryResponse(
            text, tokens_in, tokens_out, self.price(tokens_in, tokens_out) or 0.0
        )

    @property
    def paths(self) -> list[str]:
        """The summary paths requested, in call order."""
        return [r.path for r in self.history]
