"""The job's rows: a branch's sidecars loaded into PostgreSQL, its indexed commit recorded.

    loader = RowLoader(db.pool)
    loader.indexed_state("livre", "main")           # (indexed commit, problems it left)
    loaded = loader.load(repo, "livre", "main", target, job_id=42, problems=[...])
    loader.drop_branch("livre", "main")             # a deleted branch: rows and record gone

`load` reloads, in one transaction, the rows of the Markdown files that differ
between the indexed commit and `target` (renames = a deletion and an addition;
`store.loader.sync_files`), or compares every sidecar with the rows
(`store.tree.sync_tree`) when the indexed commit is unknown, no longer in git, or
left refused rows; and records `target` as the branch's indexed commit with the
problems of the job (`store.commits.record_indexed`). Then it merges the pg_search
segments those writes left (`store.segments.maintain`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import psycopg
import pygit2
from psycopg_pool import ConnectionPool
from pygit2.enums import DeltaStatus, DiffFind

from core.vocabulary import SIDECAR_SUFFIX
from hooks.gitsource import GitTreeSource, has_commit
from hooks.job import MAX_PROBLEMS, Loaded, problem_line
from hooks.landing import RowLanding
from hooks.lease import Lease, lock_branch
from hooks.progress import JobProgress
from indexer.corpus.source import FileSource
from store import commits, removal, segments
from store.loader import LoadResult, md_path, sync_files
from store.tips import move_tip
from store.tree import sync_tree

log = logging.getLogger(__name__)


@dataclass
class FileDiff:
    """Paths touched between two commits (renames split into a deletion and an addition)."""

    written: set[str] = field(default_factory=set)  # added, modified, rename targets
    removed: set[str] = field(default_factory=set)  # deleted, rename sources
    renames: list[tuple[str, str]] = field(default_factory=list)


def changed_files(repo: pygit2.Repository, old: str | None, new: str) -> FileDiff:
    """What differs from commit `old` (None: nothing, a new branch) to commit `new`."""
    new_tree = repo[new].peel(pygit2.Commit).tree
    if old is None:
        diff = new_tree.diff_to_tree(swap=True)
    else:
        diff = repo[old].peel(pygit2.Commit).tree.diff_to_tree(new_tree)
        diff.find_similar(flags=DiffFind.FIND_RENAMES)
    out = FileDiff()
    for delta in diff.deltas:
        if delta.status == DeltaStatus.DELETED:
            out.removed.add(delta.old_file.path)
        elif delta.status == DeltaStatus.RENAMED:
            out.removed.add(delta.old_file.path)
            out.written.add(delta.new_file.path)
            out.renames.append((delta.old_file.path, delta.new_file.path))
        else:
            out.written.add(delta.new_file.path)
    return out


def corpus_paths(paths: set[str]) -> set[str]:
    """The Markdown files (by their .md path) whose rows a set of changed paths concerns."""
    out = set()
    for path in paths:
        if path.endswith(".md") or path.endswith(".md" + SIDECAR_SUFFIX):
            out.add(md_path(path))
    return out


class _FileCount:
    """The load's files done / planned, told to the job's progress."""

    def __init__(self, progress: JobProgress | None) -> None:
        self.progress = progress
        self.done = 0
        self.total = 0

    def planned(self, n: int) -> None:
        self.total = n

    def loaded(self, _path: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress.loaded(self.done, self.total)


class RowLoader:
    """The rows of the job's branches, through `pool` (hooks.job.Loader)."""

    def __init__(self, pool: ConnectionPool, vector_slice: int | None = None) -> None:
        self.pool = pool
        self.vector_slice = vector_slice  # None: the indexer's (indexer.indexing.sidecars.SLICE)

    def indexed_state(self, repository: str, branch: str) -> tuple[str | None, list[str]]:
        """The commit the rows equal, and the problems its index left (empty: complete)."""
        with self.pool.connection() as conn:
            return commits.indexed_state(conn, repository, branch)

    def load(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        target: str,
        *,
        job_id: int | None,
        problems: list[str],
        progress: JobProgress | None = None,
        lease: Lease | None = None,
    ) -> Loaded:
        """Make the branch's rows those of `target`'s sidecars and record `target` as its
        indexed commit, with `problems` (the indexer's) and the rows' own."""
        source: FileSource = GitTreeSource.at(repo, target)
        files = _FileCount(progress)
        loaded = Loaded()
        if progress is not None:
            progress.phase("loading")
        with self.pool.connection() as conn, conn.transaction():
            # Serialise with any other writer of this branch's record (belt and braces:
            # the queue already runs one job per branch).
            # (and this attempt's lease under it: another attempt's writes wait for ours)
            lock_branch(conn, repository, branch, lease)
            result = self._sync(conn, repo, repository, branch, source, target, files)
            for p in result.problems:
                if p.severity == "error":
                    loaded.problems.append("rows: " + problem_line(p))
                else:
                    loaded.warnings.append(problem_line(p))
            kept = [*problems, *loaded.problems][:MAX_PROBLEMS]
            commits.record_indexed(conn, repository, branch, target, job_id, kept)
        loaded.loaded = list(result.loaded)
        loaded.deleted = list(result.deleted)
        loaded.rows = result.rows
        if result.loaded or result.deleted:
            self._maintain(repository, branch)
        if progress is not None:
            progress.loaded(files.done, files.total, result.rows)
        return loaded

    def _sync(
        self,
        conn: psycopg.Connection,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        source: FileSource,
        target: str,
        files: _FileCount,
    ) -> LoadResult:
        """The files that differ since the indexed commit, or every sidecar against the rows."""
        current, left = commits.indexed_state(conn, repository, branch)
        refused = [p for p in left if p.startswith("rows:")]
        if current is None or current == target or refused or not has_commit(repo, current):
            # First index of the branch, its record names a commit git no longer has
            # (the repository was recreated), or files were refused last time (a
            # retry at the same commit): compare every sidecar with the rows.
            return sync_tree(
                conn,
                repository=repository,
                branch=branch,
                source=source,
                progress=files.loaded,
                on_plan=files.planned,
            )
        diff = changed_files(repo, current, target)
        written = corpus_paths(diff.written)
        removed = corpus_paths(diff.removed)
        changed = sorted(
            p for p in written | removed if source.exists(p) or source.exists(p + ".jsonl")
        )
        gone = sorted(p for p in removed - set(changed))
        files.planned(len(changed) + len(gone))
        return sync_files(
            conn,
            repository=repository,
            branch=branch,
            source=source,
            changed=changed,
            deleted=gone,
            progress=files.loaded,
        )

    def landing(self, repository: str, branch: str, lease: Lease | None = None) -> RowLanding:
        """The indexer's rows before vectors, onto this pool (hooks.landing)."""
        return RowLanding(self.pool, repository, branch, self.vector_slice, lease)

    def drop_branch(self, repository: str, branch: str, lease: Lease | None = None) -> list[str]:
        """A deleted branch: drop its rows and its record (store.removal); the files dropped."""
        with self.pool.connection() as conn, conn.transaction():
            if lease is not None:
                lock_branch(conn, repository, branch, lease)
            return removal.drop_branch(conn, repository, branch)

    def record_commit_back(self, repository: str, branch: str, tip: str, new: str) -> None:
        """The branch moved from `tip` to its commit-back `new`: the tip search's freshness
        compares with (store.tips)."""
        with self.pool.connection() as conn:
            move_tip(conn, repository, branch, tip, new)

    def _maintain(self, repository: str, branch: str) -> None:
        """After a job that changed rows, committed: merge the pg_search segments its
        writes left (store.segments.maintain; bench/reloads.py measured why). A failure
        costs search speed, never the job: logged, and autovacuum comes later."""
        started = time.perf_counter()
        try:
            with self.pool.connection() as conn:
                conn.autocommit = True
                try:
                    ran = segments.maintain(conn)
                finally:
                    conn.autocommit = False
        except psycopg.Error as e:
            log.warning(
                "%s/%s: index maintenance after the load failed (%s: %s); searches may be "
                "slower until autovacuum runs",
                repository,
                branch,
                type(e).__name__,
                e.sqlstate,
            )
            return
        if ran:
            log.info(
                "%s/%s: BM25 index segments merged in %.2f s",
                repository,
                branch,
                time.perf_counter() - started,
            )
