"""One indexing job: a branch's tip → summaries and sidecars committed back → rows reloaded.

    BranchIndexer(store, pool, embedder=…, summarizer=…).run("bastiat", "main", job_id=42)

Steps (DESIGN §1), each safe to repeat, so a crash anywhere is repaired by
running the job again:

1. Read the tip of the branch *now* (a job names a branch, not a commit) and the
   commit whose rows the database holds (`indexed_commits`). Equal: done. No tip
   (the branch was deleted): drop its rows and its record, done.
2. Run the indexer on the tip's tree, read straight from git (`GitTreeSource`).
3. Changes? Commit them on the tip (author Glossator, trailer `Glossator-Job: N`),
   on no branch yet.
4. In one transaction: reload the rows of the files that differ between the
   indexed commit and the new one (renames and deletions included; the whole
   tree when the indexed commit is unknown) and record the new indexed commit.
   Then move the ref to the commit-back by compare-and-swap, once no push to the
   branch is under way (hooks.receiving: moving it would refuse that push; when
   the push lands, the commit-back is its job's). The rows come first, so search
   never waits for that (DESIGN §1 lists the commit-back before the load; either
   order is safe to repeat). A push that landed meanwhile wins and is never
   overwritten; the job has finished the tip it had: the rows are those of its
   commit-back (a commit on no branch, child of the tip it read), and the next job
   (the push's, queued behind this one) takes the rest, reusing what this one
   computed (the indexer's caches). A job that loses races never fails and never
   starts over. The commit-back is a local ref update, so it fires no hook; the
   next run finds tip == indexed. A crash between the load and the ref update
   leaves indexed ≠ tip: the next job commits back on that tip again.
5. Read the tip again: when it is no longer what was indexed, `Outcome.moved`
   tells the service to make sure a job follows.

Problems (error severity: a summary that could not be made, a file whose rows
were refused) do not stop the job, but they are recorded with the indexed
commit (`indexed_commits.problems`): the branch is then *not fully indexed*, a
later job at the same tip does the work again instead of saying "already
indexed", and the service schedules that retry — unless every problem is one
the pushed files decide (`Outcome.user_problems`: a file the corpus reader
cannot use, and the rows refused because of it), which only a push can fix.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pygit2

from core.vocabulary import SIDECAR_SUFFIX
from hooks.commits import changed_files, commit_changes, commit_message, move_ref
from hooks.gitsource import GitTreeSource
from hooks.progress import JobProgress
from hooks.receiving import pushes_under_way
from hooks.repositories import Repositories
from hooks.reuse import ReusingEmbedder, ReusingSummarizer
from indexer.cache import IndexCaches
from indexer.embedders.base import BaseEmbedder
from indexer.errors import Problem
from indexer.source import FileSource, MemorySource
from indexer.summaries.base import Summarizer
from store import commits, content, segments
from store.loader import md_path, sync_files
from store.tips import move_tip
from store.tree import sync_tree

log = logging.getLogger(__name__)

MAX_PROBLEMS = 50  # kept per job and per branch; the count says how many there were
# How long a commit-back waits for the pushes under way on its branch (hooks.receiving)
# before it moves the branch anyway: a round figure, many times a push's few seconds,
# short enough that pushes that never stop delay the sidecars' commit, never the rows
# (loaded before), and hold a worker that long at most.
COMMIT_BACK_WAIT_S = 30.0
RECEIVE_POLL_S = 0.05  # how often it looks: a push's hooks alone take ~0.3 s
IndexFn = Callable[..., Any]  # indexer.pipeline.index(source, *, embedder, summarizer, …)


@dataclass
class Outcome:
    """What a job did; stored as the run's `stats` and shown by `glossator status`."""

    tip: str | None = None
    indexed: str | None = None  # the commit the rows now equal
    committed: str | None = None  # the commit-back, when there was one
    changes: int = 0  # files written or deleted by the commit-back
    loaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rows: int = 0
    embedded: int = 0  # texts sent to the embedder
    races: int = 0  # 1 when a push won the commit-back's compare-and-swap
    deferred: int = 0  # 1 when the commit-back yielded to a push that landed (its job's now)
    moved: bool = False  # the branch's tip is not `indexed` any more: a job must follow
    problems: list[str] = field(default_factory=list)  # errors: the branch is not fully indexed
    # every problem is one the pushed files decide (indexer.errors.Problem.user; the rows a
    # loader refused because of them follow): the same tip fails the same way, so the
    # service waits for a push instead of retrying
    user_problems: bool = False
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def stats(self) -> dict[str, Any]:
        return {
            "committed": self.committed,
            "changes": self.changes,
            "loaded": self.loaded,
            "deleted": self.deleted,
            "rows": self.rows,
            "embedded": self.embedded,
            "races": self.races,
            "deferred": self.deferred,
            "moved": self.moved,
            "problems": self.problems[:MAX_PROBLEMS],
            "problem_count": len(self.problems),
            "user_problems": self.user_problems,
            "warnings": self.warnings[:MAX_PROBLEMS],
            "seconds": round(self.seconds, 3),
            "note": self.note,
        }


