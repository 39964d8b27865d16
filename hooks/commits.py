"""Git plumbing for the worker: what changed between two commits, and the commit-back.

`changed_files` diffs two trees with rename detection; the worker turns the paths
into the Markdown files whose rows must be reloaded or dropped.

`commit_changes` builds a commit from the indexer's `Changes` on top of a parent
without any work tree (an in-memory index read from the parent's tree), and
`move_ref` moves the branch with `git update-ref <ref> <new> <old>`: git's own
compare-and-swap under git's own ref lock, waiting for it as long as
`core.filesRefLockTimeout` says, exactly as a concurrent `git push` does. If a
push moved the branch in between, the update fails and nothing is overwritten.
"""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, DiffFind, FileMode

from indexer.source import Changes

log = logging.getLogger(__name__)

AUTHOR = ("Glossator", "glossator@localhost")
TRAILER = "Glossator-Job"


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
