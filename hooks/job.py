"""One indexing job: a branch's tip → summaries and sidecars committed back → rows reloaded.

    job = BranchIndexer(store, ReusingIndexer(embedder, summarizer), RowLoader(pool),
                        GitCommitBack(store))
    job.run("bastiat", "main", job_id=42)

`BranchIndexer` runs the steps against three collaborators, each a protocol here
and one module of hooks/: the `Indexer` (hooks.reuse.ReusingIndexer:
`indexer.indexing.run.index` with what the process keeps from job to job), the
`Loader` (hooks.loading.RowLoader: the rows in PostgreSQL) and the `CommitBack`
(hooks.commitback.GitCommitBack: a commit on the tip, the branch moved to it).

Steps (DESIGN §1), each safe to repeat, so a crash anywhere is repaired by
running the job again: read the tip *now* and the indexed commit (equal: done; no
tip: drop the branch's rows); run the indexer on the tip's tree, its rows and
vectors landing as they are cut (hooks.landing: search answers while the book
embeds); commit the changes on the tip, on no branch yet; reload the rows and
record the indexed commit in one transaction; then move the ref by
compare-and-swap once no push to the branch is under way (core.receiving). A push
that landed meanwhile wins: the job never fails nor starts over, and the next job
takes the rest, reusing what this one computed. Read the tip again: moved means
`Outcome.moved`, and a job follows (hooks.attempt). Problems are recorded with the
indexed commit, so the branch is *not fully indexed* and retried, unless they are
all the pushed files' own (`Outcome.user_problems`). The details and the races:
docs/push-pipeline.md, `job.py` and "Writers are not starved".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pygit2

from hooks.gitsource import GitTreeSource, branch_tip
from hooks.lease import Lease
from hooks.progress import JobProgress
from hooks.repositories import Repositories
from indexer.corpus.errors import Problem
from indexer.corpus.source import Changes, FileSource

if TYPE_CHECKING:  # the indexer is imported when a job runs, not with the server
    from indexer.indexing.run import IndexResult
    from indexer.indexing.sidecars import Landing

log = logging.getLogger(__name__)

MAX_PROBLEMS = 50  # kept per job and per branch; the count says how many there were

# What became of a commit-back: the branch is on it (`moved`); a push landed while it
# waited for the pushes under way, and the push's job commits back (`deferred`); a push
# moved the branch before the compare-and-swap, or won it (`raced`).
Moved = Literal["moved", "deferred", "raced"]


class Indexer(Protocol):
    """Frontmatter fixes, summaries and sidecars of a tree, as `Changes` (`IndexResult`)."""

    def index(
        self, source: FileSource, *, progress: JobProgress | None, landing: Landing | None = None
    ) -> IndexResult: ...


@dataclass
class Loaded:
    """What a load did to the rows of a branch."""

    loaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rows: int = 0
    problems: list[str] = field(default_factory=list)  # "rows: path: message" (errors)
    warnings: list[str] = field(default_factory=list)


class Loader(Protocol):
    """A branch's rows and its record: the commit they equal, and the problems left."""

    def indexed_state(self, repository: str, branch: str) -> tuple[str | None, list[str]]: ...

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
        """The rows made those of `target`'s sidecars, `target` recorded with `problems`
        and the rows' own, in one transaction (`lease` checked first: hooks.lease)."""
        ...

    def drop_branch(self, repository: str, branch: str, lease: Lease | None = None) -> list[str]:
        """Every row and the record of a deleted branch gone; the files dropped."""
        ...

    def landing(self, repository: str, branch: str, lease: Lease | None = None) -> Landing | None:
        """Where the indexer loads rows before their vectors (None: all at the end)."""
        ...

    def record_commit_back(self, repository: str, branch: str, tip: str, new: str) -> None:
        """The branch moved from `tip` to its commit-back `new`."""
        ...


