"""Anthropic list prices, US dollars per million tokens (platform.claude.com/docs, pricing).

Prompt-cache writes (5-minute TTL) cost 1.25× the input price and cache reads
0.1× (except where the table says otherwise); the Message Batches API halves
every price. A model missing here has no known price: its cost is recorded as
unknown (null), never as zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input: float  # $ / MTok of uncached input
    output: float  # $ / MTok of output
    cache_read: float | None = None  # $ / MTok; default 0.1 × input

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
        *,
        batch: bool = False,
    ) -> float:
        read = self.cache_read if self.cache_read is not None else self.input * 0.1
        dollars = (
            input_tokens * self.input
            + cache_write_tokens * self.input * 1.25
            + cache_read_tokens * read
            + output_tokens * self.output
        ) / 1_000_000
        return dollars * 0.5 if batch else dollars


# Prices per model alias; a dated snapshot ("claude-haiku-4-5-20251001") costs what its
# alias costs. Other names are not guessed from their prefix: a new version may be priced
# differently.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": Price(10.0, 50.0, 0.25),
    "claude-mythos-5-1": Price(10.0, 50.0, 0.25),
    "claude-fable-5": Price(10.0, 50.0, 1.0),
    "claude-mythos-5": Price(10.0, 50.0, 1.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}


_SNAPSHOT = re.compile(r"-\d{8}$")


def price_of(model: str) -> Price | None:
    """The price of `model` or of the family its dated snapshot belongs to, else None."""
    if model in PRICES:
        return PRICES[model]
    base = _SNAPSHOT.sub("", model)
    return PRICES.get(base)
