"""A repository's HEAD after a push: the branch it names is the repository's default.

`glossator repo create` points HEAD at `main` before anything exists. A user whose git
names its first branch `master` (git before 3.0, with no init.defaultBranch) pushes
`master`, and HEAD would go on naming a branch that does not exist: clones would check
out nothing and search would read an empty `main`. So when HEAD names no existing branch
and the push created some, HEAD is pointed at one of them (core.vocabulary.head_for).

Runs in the post-receive step, in the server that took the push (its pygit2 is
loaded: no `git` process started on every push, ~10 ms each on a loaded machine).
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from core.vocabulary import head_for

HEADS = "refs/heads/"


def settle_head(git_dir: str, created: Sequence[str]) -> tuple[str, str] | None:
    """(the branch HEAD named, the one it names now): pointed at one of `created` (the
    branches the push created) if it named none that exists; None when HEAD is detached
    or unreadable."""
    try:
        repo = pygit2.Repository(git_dir)
        found = repo.references.get("HEAD")
    except (pygit2.GitError, KeyError, ValueError):
        return None
    ref = found.target if found is not None else None
    if not isinstance(ref, str) or not ref.startswith(HEADS):
        return None  # detached: the target is a commit id
    named = ref[len(HEADS) :]
    if not created or repo.references.get(ref) is not None:
        return named, named
    branch = head_for(created)
    assert branch is not None  # created is not empty
    try:
        repo.references.create("HEAD", HEADS + branch, force=True)
    except (pygit2.GitError, ValueError):
        return named, named
    return named, branch