class CommitBack(Protocol):
    """The indexer's changes committed on the tip, then the branch moved to that commit."""

    def commit(
        self,
        repo: pygit2.Repository,
        tip: str,
        changes: Changes,
        *,
        job_id: int | None,
        summary: str,
    ) -> str | None: ...

    def move(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        tip: str,
        new: str,
        *,
        job_id: int | None,
    ) -> Moved: ...


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
    resumed: int = 0  # vectors taken back from rows an interrupted attempt had loaded
    races: int = 0  # 1 when a push won the commit-back's compare-and-swap
    deferred: int = 0  # 1 when the commit-back yielded to a push that landed (its job's now)
    moved: bool = False  # the branch's tip is not `indexed` any more: a job must follow
    problems: list[str] = field(default_factory=list)  # errors: the branch is not fully indexed
    # every problem is one the pushed files decide (indexer.corpus.errors.Problem.user; the rows a
    # loader refused because of them follow): the same tip fails the same way, so the
    # queue waits for a push instead of retrying
    user_problems: bool = False
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def stats(self) -> dict[str, Any]:
        """The JSON the run's history keeps (glossator_job_runs.stats)."""
        return {
            "committed": self.committed,
            "changes": self.changes,
            "loaded": self.loaded,
            "deleted": self.deleted,
            "rows": self.rows,
            "embedded": self.embedded,
            "resumed": self.resumed,
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


def problem_line(problem: Problem) -> str:
    """`path: message`, one line (severity is said by where the line is kept)."""
    return " ".join(f"{problem.path}: {problem.message}".split())[:500]


class BranchIndexer:
    """Runs jobs for the repositories of `store`: `indexer` on the tip's tree, the rows
    through `loader`, the changes committed back by `commit_back`."""

    def __init__(
        self,
        store: Repositories,
        indexer: Indexer,
        loader: Loader,
        commit_back: CommitBack,
    ) -> None:
        self.store = store
        self.indexer = indexer
        self.loader = loader
        self.commit_back = commit_back

    def run(
        self,
        repository: str,
        branch: str,
        *,
        job_id: int | None = None,
        progress: JobProgress | None = None,
        lease: Lease | None = None,
    ) -> Outcome:
        """`lease`: this attempt's hold on its job, checked before each write (hooks.lease);
        TakenOver is raised, nothing more written, once another attempt has the job."""
        started = time.perf_counter()
        outcome = Outcome()
        repo = self.store.open(repository)
        self._attempt(repo, repository, branch, job_id, outcome, progress, lease)
        if progress is not None:
            progress.phase("done")
        if outcome.indexed is not None:
            now = branch_tip(repo, branch)
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
        progress: JobProgress | None,
        lease: Lease | None,
    ) -> None:
        """Steps 1 to 4 (the module's docstring)."""
        tip = branch_tip(repo, branch)
        outcome.tip = tip
        indexed, left = self.loader.indexed_state(repository, branch)
        if tip is None:
            outcome.deleted = self.loader.drop_branch(repository, branch, lease)
            outcome.note = "branch deleted: rows dropped"
            return
        if indexed == tip and not left:
            outcome.indexed, outcome.note = tip, "already indexed"
            return

        result = self._index(repo, repository, branch, tip, outcome, progress, lease)
        target = tip
        new = None
        if len(result.changes):
            if progress is not None:
                progress.phase("commit")
            new = self.commit_back.commit(
                repo, tip, result.changes, job_id=job_id, summary=result.stats.line()
            )
            if new is not None:
                outcome.committed, outcome.changes, target = new, len(result.changes), new

        # The rows first: search never waits for the commit-back, which may wait for
        # pushes (hooks.commitback). `new`, on a branch or not, holds the sidecars of `tip`.
        loaded = self.loader.load(
            repo,
            repository,
            branch,
            target,
            job_id=job_id,
            problems=outcome.problems,
            progress=progress,
            lease=lease,
        )
        outcome.problems += loaded.problems
        outcome.warnings += loaded.warnings
        outcome.loaded, outcome.deleted, outcome.rows = loaded.loaded, loaded.deleted, loaded.rows
        outcome.indexed = target
        if new is not None:
            if lease is not None:  # not taken over since the load: the branch is ours to move
                lease.check()
            self._move(repo, repository, branch, tip, new, job_id, outcome)

    def _index(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        tip: str,
        outcome: Outcome,
        progress: JobProgress | None,
        lease: Lease | None,
    ) -> IndexResult:
        """The indexer on the tip's tree; its problems kept in `outcome`."""
        # rows before vectors: the indexer loads them as soon as they are cut (hooks.landing)
        landing = self.loader.landing(repository, branch, lease)
        result = self.indexer.index(GitTreeSource.at(repo, tip), progress=progress, landing=landing)
        outcome.resumed = result.stats.sidecars.resumed
        # what this job's own embedding calls returned: the embedder is shared with search
        outcome.embedded += result.stats.sidecars.embedding.texts
        errors = []
        for problem in result.problems:
            if problem.severity == "error":
                errors.append(problem)
                outcome.problems.append(problem_line(problem))
                log.warning("%s/%s: %s", repository, branch, problem)
            else:
                outcome.warnings.append(problem_line(problem))
        outcome.user_problems = bool(errors) and all(p.user for p in errors)
        return result

    def _move(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        tip: str,
        new: str,
        job_id: int | None,
        outcome: Outcome,
    ) -> None:
        """The branch moved to the commit-back `new`, or left to a push (hooks.commitback).
        The rows of `new` are loaded already (the module's docstring, step 4)."""
        moved = self.commit_back.move(repo, repository, branch, tip, new, job_id=job_id)
        if moved == "deferred":
            outcome.deferred = 1
            outcome.note = "a push landed while the commit-back waited: its job commits back"
        elif moved == "raced":
            outcome.races = 1
            outcome.note = "a push moved the branch during the job"
        else:  # the tip search's freshness compares with
            self.loader.record_commit_back(repository, branch, tip, new)
