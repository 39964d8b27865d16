"""The pre-receive hook: refuse a push whose tree the indexer could not use as it is.

git runs this with one line `<old> <new> <ref>` per updated ref on stdin, before
any ref moves, with the pushed objects still in quarantine (GIT_QUARANTINE_PATH,
which we add to the object database as an alternate). Every problem that the
pushed tree alone decides is refused here, with its reason on a `remote:` line,
rather than accepted and then reported by a job that can only fail the same way
at every retry:

- the whole tree, from names and modes only (no file is read): a `corpus/`
  folder; no symbolic link and no submodule under it (git keeps a link as a link:
  the indexer does not follow it, and a submodule's files are not in this
  repository); no two paths equal under Unicode NFC (`e\u0301` and `é` look the
  same and would become two chapters with identical-looking citations); the
  layout the corpus reader accepts (`indexer.corpus.layout.path_problems`: too deep, a
  file directly in corpus/ or in a work's folder, a Markdown file outside
  corpus/, a folder both a piece and a part, a part with no chapters); and a
  readable `glossator.toml`;
- each added or modified `.md` under `corpus/`, parsed with the indexer's own
  frontmatter rules (YAML, UTF-8, size, key types; an empty source), and each
  prompt file under the policy's `prompts_dir` (not empty).

Warnings (a file the reader ignores, a missing title) pass. Every problem becomes
one line, which git shows the pusher as `remote: …`, and a non-zero exit refuses
the whole push (git's all-or-nothing). Deletions and branch deletions always pass.

Only what the push changed is read (a push should cost what git costs): each tree is
compared with a tree these checks already passed, the branch's old tip (for a new
branch, the default branch's tip, which HEAD names; none: the empty tree). The files
that differ are parsed; the whole tree's names and modes are walked only when they
differ from it (a path added, removed or renamed, a mode changed, glossator.toml
changed), since the tree-wide checks read nothing else. A push that only edits files
(the common push) reads those files and nothing more. A rule added by an upgrade
thus applies to the paths a later push changes, and the job reports the rest.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

import pygit2
from pygit2.enums import FileMode

from core.receiving import DELETING_LINE, being_deleted
from hooks.gitsource import GitTreeSource
from hooks.refupdates import ZERO, parse_updates
from indexer.corpus import frontmatter
from indexer.corpus.errors import CorpusError, Problem
from indexer.corpus.layout import (
    CORPUS_DIR,
    EMPTY_SOURCE,
    SOURCE,
    path_problems,  # the corpus reader's layout checks
    validate_meta,  # the corpus reader's key checks
)
from indexer.corpus.policy import POLICY_FILE, Policy, parse_policy


def open_repository(git_dir: str, quarantine: str | None = None) -> pygit2.Repository:
    """The repository git runs us in, with the quarantined objects of the push visible
    (git's GIT_DIR and GIT_QUARANTINE_PATH, read by glossator.githooks)."""
    repo = pygit2.Repository(git_dir)
    if quarantine:
        repo.odb.add_disk_alternate(quarantine)
    return repo


def base_tree(repo: pygit2.Repository, old: str) -> pygit2.Tree | None:
    """The tree a push to a branch is compared with, one these checks passed (module
    docstring): the branch's old tip, or for a new branch the default branch's tip;
    None when there is none (the first push: every path is new)."""
    if old != ZERO and old in repo:
        return repo[old].peel(pygit2.Commit).tree
    head = repo.references.get("HEAD")
    target = head.target if head is not None else None
    ref = repo.references.get(target) if isinstance(target, str) else None
    if ref is None:
        return None
    return repo[ref.resolve().target].peel(pygit2.Commit).tree


REGULAR = (FileMode.BLOB, FileMode.BLOB_EXECUTABLE)


def tree_diff(base: pygit2.Tree | None, tree: pygit2.Tree) -> pygit2.Diff:
    """`base` (None: the empty tree) against `tree`, computed once per pushed branch for
    both same_names and changed_markdown to read."""
    return tree.diff_to_tree(swap=True) if base is None else base.diff_to_tree(tree)


def same_names(diff: pygit2.Diff) -> bool:
    """Whether the diff (tree_diff) of a base tree against a pushed tree leaves exactly
    the base's paths and modes and policy: every difference is the content of a regular
    file other than glossator.toml. The tree-wide checks read names, modes and the
    policy only, so they say of the pushed tree what they said of the base."""
    for delta in diff.deltas:
        if delta.status_char() != "M" or delta.new_file.path == POLICY_FILE:
            return False
        if delta.old_file.mode != delta.new_file.mode or delta.new_file.mode not in REGULAR:
            return False
    return True


def changed_markdown(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    new: str,
    prompts_dir: str = "",
    diff: pygit2.Diff | None = None,
) -> Iterator[tuple[str, bytes]]:
    """(path, content) of each .md file added or modified between the `base` tree
    (None: the empty tree, every file is new) and commit `new`, under corpus/ or under
    `prompts_dir`; `diff`: their tree_diff when the caller has it already."""
    if diff is None:
        diff = tree_diff(base, repo[new].peel(pygit2.Commit).tree)
    roots = tuple(d.strip("/") + "/" for d in (CORPUS_DIR, prompts_dir) if d.strip("/"))
    for delta in diff.deltas:
        path = delta.new_file.path
        if delta.status_char() == "D" or not path.endswith(".md"):
            continue
        if not path.startswith(roots) or delta.new_file.mode == FileMode.LINK:
            continue  # a link is refused by check_tree, whatever it points to
        blob = repo[delta.new_file.id]
        if isinstance(blob, pygit2.Blob):
            yield path, bytes(blob.data)


EMPTY_PROMPT = (
    "empty prompt: write the instructions for this level, or delete the file to use the default"
)


def check_file(path: str, data: bytes) -> Problem | None:
    try:
        doc = frontmatter.read(path, data)
        validate_meta(path, doc.meta)
    except CorpusError as e:
        return Problem.from_error(e)
    if not path.startswith(CORPUS_DIR + "/"):  # a prompt file (changed_markdown)
        return None if doc.body.strip() else Problem(path, EMPTY_PROMPT, user=True)
    if path.rsplit("/", 1)[-1] == SOURCE and not doc.body.strip():
        return Problem(path, EMPTY_SOURCE, user=True)
    return None


LAYOUT = (
    "the expected layout is corpus/<work>/summary.md with one folder per chapter, "
    "corpus/<work>/<chapter>/source.md (or corpus/<work>/<part>/<chapter>/source.md); "
    "`glossator corpus import BOOK DEST` builds it from a text, Markdown or EPUB book"
)


def read_policy(repo: pygit2.Repository, tree: pygit2.Tree) -> tuple[Policy, Problem | None]:
    """The tree's corpus policy (glossator.toml), or the defaults and why it is unusable."""
    if POLICY_FILE not in tree:
        return Policy(), None
    blob = repo[tree[POLICY_FILE].id]
    try:
        if not isinstance(blob, pygit2.Blob):
            raise CorpusError(POLICY_FILE, "must be a file")
        return parse_policy(bytes(blob.data)), None
    except CorpusError as e:
        return Policy(), Problem.from_error(e)


def check_tree(repo: pygit2.Repository, new: str) -> list[Problem]:
    """The whole pushed tree, from names and modes (module docstring)."""
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
            if entry.filemode == FileMode.LINK:
                problems.append(
                    Problem(
                        path,
                        "a symbolic link: links are not followed (the server reads git's "
                        "objects, not a checkout); replace the link with the file or folder itself",
                    )
                )
            elif entry.filemode == FileMode.COMMIT:
                problems.append(
                    Problem(
                        path,
                        "a submodule: its files are in another repository, not in this one; "
                        "copy them in (`git rm --cached` it, then add the files)",
                    )
                )
            elif entry.type_str == "tree":  # blobs are not read: only names are compared
                child = repo[entry.id]
                assert isinstance(child, pygit2.Tree)
                stack.append((path, child))
    policy, unusable = read_policy(repo, tree)
    if unusable is not None:
        problems.append(unusable)
    said = {p.path for p in problems}  # one reason per path: the first found
    for found in path_problems(GitTreeSource(repo, tree), policy):
        if found.severity == "error" and found.path not in said:
            said.add(found.path)
            problems.append(found)
    return problems


def check_updates(
    repo: pygit2.Repository, updates: Iterable[tuple[str, str, str]]
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()  # one problem per file and blob, across branches
    for old, new, ref in updates:
        if new == ZERO or not ref.startswith("refs/heads/"):
            continue
        tree = repo[new].peel(pygit2.Commit).tree
        base = base_tree(repo, old)
        diff = tree_diff(base, tree)
        if base is None or not same_names(diff):
            for found in check_tree(repo, new):
                if (found.path, found.message) not in seen:
                    seen.add((found.path, found.message))
                    problems.append(found)
        policy, _ = read_policy(repo, tree)
        for path, data in changed_markdown(repo, base, new, policy.prompts_dir, diff):
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
    if being_deleted(Path(git_dir)):
        name = Path(git_dir).resolve().name.removesuffix(".git")
        print(DELETING_LINE.format(name=name), file=out)
        return 1
    try:
        repo = open_repository(git_dir, quarantine)
        problems = check_updates(repo, parse_updates(stdin))
    except Exception as e:
        # Refused: a check that crashed cannot vouch for the push, and the crash may be the
        # repository changing under it (a delete renamed it: the push would be
        # "accepted" and lost). A retry costs the pusher one command; a bug that repeats
        # is reported by the line below, which names it.
        why = " ".join(str(e).split())[:300]
        print(
            f"glossator: the push check failed ({type(e).__name__}: {why}); "
            "push refused, nothing was stored: push again, and report this line if it repeats",
            file=out,
        )
        return 1
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
