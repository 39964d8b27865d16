"""A repository's HEAD after a push: the branch it names is the repository's default.

`glossator repo create` points HEAD at `main` before anything exists. A user whose git
names its first branch `master` (git before 3.0, with no init.defaultBranch) pushes
`master`, and HEAD would go on naming a branch that does not exist: clones would check
out nothing and search would read an empty `main`. So when HEAD names no existing branch
and the push created some, HEAD is pointed at one of them (core.vocabulary.head_for).

Runs in the post-receive hook, which imports no pygit2 (it runs on every push): git's
own plumbing, on the repository git gave the hook.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from core.vocabulary import head_for

HEADS = "refs/heads/"


def _git(git_dir: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, timeout=30
    )


def settle_head(git_dir: str, created: Sequence[str]) -> tuple[str, str] | None:
    """(the branch HEAD named, the one it names now): pointed at one of `created` (the
    branches the push created) if it named none that exists; None when HEAD is detached
    or unreadable."""
    found = _git(git_dir, "symbolic-ref", "-q", "HEAD")
    ref = found.stdout.strip()
    if found.returncode != 0 or not ref.startswith(HEADS):
        return None
    named = ref[len(HEADS) :]
    if not created or _git(git_dir, "show-ref", "--verify", "-q", ref).returncode == 0:
        return named, named
    branch = head_for(created)
    assert branch is not None  # created is not empty
    moved = _git(git_dir, "symbolic-ref", "-m", "glossator: first push", "HEAD", HEADS + branch)
    return named, branch if moved.returncode == 0 else named
