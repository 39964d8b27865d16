"""Which branch of which repository a request reads.

    scope = resolve(conn, repository=None, branch=None)   # each repository's default
    scope.branches        # {"sophismes": "main", "prince": "master"}
    scope.notes(found)    # what the answer must say: a book whose default has no rows…

A request names a branch or not. Without one (the MCP tools', the CLI's and the HTTP
API's default) each repository is read on its own default branch: the branch its bare
repository's HEAD names, as the server records it (`store.tips.default_branches`), else
the only branch it has rows on, else core.vocabulary.DEFAULT_BRANCH. So a book pushed on
`master` (git's own default before 3.0) answers a plain search beside another on `main`.
With a branch named, every repository that has rows on it is read.

A repository read on a branch without rows while it has rows on another is said in the
answer (`notes`), never silently left out; so is a search that found nothing on the
branches it read while other branches have rows.

`readable` (None: every repository) is what the caller may read (core.access): the
scope never holds another repository, so no query built from it (search, outline,
context, a node) reads its rows, and no note or error names it: to such a caller a
repository it may not read is one that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from core.vocabulary import DEFAULT_BRANCH
from search.errors import UnknownRepository
from search.rows import check_text
from store.tips import DefaultBranch, default_branches

Pairs = tuple[tuple[str, str], ...]  # (repository, branch), sorted


@dataclass(frozen=True)
class Scope:
    branches: dict[str, str]  # repository → the branch read; the repositories read
    asked: str | None  # the branch the request named; None: each repository's default
    known: dict[str, DefaultBranch]  # every repository with rows or a HEAD
    named: bool = False  # the request named its repository: other repositories are not news

    @property
    def pairs(self) -> Pairs:
        return tuple(sorted(self.branches.items()))

    def branch_of(self, repository: str) -> str:
        """The branch read for `repository` (the asked one, or its default)."""
        if repository in self.branches:
            return self.branches[repository]
        known = self.known.get(repository)
        return self.asked or (known.branch if known else DEFAULT_BRANCH)

    @property
    def label(self) -> str:
        """The branch an answer names: the one asked, the one every repository read shares,
        else "default" (each repository's own: the freshness lines name each)."""
        if self.asked is not None:
            return self.asked
        names = set(self.branches.values())
        return names.pop() if len(names) == 1 else "default"

    @property
    def described(self) -> str:
        """The branches read, for a message: "branch 'main'", or each repository's."""
        if self.asked is not None or len(set(self.branches.values())) <= 1:
            return f"branch {self.label if self.branches or self.asked else DEFAULT_BRANCH!r}"
        each = ", ".join(f"{r}@{b}" for r, b in sorted(self.branches.items()))
        return f"each repository's default branch ({each})"

    def notes(self, found: bool) -> list[str]:
        """What an answer must say about the branches it read (empty: nothing to say)."""
        out = []
        for repository, branch in sorted(self.branches.items()):
            indexed = self.known[repository].indexed
            if branch not in indexed and indexed:
                whose = "its default branch" if self.asked is None else "branch"
                out.append(
                    f"{repository} has no indexed rows on {whose} {branch!r}; it has rows on "
                    f"{_listing(indexed)}: pass branch={indexed[0]!r} to read them"
                )
        if not any(d.indexed for d in self.known.values()):
            return [self._nothing_indexed()]
        if found:
            return out
        # other branches of the repositories read; another repository is not another branch,
        # so it is named only where the request asked a branch and named no repository
        elsewhere = [
            f"{r}@{b}"
            for r, d in sorted(self.known.items())
            for b in d.indexed
            if (r in self.branches and self.branches[r] != b)
            or (r not in self.branches and self.asked is not None and not self.named)
        ]
        if elsewhere and not out:
            out.append(
                f"nothing found on {self.described}; other branches have rows: {', '.join(elsewhere[:10])}"
                " (pass branch to read one)"
            )
        pending = sorted(r for r, d in self.known.items() if not d.indexed and not self.named)
        if pending:
            out.append(_pending(pending))
        return out

    def _nothing_indexed(self) -> str:
        """Why no request reads anything: an empty server, or books pushed, not yet indexed."""
        if self.known:
            return "nothing is indexed here yet: " + _pending(sorted(self.known))
        return "nothing is indexed here: push a corpus to this server and let it index"


def _pending(repositories: list[str]) -> str:
    verb = "is" if len(repositories) == 1 else "are"
    return (
        f"{', '.join(repositories[:10])} {verb} pushed, not indexed yet "
        "(`glossator status` shows the indexing job, or what failed)"
    )


def _listing(branches: Sequence[str]) -> str:
    return ", ".join(repr(b) for b in branches)


def resolve(
    conn: psycopg.Connection,
    repository: str | None,
    branch: str | None,
    readable: frozenset[str] | None = None,
) -> Scope:
    """The scope of a request, within the repositories `readable` (None: all; module doc);
    UnknownRepository when `repository` has no rows (or none on the `branch` it names).
    Checks the names (rows.check_text) before any query."""
    check_names(repository, branch)
    return scope_of(default_branches(conn, DEFAULT_BRANCH), repository, branch, readable)


def check_names(repository: str | None, branch: str | None) -> None:
    """UnknownRepository (or BadQuery, rows.check_text) for a name no repository or
    branch can have: checked before any query."""
    if branch is not None:
        check_text("branch", branch)
        if not branch.strip():
            raise UnknownRepository("branch must be a name, not an empty string (or leave it out)")
    if repository is not None:
        check_text("repository", repository)
        if not repository.strip():
            raise UnknownRepository("repository must be a name, not an empty string")


def scope_of(
    known: dict[str, DefaultBranch],
    repository: str | None,
    branch: str | None,
    readable: frozenset[str] | None = None,
) -> Scope:
    """`resolve` from what store.tips.default_branches read (`known`), the names checked."""
    if readable is not None:
        known = {r: d for r, d in known.items() if r in readable}
    with_rows = {r: d for r, d in known.items() if d.indexed}
    if repository is None:
        if branch is None:
            return Scope({r: d.branch for r, d in with_rows.items()}, None, known)
        return Scope(
            {r: branch for r, d in with_rows.items() if branch in d.indexed}, branch, known
        )
    found = with_rows.get(repository)
    if found is None and repository in known:
        raise UnknownRepository(
            f"{repository!r} is pushed but not indexed yet: its indexing job has not loaded "
            "rows yet (`glossator status` shows its progress, or what failed)"
        )
    if found is None:
        listing = ", ".join(sorted(with_rows)[:20]) or "none yet: push a corpus and let it index"
        raise UnknownRepository(
            f"no repository named {repository!r} is indexed; indexed repositories: {listing}"
        )
    if branch is not None and branch not in found.indexed:
        raise UnknownRepository(
            f"repository {repository!r} has no indexed rows on branch {branch!r}; "
            f"indexed branches: {', '.join(found.indexed)}"
        )
    return Scope({repository: branch or found.branch}, branch, known, named=True)
