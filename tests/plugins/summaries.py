"""Fixtures: recording summarizers.

fake_summarizer    a FakeSummarizer (deterministic text, `history` of requests,
                   `fail_paths` / `refuse_paths` to make a summary fail); it is also
                   what `glossator.providers.get_summarizer` returns for GLOSSATOR_SUMMARIZER=fake while
                   the test runs (registered here, removed in `finally`)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from glossator.providers import SUMMARIZERS
from indexer.summaries.fake import FakeSummarizer


@pytest.fixture
def fake_summarizer() -> Iterator[FakeSummarizer]:
    fake = FakeSummarizer()
    previous = SUMMARIZERS["fake"]
    SUMMARIZERS["fake"] = lambda settings, argument: fake
    try:
        yield fake
    finally:
        SUMMARIZERS["fake"] = previous
