"""The `server` fixture: `glossator serve` as a subprocess (127.0.0.1, port 0) on the
test PostgreSQL, with the recording fake embedder and summarizer (tests/fakes.py, named
by `server_env`), and the helpers
the end-to-end tests share (tokens, environment, repository creation, rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.fakes import plugin_env
from tests.gitserver_support import ServeProcess

TOKEN = "e2e-push-token"
ADMIN = "e2e-admin"


def server_env(tmp: Path, db_url: str | None, **extra: str) -> dict[str, str]:
    env = {
        "GLOSSATOR_DATA_DIR": str(tmp / "data"),
        "GLOSSATOR_REPOS_DIR": str(tmp / "repos"),
        "GLOSSATOR_PUSH_TOKENS": TOKEN,
        "GLOSSATOR_ADMIN_TOKEN": ADMIN,
        "GLOSSATOR_EMBEDDER": "fake",
        "GLOSSATOR_SUMMARIZER": "fake",
        "GLOSSATOR_JOB_RETRIES": "2",
        **plugin_env(),  # the fakes' plugin (ServeProcess drops the inherited GLOSSATOR_*)
    }
    if db_url:
        env["GLOSSATOR_DATABASE_URL"] = db_url
    env.update(extra)
    return env


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[ServeProcess]:
    """A running `glossator serve` (fakes for the models); stopped after the test."""
    proc = ServeProcess(tmp_path, server_env(tmp_path, db_url)).start()
    try:
        yield proc
    finally:
        proc.stop()


def create_repo(server: ServeProcess, name: str) -> None:
    r = server.create_repo(name, admin=ADMIN)
    assert r.status_code == 201, r.text


def rows(db_url: str, repository: str, branch: str = "main") -> dict[str, list[tuple[int, str]]]:
    """source_file → [(id, content)] for a branch."""
    out: dict[str, list[tuple[int, str]]] = {}
    with psycopg.connect(db_url) as conn:
        for file, row_id, content in conn.execute(
            "SELECT source_file, id, content FROM hierarchical_content_nodes"
            " WHERE repository = %s AND branch = %s ORDER BY source_file, chunk_index",
            (repository, branch),
        ):
            out.setdefault(file, []).append((row_id, content))
    return out


def indexed_commit(db_url: str, repository: str, branch: str = "main") -> str | None:
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT commit FROM indexed_commits WHERE repository = %s AND branch = %s",
            (repository, branch),
        ).fetchone()
    return row[0] if row else None
