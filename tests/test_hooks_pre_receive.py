"""pre-receive reads only what a push changed, and says what the whole-tree check says.

Each pushed tree is compared with one the checks passed (the branch's old tip; for a
new branch the default branch's tip): the files that differ are parsed, and the
tree's names and modes are walked only when they differ. Real git repositories, real
checks; the whole-tree reference is the same checks with no base (every path new),
which is what a push was checked against before.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from hooks import pre_receive
from hooks.refupdates import ZERO
from tests.gitserver_support import commit_all, git, init_work, write_files

CHAPTER = "---\ntitle: Chapitre {n}\n---\n\nPremier paragraphe.\n\nSecond paragraphe.\n"
GOOD: dict[str, str | bytes] = {
    "corpus/livre/summary.md": "---\ntitle: Livre\n---\n",
    "corpus/livre/partie-1/summary.md": "---\ntitle: Partie 1\n---\n",
    "corpus/livre/partie-1/chapitre-01/source.md": CHAPTER.format(n=1),
    "corpus/livre/partie-1/chapitre-02/source.md": CHAPTER.format(n=2),
    "corpus/livre/partie-2/summary.md": "---\ntitle: Partie 2\n---\n",
    "corpus/livre/partie-2/chapitre-03/source.md": CHAPTER.format(n=3),
    "corpus/livre/partie-2/\u00e9t\u00e9/source.md": CHAPTER.format(n=4),  # NFC
}
CH2 = "corpus/livre/partie-1/chapitre-02/source.md"


def tip(work: Path) -> str:
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


class Reads:
    """What the checks read: the whole-tree walks and the files parsed (the real
    functions run; this only counts them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.trees = 0
        self.files: list[str] = []
        check_tree, check_file = pre_receive.check_tree, pre_receive.check_file

        def counted_tree(repo: pygit2.Repository, new: str) -> list[pre_receive.Problem]:
            self.trees += 1
            return check_tree(repo, new)

        def counted_file(path: str, data: bytes) -> pre_receive.Problem | None:
            self.files.append(path)
            return check_file(path, data)

        monkeypatch.setattr(pre_receive, "check_tree", counted_tree)
        monkeypatch.setattr(pre_receive, "check_file", counted_file)


def whole(repo: pygit2.Repository, new: str) -> set[tuple[str, str]]:
    """The verdict with nothing to compare with: every path new, the whole tree walked."""
    problems = pre_receive.check_tree(repo, new)
    policy, _ = pre_receive.read_policy(repo, repo[new].peel(pygit2.Commit).tree)
    for path, data in pre_receive.changed_markdown(repo, None, new, policy.prompts_dir):
        found = pre_receive.check_file(path, data)
        if found is not None:
            problems.append(found)
    return {(p.path, p.message) for p in problems}


def verdict(
    repo: pygit2.Repository, old: str, new: str, ref: str = "refs/heads/main"
) -> set[tuple[str, str]]:
    return {(p.path, p.message) for p in pre_receive.check_updates(repo, [(old, new, ref)])}


def test_an_edit_only_push_reads_the_edited_file_and_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = init_work(tmp_path / "w", GOOD)
    base = tip(work)
    write_files(work, {CH2: CHAPTER.format(n=2) + "\nTroisième paragraphe.\n"})
    edited = commit_all(work, "one paragraph more")
    repo = pygit2.Repository(str(work))
    reads = Reads(monkeypatch)
    assert verdict(repo, base, edited) == set()
    assert reads.trees == 0 and reads.files == [CH2]

    # the same edit breaking the file's frontmatter: refused as the whole check refuses it
    write_files(work, {CH2: "---\ntitle: [\n---\n\nTexte.\n"})
    broken = commit_all(work, "broken frontmatter")
    reads.files.clear()
    found = verdict(repo, edited, broken)
    assert reads.trees == 0 and reads.files == [CH2]
    assert [path for path, _ in found] == [CH2]
    assert found == whole(repo, broken)
    # emptied: the empty-source refusal, from the edit alone
    write_files(work, {CH2: "---\ntitle: Vide\n---\n\n"})
    emptied = commit_all(work, "emptied")
    found = verdict(repo, edited, emptied)
    assert found == whole(repo, emptied) and "empty" in next(iter(found))[1]


@pytest.mark.parametrize(
    "change",
    ["nfc twin", "last chapter of a part removed", "symbolic link", "folder both", "policy"],
)
def test_a_push_that_changes_names_gets_the_whole_tree_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Problems between a changed path and unchanged ones (a twin of an existing name,
    a part left with no chapter, the policy) are found as the whole check finds them."""
    work = init_work(tmp_path / "w", GOOD)
    base = tip(work)
    if change == "nfc twin":
        # the same name as the existing été, decomposed (NFD)
        write_files(work, {"corpus/livre/partie-2/e\u0301te\u0301/source.md": CHAPTER.format(n=5)})
    elif change == "last chapter of a part removed":
        git("rm", "-q", "-r", "corpus/livre/partie-1/chapitre-0*", cwd=work)
    elif change == "symbolic link":
        os.symlink("../chapitre-01/source.md", work / "corpus/livre/partie-1/lien.md")
    elif change == "folder both":
        write_files(work, {"corpus/livre/partie-2/source.md": CHAPTER.format(n=4)})
    else:
        write_files(work, {"glossator.toml": "[summaries]\nalgorithm = 3\n"})
    new = commit_all(work, change)
    repo = pygit2.Repository(str(work))
    reads = Reads(monkeypatch)
    found = verdict(repo, base, new)
    assert found, change
    assert reads.trees == 1  # names changed: the whole tree's names walked
    assert found == whole(repo, new)


def test_a_new_branch_is_compared_with_the_default_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = init_work(tmp_path / "w", GOOD)
    git("checkout", "-q", "-b", "brouillon", cwd=work)
    write_files(work, {CH2: CHAPTER.format(n=2) + "\nUne variante.\n"})
    draft = commit_all(work, "a draft")
    repo = pygit2.Repository(str(work))
    repo.set_head("refs/heads/main")  # the bare repository's HEAD: the default branch
    reads = Reads(monkeypatch)
    assert verdict(repo, ZERO, draft, "refs/heads/brouillon") == set()
    assert reads.trees == 0 and reads.files == [CH2]
    # no default branch yet (the first push): every path is new, the whole tree walked
    repo.set_head("refs/heads/nulle-part")
    reads.files.clear()
    assert verdict(repo, ZERO, draft, "refs/heads/brouillon") == set()
    assert reads.trees == 1 and len(reads.files) == len(GOOD)
