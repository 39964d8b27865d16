"""Problems found in a corpus.

    GlossatorError            (core.errors) base of everything we raise on purpose
     └── CorpusError          a file of the corpus cannot be used as it is; names the file
          └── FrontmatterError  its YAML frontmatter is malformed or has a bad value

A corpus run collects `Problem`s instead of stopping at the first one, so one
bad file never keeps the others from being processed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.errors import GlossatorError


class CorpusError(GlossatorError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class FrontmatterError(CorpusError):
    pass


@dataclass(frozen=True)
class Problem:
    """`user`: the pushed files alone decide it (a corpus file or the tree's layout), so
    indexing the same commit again gives the same problem: the git worker waits for a
    push instead of retrying. False (a summarizer or a service failed, or unknown):
    retried."""

    path: str
    message: str
    severity: Literal["error", "warning"] = "error"
    user: bool = False

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"

    @classmethod
    def from_error(cls, e: CorpusError) -> Problem:
        return cls(e.path, e.message, user=True)  # a CorpusError names a file of the corpus
