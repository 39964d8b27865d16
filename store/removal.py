"""Forgetting a repository or a branch: its rows, what the loader and search keep of it
(`glossator repo delete`, a deleted branch's job).

    rows = drop_repository(conn, "livre")     # in the caller's transaction
    files = drop_branch(conn, "livre", "draft")

The rows go through the loader (`sync_files` with every file deleted), branch by branch,
so the catalogue (`branch_languages`), the chapter documents and `loaded_files` lose their
entries as a push that deletes the files would make them; then the branch records (indexed commits,
tips, HEAD). The queue's jobs are the push pipeline's (hooks.queue). A deleted branch
loses its rows the same way, and its indexed commit (hooks.loading, in the job).
"""

from __future__ import annotations

import psycopg

from indexer.corpus.source import MemorySource
from store import commits
from store.loader import sync_files


def drop_repository(conn: psycopg.Connection, repository: str) -> int:
    """Drop every row and record of `repository`; how many rows were dropped."""
    (rows,) = conn.execute(
        "SELECT count(*) FROM hierarchical_content_nodes WHERE repository = %s", (repository,)
    ).fetchone() or (0,)
    branches = conn.execute(
        "SELECT DISTINCT branch FROM loaded_files WHERE repository = %s"
        " UNION SELECT DISTINCT branch FROM branch_languages WHERE repository = %s ORDER BY 1",
        (repository, repository),
    ).fetchall()
    for (branch,) in branches:
        drop_branch(conn, repository, branch)
    for table in ("indexed_commits", "branch_tips", "repository_heads"):
        conn.execute(f"DELETE FROM {table} WHERE repository = %s", (repository,))
    return int(rows)


def drop_branch(conn: psycopg.Connection, repository: str, branch: str) -> list[str]:
    """Drop every row of `repository`/`branch` through the loader, and its indexed commit;
    the files dropped (those with rows or a `loaded_files` record)."""
    files = conn.execute(
        "SELECT source_file FROM loaded_files WHERE repository = %s AND branch = %s"
        " UNION SELECT DISTINCT source_file FROM hierarchical_content_nodes"
        " WHERE repository = %s AND branch = %s",
        (repository, branch, repository, branch),
    ).fetchall()
    dropped = [f for (f,) in files]
    sync_files(
        conn,
        repository=repository,
        branch=branch,
        source=MemorySource({}),
        changed=[],
        deleted=dropped,
    )
    commits.forget_indexed(conn, repository, branch)
    return dropped
