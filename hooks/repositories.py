"""What the indexing job needs of the repository store, as a protocol.

`gitserver.repos.RepoStore` is the implementation the composition root passes in
(`glossator.server`); hooks/ does not import gitserver/: the git server sits above
the push pipeline (docs/architecture.md), and the pipeline only needs these five calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pygit2


class Repositories(Protocol):
    def exists(self, name: str) -> bool:
        """Whether repository `name` is one of the store's (False for a bad name)."""
        ...

    def path(self, name: str) -> Path:
        """Where repository `name` lives (its bare git directory)."""
        ...

    def open(self, name: str) -> pygit2.Repository:
        """The repository, or the store's not-found error naming how to create it."""
        ...

    def head(self, name: str) -> str | None:
        """The branch HEAD names (pointed at an existing branch first if it names none)."""
        ...

    def iter_branches(self) -> Iterator[tuple[str, str, str]]:
        """(repository, branch, tip) for every branch of every repository."""
        ...
