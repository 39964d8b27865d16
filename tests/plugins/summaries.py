"""Fixtures: recording summarizers.

fake_summarizer    a FakeSummarizer (deterministic text, `history` of requests,
                   `fail_paths` / `refuse_paths` to make a summary fail); it is also
                   what `glossator.providers.get_summarizer` returns for
                   GLOSSATOR_SUMMARIZER=fake while the test runs: lent to the factory the
                   fakes' plugin registered (tests/fakes.py), given back in `finally`
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from glossator.providers import plugin
from tests.fakes import PLUGIN, FakeSummarizer


@pytest.fixture
def fake_summarizer() -> Iterator[FakeSummarizer]:
    fake = FakeSummarizer()
    registered = plugin(PLUGIN).summarizers
    previous = registered["fake"]
    registered["fake"] = lambda settings, argument: fake
    try:
        yield fake
    finally:
        registered["fake"] = previous
