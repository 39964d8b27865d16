"""A whole corpus tree → rows: find what differs from what was loaded, then load it.

    sync_tree(db_or_conn, repository=…, branch=…, source=…) -> LoadResult

What `glossator load`, a branch's first index and a retry use; a push loads the
files its diff names with store.loader.sync_files directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from core.vocabulary import DEFAULT_BRANCH, SIDECAR_SUFFIX
from indexer.corpus.errors import Problem
from indexer.corpus.source import FileSource
from store.loader import LoadResult, Progress, md_path, sidecar_digest, stored_files, sync_files


@dataclass
class TreeChanges:
    changed: list[str]
    unchanged: list[str]
    deleted: list[str]
    warnings: list[Problem]


def tree_changes(
    conn: psycopg.Connection, *, repository: str, branch: str, source: FileSource
) -> TreeChanges:
    """What differs between a corpus tree's sidecars and the branch's rows.

    Changed: every sidecar whose bytes differ from those the rows were loaded
    from (so a new hash or a new model, even on the same text). Deleted: files
    with rows but neither a sidecar nor a `.md` any more.
    """
    paths = set(source.paths())
    sidecars = sorted(p for p in paths if p.endswith(".md" + SIDECAR_SUFFIX))
    stored = stored_files(conn, repository, branch)
    changed: list[str] = []
    unchanged: list[str] = []
    warnings: list[Problem] = []
    for side in sidecars:
        path = md_path(side)
        have = stored.get(path)
        if have is None or have.sidecar_hash != sidecar_digest(source.read(side)):
            changed.append(path)
        else:
            unchanged.append(path)
    with_sidecar = {md_path(s) for s in sidecars}
    for path in sorted(p for p in paths if p.endswith(".md") and p not in with_sidecar):
        if path.startswith("corpus/"):
            warnings.append(
                Problem(path, "has no sidecar: not loaded (run `glossator index`)", "warning")
            )
    deleted = sorted(p for p in stored if p not in with_sidecar and p not in paths)
    # a file whose .md still exists but lost its sidecar keeps its rows (see warnings)
    return TreeChanges(changed, unchanged, deleted, warnings)


def sync_tree(
    db_or_conn: Any,
    *,
    repository: str,
    branch: str = DEFAULT_BRANCH,
    source: FileSource,
    progress: Progress | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> LoadResult:
    """Sync a whole corpus tree (the CLI): find what changed, then `sync_files`, one transaction.

    `db_or_conn` is a `store.db.Database` (its pool; committed here) or a
    connection (the caller commits). `on_plan(n)` is told how many files will be
    visited, for a progress bar.
    """
    if isinstance(db_or_conn, psycopg.Connection):
        return _sync_tree(db_or_conn, repository, branch, source, progress, on_plan)
    with db_or_conn.pool.connection() as conn:
        return _sync_tree(conn, repository, branch, source, progress, on_plan)


def _sync_tree(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    source: FileSource,
    progress: Progress | None,
    on_plan: Callable[[int], None] | None,
) -> LoadResult:
    started = time.perf_counter()
    with conn.transaction():
        plan = tree_changes(conn, repository=repository, branch=branch, source=source)
        if on_plan:
            on_plan(len(plan.changed) + len(plan.deleted))
        result = sync_files(
            conn,
            repository=repository,
            branch=branch,
            source=source,
            changed=plan.changed,
            deleted=plan.deleted,
            progress=progress,
        )
    result.skipped[:0] = plan.unchanged
    result.problems[:0] = plan.warnings
    result.seconds = time.perf_counter() - started
    return result
