"""The pre-receive hook: refuse a push whose changed corpus `.md` files have broken frontmatter.

git runs this with one line `<old> <new> <ref>` per updated ref on stdin, before
any ref moves, with the pushed objects still in quarantine (GIT_QUARANTINE_PATH,
which we add to the object database as an alternate). For each updated branch,
each added or modified `.md` file under `corpus/` is parsed with the indexer's
own frontmatter rules; every problem becomes one line, which git shows the
pusher as `remote: …`, and a non-zero exit refuses the whole push (git's
all-or-nothing). Two tree-wide checks too: a branch whose tree has no `corpus/`
folder is refused (nothing would be indexed, and saying so beats a silent no-op),
and so are two corpus paths equal under Unicode NFC (`e\u0301` and `é` look the
same and would become two chapters with identical-looking citations). Other
structure problems are reported by the indexing job; deletions and branch
deletions always pass.
"""

from __future__ import annotations

import sys
import unicodedata
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


def open_repository(git_dir: str, quarantine: str | None = None) -> pygit2.Repository:
    """The repository git runs us in, with the quarantined objects of the push visible
    (git's GIT_DIR and GIT_QUARANTINE_PATH, read by glossator.githooks)."""
    repo = pygit2.Repository(git_dir)
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


LAYOUT = (
    "the expected layout is corpus/<work>/summary.md with one folder per chapter, "
    "corpus/<work>/<chapter>/source.md (or corpus/<work>/<part>/<chapter>/source.md); "
    "`glossator corpus import BOOK DEST` builds it from a text, Markdown or EPUB book"
)


def check_tree(repo: pygit2.Repository, new: str) -> list[Problem]:
    """The whole pushed tree: a corpus/ folder, and no two paths equal under NFC."""
    tree = repo[new].peel(pygit2.Commit).tree
    if CORPUS_DIR not in tree or not isinstance(repo[tree[CORPUS_DIR].id], pygit2.Tree):
        return [Problem(f"{CORPUS_DIR}/", f"this branch has no {CORPUS_DIR}/ folder: {LAYOUT}")]
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    top = repo[tree[CORPUS_DIR].id]
    assert isinstance(top, pygit2.Tree)
    stack: list[tuple[str, pygit2.Tree]] = [(CORPUS_DIR, top)]
    while stack:
        prefix, sub = stack.pop()
        for entry in sub:
            path = f"{prefix}/{entry.name}"
            key = unicodedata.normalize("NFC", path)
            other = seen.setdefault(key, path)
            if other != path:
                problems.append(
                    Problem(
                        path,
                        f"{path!a} and {other!a} are the same name under Unicode "
                        "normalization (NFC); rename one (keep the precomposed form)",
                    )
                )
            if entry.type_str == "tree":  # blobs are not read: only names are compared
                child = repo[entry.id]
                assert isinstance(child, pygit2.Tree)
                stack.append((path, child))
    return problems


def check_updates(
    repo: pygit2.Repository, updates: Iterable[tuple[str, str, str]]
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()  # one problem per file and blob, across branches
    for old, new, ref in updates:
        if new == ZERO or not ref.startswith("refs/heads/"):
            continue
        for found in check_tree(repo, new):
            if (found.path, found.message) not in seen:
                seen.add((found.path, found.message))
                problems.append(found)
        for path, data in changed_markdown(repo, old, new):
            problem = check_file(path, data)
            if problem is not None and (path, problem.message) not in seen:
                seen.add((path, problem.message))
                problems.append(problem)
    return problems


def main(
    git_dir: str,
    quarantine: str | None = None,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stderr,
) -> int:
    try:
        repo = open_repository(git_dir, quarantine)
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
        f"glossator: push refused: {n} problem{'s' if n > 1 else ''} (above); fix and push again",
        file=out,
    )
    return 1
