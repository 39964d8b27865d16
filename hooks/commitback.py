"""The commit-back: the indexer's changes as a commit on the tip, and the branch moved to it.

    commit_back = GitCommitBack(store)
    new = commit_back.commit(repo, tip, changes, job_id=42, summary="…")  # on no branch yet
    ...                                                   # the job loads the rows of `new`
    commit_back.move(repo, "livre", "main", tip, new, job_id=42)  # "moved", "deferred", "raced"

`commit_changes` builds a commit from the indexer's `Changes` on top of a parent
without any work tree (an in-memory index read from the parent's tree), author
`Glossator <glossator@localhost>`, trailer `Glossator-Job: N`. `move_ref` moves
the branch with `git update-ref <ref> <new> <old>`: git's own compare-and-swap
under git's own ref lock, waiting for it as long as `core.filesRefLockTimeout`
says, exactly as a concurrent `git push` does. If a push moved the branch in
between, the update fails and nothing is overwritten. It is a local ref update, so
it fires no hook.

Before the compare-and-swap, `GitCommitBack.move` yields to pushes: while a push
to the branch is being received, or one was refused a moment ago (its writer is
pulling to push again: core.receiving), moving the branch would refuse it, so it
waits, at most `wait_s`. When a push lands meanwhile, the commit-back is left to
that push's job (`deferred`). Why: docs/push-pipeline.md, "Writers are not starved".
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from core.receiving import pushes_under_way
from hooks.gitsource import branch_tip
from hooks.job import Moved
from hooks.repositories import Repositories
from indexer.corpus.source import Changes

log = logging.getLogger(__name__)

AUTHOR = ("Glossator", "glossator@localhost")
TRAILER = "Glossator-Job"
# How long a commit-back waits for the pushes under way on its branch (core.receiving)
# before it moves the branch anyway: a round figure, many times a push's few seconds,
# short enough that pushes that never stop delay the sidecars' commit, never the rows
# (loaded before), and hold a worker that long at most.
COMMIT_BACK_WAIT_S = 30.0
RECEIVE_POLL_S = 0.05  # how often it looks: a push's hooks alone take ~0.3 s


class GitCommitBack:
    """The commit-back into the bare repositories of `store` (hooks.job.CommitBack)."""

    def __init__(self, store: Repositories, *, wait_s: float = COMMIT_BACK_WAIT_S) -> None:
        self.store = store
        self.wait_s = wait_s

    def commit(
        self,
        repo: pygit2.Repository,
        tip: str,
        changes: Changes,
        *,
        job_id: int | None,
        summary: str,
    ) -> str | None:
        """`changes` committed on `tip`, on no branch yet; None when they alter nothing."""
        return commit_changes(repo, tip, changes, message=commit_message(tip, job_id, summary))

    def move(
        self,
        repo: pygit2.Repository,
        repository: str,
        branch: str,
        tip: str,
        new: str,
        *,
        job_id: int | None,
    ) -> Moved:
        """Move the branch from `tip` to the commit-back `new`, yielding to pushes."""
        path = self.store.path(repository)
        deadline = time.monotonic() + self.wait_s
        yielded = False
        while time.monotonic() < deadline and pushes_under_way(path, branch, tip):
            yielded = True
            if branch_tip(repo, branch) != tip:
                break
            time.sleep(RECEIVE_POLL_S)
        if branch_tip(repo, branch) != tip:  # the compare-and-swap would fail: leave it
            return "deferred" if yielded else "raced"
        reason = f"glossator: commit-back (job {job_id})"
        # False: a push won. Its commits are the next job's; ours, on no branch, holds
        # the sidecars of `tip`, and its rows are loaded (hooks.job).
        return "moved" if move_ref(path, branch, new, tip, reason=reason) else "raced"


def commit_changes(
    repo: pygit2.Repository, parent: str, changes: Changes, *, message: str
) -> str | None:
    """A new commit = `parent` + `changes`; None when the changes alter nothing."""
    parent_commit = repo[parent].peel(pygit2.Commit)
    index = pygit2.Index()
    index.read_tree(parent_commit.tree)
    for path, data in changes.items():
        if data is None:
            if path in index:
                index.remove(path)
            continue
        mode = index[path].mode if path in index else FileMode.BLOB
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))
    tree = index.write_tree(repo)
    if tree == parent_commit.tree.id:
        return None
    author = pygit2.Signature(*AUTHOR)
    oid = repo.create_commit(None, author, author, message, tree, [parent_commit.id])
    return str(oid)


def commit_message(tip: str, job_id: int | None, summary: str) -> str:
    lines = [f"glossator: summaries and sidecars for {tip[:12]}", ""]
    if summary:
        lines += [summary, ""]
    if job_id is not None:
        lines.append(f"{TRAILER}: {job_id}")
    return "\n".join(lines) + "\n"


def move_ref(repo_path: Path, branch: str, new: str, old: str, *, reason: str) -> bool:
    """Compare-and-swap refs/heads/<branch> from `old` to `new`; False when it moved meanwhile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_DIR=str(repo_path))
    result = subprocess.run(
        ["git", "update-ref", "-m", reason, f"refs/heads/{branch}", new, old],
        cwd=repo_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        log.info("ref %s moved while indexing (%s)", branch, result.stderr.strip())
        return False
    return True