def _default_index() -> IndexFn:
    from indexer.pipeline import index  # imported when a job runs, not with the server

    return index


def corpus_paths(paths: set[str]) -> set[str]:
    """The Markdown files (by their .md path) whose rows a set of changed paths concerns."""
    out = set()
    for path in paths:
        if path.endswith(".md") or path.endswith(".md" + SIDECAR_SUFFIX):
            out.add(md_path(path))
    return out


class BranchIndexer:
    """Runs jobs for the repositories of `store`, loading rows through `pool`."""

    def __init__(
        self,
        store: Repositories,
        pool: Any,  # psycopg_pool.ConnectionPool (store.db.Database.pool)
        *,
        embedder: Any,
        summarizer: Any,
        index_fn: IndexFn | None = None,
        commit_back_wait_s: float = COMMIT_BACK_WAIT_S,
    ) -> None:
        self.store = store
        self.commit_back_wait_s = commit_back_wait_s
        self.pool = pool
        # What one attempt computed serves the next attempts and jobs (hooks.reuse).
        self.embedder = (
            ReusingEmbedder(embedder) if isinstance(embedder, BaseEmbedder) else embedder
        )
        self.summarizer = (
            ReusingSummarizer(summarizer) if isinstance(summarizer, Summarizer) else summarizer
        )
        self.index_fn = index_fn
        # parsed files, hashes, manifests by blob id: a job re-reads only what changed
        self.caches = IndexCaches()

    def indexed_commit(self, conn: psycopg.Connection, repository: str, branch: str) -> str | None:
        return self.indexed_state(conn, repository, branch)[0]

    def indexed_state(
        self, conn: psycopg.Connection, repository: str, branch: str
    ) -> tuple[str | None, list[str]]:
        """The commit the rows equal, and the problems its index left (empty: complete)."""
        return commits.indexed_state(conn, repository, branch)

    def run(
        self,
        repository: str,
        branch: str,
        *,
        job_id: int | None = None,
        progress: JobProgress | None = None,
    ) -> Outcome:
        started = time.perf_counter()
        outcome = Outcome()
        repo = self.store.open(repository)
        self._attempt(repo, repository, branch, job_id, outcome, progress)
        if progress is not None:
            progress.phase("done")
        if outcome.indexed is not None:
            now = _tip(repo, branch)
            outcome.moved = now is not None and now != outcome.indexed
        outcome.seconds = time.perf_counter() - started
        log.info(
            "indexed %s/%s at %s: %d files changed, %d loaded, %d deleted, %d embedded, %.2f s%s",
            repository,
            branch,
            (outcome.indexed or "-")[:12],
            outcome.changes,
            len(outcome.loaded),
            len(outcome.deleted),
            outcome.embedded,
            outcome.seconds,
            "; the branch moved meanwhile: the next job indexes its new tip"
            if outcome.moved
            else "",
        )
        return outcome

    def _attempt(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        job_id: int | None,
        outcome: Outcome,
        progress: JobProgress | None = None,
    ) -> None:
        tip = _tip(repo, branch)
        outcome.tip = tip
        with self.pool.connection() as conn:
            indexed, left = self.indexed_state(conn, repository, branch)
        if tip is None:
            self._drop_branch(repository, branch, outcome)
            return
        if indexed == tip and not left:
            outcome.indexed, outcome.note = tip, "already indexed"
            return

        source = GitTreeSource.at(repo, tip)
        index = self.index_fn or _default_index()
        extra = {"progress": progress} if progress is not None else {}
        result = index(
            source,
            embedder=self.embedder,
            summarizer=self.summarizer,
            caches=self.caches,
            **extra,
        )
        # what this job's own embedding calls returned: the embedder is shared with search
        outcome.embedded += result.stats.sidecars.embedding.texts
        errors = []
        for problem in getattr(result, "problems", []):
            if getattr(problem, "severity", "error") == "error":
                errors.append(problem)
                outcome.problems.append(_problem_line(problem))
                log.warning("%s/%s: %s", repository, branch, problem)
            else:
                outcome.warnings.append(_problem_line(problem))
        outcome.user_problems = bool(errors) and all(getattr(p, "user", False) for p in errors)

        target = tip
        changes = result.changes
        new = None
        if len(changes):
            if progress is not None:
                progress.phase("commit")
            message = commit_message(tip, job_id, _summary(result))
            new = commit_changes(repo, tip, changes, message=message)
            if new is not None:
                outcome.committed, outcome.changes, target = new, len(changes), new

        # The rows first: search never waits for the commit-back, which may wait for
        # pushes (below). `new`, on a branch or not, holds the sidecars of `tip`.
        self._load(repo, repository, branch, indexed, target, job_id, outcome, progress)
        outcome.indexed = target
        if new is not None:
            self._commit_back(repo, repository, branch, tip, new, job_id, outcome)

    def _commit_back(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        tip: str,
        new: str,
        job_id: int | None,
        outcome: Outcome,
    ) -> None:
        """Move the branch from `tip` to the commit-back `new`, yielding to pushes.

        While a push to the branch is being received, or one was refused a moment ago
        (its writer is pulling to push again: hooks.receiving), moving the branch would
        refuse it: wait, at most `commit_back_wait_s`. When a push lands meanwhile, the
        commit-back is left to its job (`deferred`); otherwise the compare-and-swap
        goes ahead. The rows of `new` are loaded already (docstring, step 3)."""
        path = self.store.path(repository)
        deadline = time.monotonic() + self.commit_back_wait_s
        yielded = False
        while time.monotonic() < deadline and pushes_under_way(path, branch, tip):
            yielded = True
            if _tip(repo, branch) != tip:
                break
            time.sleep(RECEIVE_POLL_S)
        if _tip(repo, branch) != tip:  # the compare-and-swap would fail: leave it
            if yielded:
                outcome.deferred = 1
                outcome.note = "a push landed while the commit-back waited: its job commits back"
            else:
                outcome.races = 1
                outcome.note = "a push moved the branch during the job"
            return
        reason = f"glossator: commit-back (job {job_id})"
        if not move_ref(path, branch, new, tip, reason=reason):
            # A push won. Its commits are the next job's; ours, on no branch,
            # holds the sidecars of `tip`, and its rows are loaded (docstring, step 3).
            outcome.races = 1
            outcome.note = "a push moved the branch during the job"
            return
        with self.pool.connection() as conn:  # the tip search's freshness compares with
            move_tip(conn, repository, branch, tip, new)

    def _load(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        indexed: str | None,
        target: str,
        job_id: int | None,
        outcome: Outcome,
        progress: JobProgress | None = None,
    ) -> None:
        source: FileSource = GitTreeSource.at(repo, target)
        files = {"done": 0, "total": 0}

        def loaded(_path: str) -> None:
            files["done"] += 1
            if progress is not None:
                progress.loaded(files["done"], files["total"])

        def planned(n: int) -> None:
            files["total"] = n

        if progress is not None:
            progress.phase("loading")
        with self.pool.connection() as conn, conn.transaction():
            # Serialise with any other writer of this branch's record (belt and braces:
            # the queue already runs one job per branch).
            commits.lock_branch(conn, repository, branch)
            current, left = self.indexed_state(conn, repository, branch)
            refused = [p for p in left if p.startswith("rows:")]
            if (
                current is not None
                and current != target
                and not refused
                and _has_commit(repo, current)
            ):
                diff = changed_files(repo, current, target)
                written = corpus_paths(diff.written)
                removed = corpus_paths(diff.removed)
                changed = sorted(
                    p for p in written | removed if source.exists(p) or source.exists(p + ".jsonl")
                )
                gone = sorted(p for p in removed - set(changed))
                planned(len(changed) + len(gone))
                result = sync_files(
                    conn,
                    repository=repository,
                    branch=branch,
                    source=source,
                    changed=changed,
                    deleted=gone,
                    progress=loaded,
                )
            else:
                # First index of the branch, its record names a commit git no longer has
                # (the repository was recreated), or files were refused last time (a
                # retry at the same commit): compare every sidecar with the rows.
                result = sync_tree(
                    conn,
                    repository=repository,
                    branch=branch,
                    source=source,
                    progress=loaded,
                    on_plan=planned,
                )
            for p in result.problems:
                if isinstance(p, Problem) and p.severity == "error":
                    outcome.problems.append("rows: " + _problem_line(p))
                elif isinstance(p, Problem):
                    outcome.warnings.append(_problem_line(p))
            commits.record_indexed(
                conn, repository, branch, target, job_id, outcome.problems[:MAX_PROBLEMS]
            )
        outcome.loaded = list(result.loaded)
        outcome.deleted = list(result.deleted)
        outcome.rows = result.rows
        if result.loaded or result.deleted:
            self._maintain(repository, branch)
        if progress is not None:
            progress.loaded(files["done"], files["total"], result.rows)

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

    def _drop_branch(self, repository: str, branch: str, outcome: Outcome) -> None:
        with self.pool.connection() as conn, conn.transaction():
            files = content.branch_files(conn, repository, branch)
            sync_files(
                conn,
                repository=repository,
                branch=branch,
                source=MemorySource({}),
                changed=[],
                deleted=files,
            )
            commits.forget_indexed(conn, repository, branch)
        outcome.deleted = files
        outcome.note = "branch deleted: rows dropped"


def _problem_line(problem: Any) -> str:
    """`path: message`, one line (severity is said by where the line is kept)."""
    path, message = getattr(problem, "path", ""), getattr(problem, "message", str(problem))
    return " ".join(f"{path}: {message}".split())[:500]


def _tip(repo: pygit2.Repository, branch: str) -> str | None:
    ref = repo.references.get(f"refs/heads/{branch}")
    return str(ref.resolve().target) if ref is not None else None


def _has_commit(repo: pygit2.Repository, commit: str) -> bool:
    try:
        repo[commit].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return True


def _summary(result: Any) -> str:
    stats = getattr(result, "stats", None)
    line = getattr(stats, "line", None)
    if callable(line):
        try:
            return str(line())
        except TypeError:
            return ""
    return ""
