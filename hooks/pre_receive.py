"""The pre-receive hook: refuse a push whose changed corpus `.md` files have broken frontmatter.

git runs this with one line `<old> <new> <ref>` per updated ref on stdin, before
any ref moves, with the pushed objects still in quarantine (GIT_QUARANTINE_PATH,
which we add to the object database as an alternate). For each updated branch,
each added or modified `.md` file under `corpus/` is parsed with the indexer's
own frontmatter rules; every problem becomes one line, which git shows the
pusher as `remote: …`, and a non-zero exit refuses the whole push (git's
all-or-nothing). Nothing else is refused: structure problems are reported by
the indexing job, deletions and branch deletions always pass.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

import pygit2

from hooks.refupdates import ZERO, parse_updates
from indexer import frontmatter
from indexer.corpus import (
    CORPUS_DIR,
    validate_meta,  # the corpus reader's key checks
)
from indexer.errors import CorpusError, Problem


def open_repository(git_dir: str | None = None) -> pygit2.Repository:
    """The repository git runs us in, with the quarantined objects of the push visible."""
    repo = pygit2.Repository(git_dir or os.environ.get("GIT_DIR", "."))
    quarantine = os.environ.get("GIT_QUARANTINE_PATH")
    if quarantine:
        repo.odb.add_disk_alternate(quarantine)
    return repo


def changed_markdown(repo: pygit2.Repository, old: str, new: str) -> Iterator[tuple[str, bytes]]:
    """(path, content) of each corpus .md file added or modified between old and new."""
    new_tree = repo[new].peel(pygit2.Commit).tree
    if old == ZERO or old not in repo:  # a new branch: every file is new
        diff = new_tree.diff_to_tree(swap=True)
    else:
        diff = repo[old].peel(pygit2.Commit).tree.diff_to_tree(new_tree)
    for delta in diff.deltas:
        path = delta.new_file.path
        if delta.status_char() == "D" or not path.endswith(".md"):
            continue
        if not path.startswith(CORPUS_DIR + "/"):
            continue
        blob = repo[delta.new_file.id]
        if isinstance(blob, pygit2.Blob):
            yield path, bytes(blob.data)


def check_file(path: str, data: bytes) -> Problem | None:
    try:
        doc = frontmatter.read(path, data)
        validate_meta(path, doc.meta)
    except CorpusError as e:
        return Problem.from_error(e)
    return None


def check_updates(
    repo: pygit2.Repository, updates: Iterable[tuple[str, str, str]]
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()  # one problem per file and blob, across branches
    for old, new, ref in updates:
        if new == ZERO or not ref.startswith("refs/heads/"):
            continue
        for path, data in changed_markdown(repo, old, new):
            problem = check_file(path, data)
            if problem is not None and (path, problem.message) not in seen:
                seen.add((path, problem.message))
                problems.append(problem)
    return problems


def main(stdin: TextIO = sys.stdin, out: TextIO = sys.stderr) -> int:
    try:
        repo = open_repository()
        problems = check_updates(repo, parse_updates(stdin))
    except Exception as e:  # never let a bug in the check block every push silently
        print(
            f"glossator: frontmatter check failed ({type(e).__name__}: {e}); push accepted",
            file=out,
        )
        return 0
    if not problems:
        return 0
    for p in problems:
        print(f"glossator: {p.path}: {p.message}", file=out)
    n = len(problems)
    print(
        f"glossator: push refused: {n} file{'s' if n > 1 else ''} with malformed frontmatter; "
        "fix and push again",
        file=out,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
