"""Reading git for the job: `GitTreeSource`, a commit's tree as an `indexer.corpus.source.FileSource`;
`branch_tip` and `has_commit`.

The job (hooks.job) and the pre-receive check read the corpus straight from git objects:
no work tree is checked out, nothing is written, and a tree is immutable, so
what the indexer reads is exactly the commit being indexed even while other
pushes land. Paths are repo-relative with '/', as everywhere in the indexer.
"""

from __future__ import annotations

from collections.abc import Iterator

import pygit2
from pygit2.enums import FileMode, ObjectType

from indexer.corpus.source import check_relative

_BLOB_MODES = (FileMode.BLOB, FileMode.BLOB_EXECUTABLE)


class GitTreeSource:
    """Read-only view of `tree` (a pygit2 Tree) of `repo`."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree) -> None:
        self.repo = repo
        self.tree = tree
        self._entries: dict[str, tuple[pygit2.Oid, int]] | None = None

    @classmethod
    def at(cls, repo: pygit2.Repository, commit: str | pygit2.Oid) -> GitTreeSource:
        """The tree of `commit` (hex id or Oid)."""
        obj = repo[commit if isinstance(commit, pygit2.Oid) else pygit2.Oid(hex=commit)]
        return cls(repo, obj.peel(pygit2.Commit).tree)

    def _walk(self) -> dict[str, tuple[pygit2.Oid, int]]:
        if self._entries is None:
            entries: dict[str, tuple[pygit2.Oid, int]] = {}
            stack: list[tuple[str, pygit2.Tree]] = [("", self.tree)]
            while stack:
                prefix, tree = stack.pop()
                for entry in tree:
                    path = prefix + (entry.name or "")
                    if entry.type == ObjectType.TREE:
                        stack.append((path + "/", self.repo[entry.id]))  # type: ignore[arg-type]
                    elif entry.filemode in _BLOB_MODES or entry.filemode == FileMode.LINK:
                        entries[path] = (entry.id, entry.filemode)
                    # submodules (commit entries) are not files of this corpus
            self._entries = entries
        return self._entries

    def paths(self) -> Iterator[str]:
        # Same order as DirectorySource: sorted, hidden folders skipped.
        for path in sorted(self._walk()):
            if any(part.startswith(".") for part in path.split("/")[:-1]):
                continue
            yield path

    def read(self, path: str) -> bytes:
        entry = self._walk().get(check_relative(path))
        if entry is None:
            raise FileNotFoundError(path)
        blob = self.repo[entry[0]]
        assert isinstance(blob, pygit2.Blob)
        return bytes(blob.data)

    def exists(self, path: str) -> bool:
        return check_relative(path) in self._walk()

    def is_symlink(self, path: str) -> bool:
        entry = self._walk().get(check_relative(path))
        return entry is not None and entry[1] == FileMode.LINK

    def blob_id(self, path: str) -> str | None:
        """The blob id (hex) of `path`, or None: lets callers skip reading unchanged files."""
        entry = self._walk().get(check_relative(path))
        return str(entry[0]) if entry else None


def branch_tip(repo: pygit2.Repository, branch: str) -> str | None:
    """The commit refs/heads/<branch> names now (hex), or None when there is no such branch."""
    ref = repo.references.get(f"refs/heads/{branch}")
    return str(ref.resolve().target) if ref is not None else None


def has_commit(repo: pygit2.Repository, commit: str) -> bool:
    """Whether `commit` (hex) is a commit of `repo`."""
    try:
        repo[commit].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return True
